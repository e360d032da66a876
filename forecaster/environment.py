"""The environment Forecaster Arena runs with, read and checked by one plain function.

`read_environment(environ)` reads every variable (forecaster/settings.py passes `os.environ`)
and returns them parsed, or raises ImproperlyConfigured naming each bad variable, its value and
the reason, all of them at once. Because it is a plain function of a mapping, every case can be
tried in one process; settings are otherwise read once per process.

Every variable is optional for the embedded default (SQLite, no Redis, no network, DEBUG on).
Production sets DATABASE_URL, REDIS_URL, OPENROUTER_API_KEY, SECRET_KEY and DEBUG=0; with DEBUG=0
a missing OPENROUTER_API_KEY stops start-up unless OFFLINE_AGENTS=1 asks for offline agents.
Variables are read through environs; a value that is set but blank counts as unset.
README.md has the table of every variable.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from environs import Env, EnvValidationError
from marshmallow import ValidationError
from marshmallow.validate import Range

# The checkout: the embedded default keeps its database, static files and releases in it.
BASE_DIR = Path(__file__).resolve().parent.parent

# The key the embedded default runs with; a system check refuses it when DEBUG is off.
DEV_SECRET_KEY = "dev-only-insecure-key-forecaster-arena-never-use-in-production"  # nosec B105

AT_LEAST_0 = Range(min=0)
AT_LEAST_1 = Range(min=1)
POSITIVE = Range(min=0, min_inclusive=False)


def url_parser(*schemes: str) -> Callable[[str], str]:
    """Return a parser for a URL with one of `schemes` and a host ("" stays ""; no final /)."""

    def parse(value: str) -> str:
        value = value.strip()
        parsed = urlparse(value)
        if value and (parsed.scheme not in schemes or not parsed.netloc):
            raise ValidationError(f"not a URL with scheme {'/'.join(schemes)} and a host")
        return value.rstrip("/")

    return parse


def comma_list(value: str) -> list[str]:
    """Return the comma-separated items of `value`, stripped, blanks dropped."""
    return [item.strip() for item in value.split(",") if item.strip()]


def origins(value: str) -> list[str]:
    """Return the comma-separated http(s) origins of `value`."""
    return [url_parser("http", "https")(item) for item in comma_list(value)]


def market_source(value: str) -> str:
    """Return "gamma" or "demo", in any case."""
    value = value.strip().lower()
    if value not in {"gamma", "demo"}:
        raise ValidationError("must be gamma or demo")
    return value


def methodology_version(value: str) -> str:
    """Return "v1" or "v2" (docs/methodology.md), in any case."""
    value = value.strip().lower()
    if value not in {"v1", "v2"}:
        raise ValidationError("must be v1 or v2")
    return value


def absolute(path: Path) -> None:
    if not path.is_absolute():
        raise ValidationError("must be an absolute path")


# `-c jit=…` or `--jit=…` in libpq's start-up options (setting names ignore case).
_SETS_JIT = re.compile(r"(?:^|\s)(?:-c\s*|--)jit\s*=", re.IGNORECASE)


def database(value: str) -> dict[str, Any]:
    """Return Django's DATABASES entry for a sqlite:// or postgres:// URL."""
    try:
        config = dj_database_url.parse(value.strip(), conn_max_age=60, conn_health_checks=True)
    except (ValueError, KeyError) as exc:
        raise ValidationError("not a sqlite:// or postgres:// database URL") from exc
    engine = str(config.get("ENGINE", ""))
    if engine == "django.db.backends.postgresql":
        if not config.get("NAME"):
            raise ValidationError("a postgres:// URL needs a database name")
        options = dict(config.get("OPTIONS") or {})
        given = options.get("options", "")
        # A repeated `?options=` comes as a list: its parts are one string of start-up options.
        startup = " ".join(given) if isinstance(given, list) else str(given)
        if not _SETS_JIT.search(startup):
            # The project's statements run in milliseconds to a few hundred; PostgreSQL's JIT,
            # on by default past a cost estimate the analytics' read and the tick's snapshot
            # write reach, compiles each one anew (0.4 s of a 0.55 s read of two years of
            # bets) and never pays it back. A URL that sets `jit` itself keeps its choice.
            startup = f"{startup} -c jit=off".strip()
        if startup:
            options["options"] = startup
        config["OPTIONS"] = options
        return dict(config)
    if engine != "django.db.backends.sqlite3":
        raise ValidationError("only sqlite:// and postgres:// are supported")
    config["ENGINE"] = "forecaster.sqlite3"
    config["CONN_MAX_AGE"] = 0
    config["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        # WAL lets pages read while the demo or a command writes.
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    return dict(config)


class EnvironmentReader(Env):
    """environs' reader over a given mapping instead of os.environ, with this project's parsers,
    except that a blank value (`FOO=` in an env file) means unset."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        # Not eager: every variable is read, then `seal()` reports all the malformed ones
        # together. Until then a malformed value reads as None.
        super().__init__(eager=False)
        self.environ = environ
        self.add_parser("database", database)
        self.add_parser("http_url", url_parser("http", "https"))
        self.add_parser("redis_url", url_parser("redis", "rediss"))
        self.add_parser("comma_list", comma_list)
        self.add_parser("origins", origins)
        self.add_parser("market_source", market_source)
        self.add_parser("methodology_version", methodology_version)

    def _get_value(self, env_key: str, default: Any) -> Any:
        value = self.environ.get(env_key, default)
        return default if isinstance(value, str) and not value.strip() else value


@dataclass(frozen=True)
class Environment:
    """Every variable, parsed; each field is named after the variable it is read from (the
    database's after DATABASE_URL, which it parses into Django's DATABASES entry)."""

    debug: bool
    secret_key: str
    allowed_hosts: list[str]
    csrf_trusted_origins: list[str]
    database: dict[str, Any]
    static_root: Path
    # The frozen weekly data releases: one folder per release, never rewritten once published.
    releases_root: Path
    # Applied only with DEBUG off (forecaster/settings.py's production hardening).
    secure_ssl_redirect: bool
    secure_hsts_seconds: int
    log_level: int
    # Upstreams. Clients read these when they are built, so tests point them at replay servers.
    polymarket_gamma_url: str
    openrouter_base_url: str
    openrouter_api_key: str
    # Sent to OpenRouter as X-Title and HTTP-Referer (its attribution headers).
    openrouter_app_name: str
    openrouter_referer: str
    # Without a key, offline stand-ins answer for the LLMs. They are not the models, so outside
    # the embedded default (DEBUG=1) that must be asked for on purpose: OFFLINE_AGENTS=1.
    offline_agents: bool
    # Where market data comes from: "gamma" (the real API) or "demo" (the recordings shipped in
    # markets/recordings, moved by a seeded random walk). The embedded default is the demo.
    market_source: str
    methodology_version: str
    market_universe_size: int
    http_connect_timeout: float
    http_read_timeout: float
    http_max_retries: int
    http_backoff_seconds: float
    http_retry_after_cap_seconds: float
    # The decision protocol: malformed output is sent back this many times, then HOLD.
    decision_parse_retries: int
    # Retries of a decision of which nothing executed (an API failure, a BET/SELL whose every
    # order was rejected): at most this many rounds in all (the first included), and no round
    # after this many hours into the week (after Sunday 00:00 UTC); then it closes as a HOLD.
    decision_max_rounds: int
    decision_retry_deadline_hours: int
    # Outside agents: the weekly decision window, in minutes after Sunday 00:00 UTC (default
    # 00:05 to 01:00), in which they read their prompt and submit through the API; a per-token
    # rate limit (requests per fixed window); the largest submission body accepted; how long an
    # issued token lives unless staff choose otherwise.
    outside_window_opens_minutes: int
    outside_window_closes_minutes: int
    outside_api_rate_limit: int
    outside_api_rate_window_seconds: int
    outside_api_max_body_bytes: int
    outside_token_days: int
    # Days past its end date after which a held market still unsettled is warned of.
    resolution_stall_days: int
    resolution_recheck_days: int
    # Celery's broker and result store, and the API rate limit's shared count; "" for none.
    redis_url: str
    # The JSON API's rate limit: requests per client IP in a fixed window (0 turns it off).
    api_rate_limit: int
    api_rate_window_seconds: int
    # The longest a public page is kept whole before it is rendered again (0: never kept).
    page_cache_seconds: int


def read_environment(environ: Mapping[str, str]) -> Environment:
    """Return every variable of `environ`, parsed and checked.

    Raises ImproperlyConfigured naming every malformed variable, its value and the reason (all
    of them at once); or, when the values are each well formed, naming what contradicts.
    """
    env = EnvironmentReader(environ)
    environment = read_every_variable(env)
    try:
        env.seal()
    except EnvValidationError as exc:
        # seal() maps each malformed variable's name to its messages.
        errors = exc.error_messages if isinstance(exc.error_messages, Mapping) else {}
        problems = "\n".join(
            f"  {name}={environ.get(name)!r}: {' '.join(str(m) for m in messages)}"
            for name, messages in errors.items()
        )
        raise ImproperlyConfigured(f"malformed environment variables:\n{problems}") from None
    opens = environment.outside_window_opens_minutes
    closes = environment.outside_window_closes_minutes
    if not opens < closes <= 7 * 24 * 60:
        # A window that never opens, or runs into the next week, is a mistake.
        raise ImproperlyConfigured(
            f"the outside agents' decision window must open before it closes, within the week: "
            f"OUTSIDE_WINDOW_OPENS_MINUTES={opens}, OUTSIDE_WINDOW_CLOSES_MINUTES={closes}"
        )
    deadline = environment.decision_retry_deadline_hours
    if deadline > 7 * 24:
        # A week's decision is never retried in the next week: that week closes it.
        raise ImproperlyConfigured(
            f"the decisions' retry deadline must fall within their week (at most 168 hours "
            f"after Sunday 00:00 UTC): DECISION_RETRY_DEADLINE_HOURS={deadline}"
        )
    if not environment.openrouter_api_key and not environment.offline_agents:
        raise ImproperlyConfigured(
            "OPENROUTER_API_KEY is not set, so offline stand-in agents would answer for the "
            "models (OFFLINE_AGENTS is off, its default when DEBUG=0). Set OPENROUTER_API_KEY, "
            "or set OFFLINE_AGENTS=1 to run offline agents on purpose."
        )
    return environment


def variable_names() -> tuple[str, ...]:
    """Return the name of every variable `read_environment` reads, in the order it reads them."""
    env = EnvironmentReader({})
    read_every_variable(env)
    return tuple(env.dump())


def read_every_variable(env: EnvironmentReader) -> Environment:
    """Read every variable through `env`, unsealed: a malformed value reads as None (so nothing
    here calls a method on one), and only `env.seal()` says whether the result may be used."""
    debug = env.bool("DEBUG", True)
    return Environment(
        debug=debug,
        secret_key=env.str("SECRET_KEY", DEV_SECRET_KEY).strip(),
        allowed_hosts=env.comma_list("ALLOWED_HOSTS", "")
        or (["127.0.0.1", "localhost", "testserver"] if debug else []),
        csrf_trusted_origins=env.origins("CSRF_TRUSTED_ORIGINS", ""),
        database=env.database("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}"),
        static_root=env.path("STATIC_ROOT", BASE_DIR / "staticfiles", validate=absolute),
        releases_root=env.path("RELEASES_ROOT", BASE_DIR / "var" / "releases", validate=absolute),
        secure_ssl_redirect=env.bool("SECURE_SSL_REDIRECT", True),
        secure_hsts_seconds=env.int("SECURE_HSTS_SECONDS", 31_536_000, validate=AT_LEAST_0),
        log_level=env.log_level("LOG_LEVEL", logging.INFO),
        polymarket_gamma_url=env.http_url(
            "POLYMARKET_GAMMA_URL", "https://gamma-api.polymarket.com"
        ),
        openrouter_base_url=env.http_url("OPENROUTER_BASE_URL", "https://openrouter.ai/api/v1"),
        openrouter_api_key=env.str("OPENROUTER_API_KEY", "").strip(),
        openrouter_app_name=env.str("OPENROUTER_APP_NAME", "Forecaster Arena").strip(),
        openrouter_referer=env.http_url("OPENROUTER_REFERER", ""),
        offline_agents=env.bool("OFFLINE_AGENTS", debug),
        market_source=env.market_source("MARKET_SOURCE", "demo" if debug else "gamma"),
        methodology_version=env.methodology_version("METHODOLOGY_VERSION", "v2"),
        market_universe_size=env.int("MARKET_UNIVERSE_SIZE", 500, validate=AT_LEAST_1),
        http_connect_timeout=env.float("HTTP_CONNECT_TIMEOUT", 5.0, validate=POSITIVE),
        http_read_timeout=env.float("HTTP_READ_TIMEOUT", 30.0, validate=POSITIVE),
        http_max_retries=env.int("HTTP_MAX_RETRIES", 3, validate=AT_LEAST_0),
        http_backoff_seconds=env.float("HTTP_BACKOFF_SECONDS", 0.5, validate=AT_LEAST_0),
        http_retry_after_cap_seconds=env.float(
            "HTTP_RETRY_AFTER_CAP_SECONDS", 60.0, validate=AT_LEAST_0
        ),
        decision_parse_retries=env.int("DECISION_PARSE_RETRIES", 1, validate=AT_LEAST_0),
        decision_max_rounds=env.int("DECISION_MAX_ROUNDS", 3, validate=AT_LEAST_1),
        decision_retry_deadline_hours=env.int(
            "DECISION_RETRY_DEADLINE_HOURS", 24, validate=AT_LEAST_1
        ),
        outside_window_opens_minutes=env.int(
            "OUTSIDE_WINDOW_OPENS_MINUTES", 5, validate=AT_LEAST_0
        ),
        outside_window_closes_minutes=env.int(
            "OUTSIDE_WINDOW_CLOSES_MINUTES", 60, validate=AT_LEAST_1
        ),
        outside_api_rate_limit=env.int("OUTSIDE_API_RATE_LIMIT", 30, validate=AT_LEAST_1),
        outside_api_rate_window_seconds=env.int(
            "OUTSIDE_API_RATE_WINDOW_SECONDS", 60, validate=AT_LEAST_1
        ),
        outside_api_max_body_bytes=env.int(
            "OUTSIDE_API_MAX_BODY_BYTES", 64 * 1024, validate=AT_LEAST_1
        ),
        outside_token_days=env.int("OUTSIDE_TOKEN_DAYS", 90, validate=AT_LEAST_1),
        resolution_stall_days=env.int("RESOLUTION_STALL_DAYS", 14, validate=AT_LEAST_1),
        resolution_recheck_days=env.int("RESOLUTION_RECHECK_DAYS", 14, validate=AT_LEAST_0),
        redis_url=env.redis_url("REDIS_URL", ""),
        api_rate_limit=env.int("API_RATE_LIMIT", 120, validate=AT_LEAST_0),
        # With DEBUG on a template edited is shown at the next request, not ten minutes on.
        page_cache_seconds=env.int("PAGE_CACHE_SECONDS", 0 if debug else 600, validate=AT_LEAST_0),
        api_rate_window_seconds=env.int("API_RATE_WINDOW_SECONDS", 60, validate=AT_LEAST_1),
    )
