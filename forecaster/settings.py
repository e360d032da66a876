"""Settings for Forecaster Arena, read from the environment.

Every variable is optional for the embedded default (SQLite, no Redis, no network, DEBUG on).
Production sets DATABASE_URL, REDIS_URL, OPENROUTER_API_KEY, SECRET_KEY and DEBUG=0; with DEBUG=0
a missing OPENROUTER_API_KEY stops start-up unless OFFLINE_AGENTS=1 asks for offline agents.

Every variable is read in one place below, through environs; a value that is set but blank
counts as unset. A malformed value stops the process at start-up with ImproperlyConfigured,
naming each bad variable, its value and the reason (all of them at once, not the first only).
README.md has the table of every variable.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import dj_database_url
import django_stubs_ext
from celery.schedules import crontab
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured
from environs import Env, EnvValidationError
from marshmallow import ValidationError
from marshmallow.validate import Range

django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent

# The key the embedded default runs with; a system check refuses it when DEBUG is off.
DEV_SECRET_KEY = "dev-only-insecure-key-forecaster-arena-never-use-in-production"  # nosec B105


class BlankIsUnsetEnv(Env):
    """environs' reader, except that a blank value (`FOO=` in an env file) means unset."""

    def _get_value(self, env_key: str, default: Any) -> Any:
        value = super()._get_value(env_key, default)
        return default if isinstance(value, str) and not value.strip() else value


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


def absolute(path: Path) -> None:
    if not path.is_absolute():
        raise ValidationError("must be an absolute path")


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


# Not eager: every variable is read, then `seal()` reports all the malformed ones together.
# Until then a malformed value reads as None, so nothing below calls a method on one.
env = BlankIsUnsetEnv(eager=False)
env.add_parser("database", database)
env.add_parser("http_url", url_parser("http", "https"))
env.add_parser("redis_url", url_parser("redis", "rediss"))
env.add_parser("comma_list", comma_list)
env.add_parser("origins", origins)
env.add_parser("market_source", market_source)
AT_LEAST_0 = Range(min=0)
AT_LEAST_1 = Range(min=1)
POSITIVE = Range(min=0, min_inclusive=False)

DEBUG = env.bool("DEBUG", True)
SECRET_KEY = env.str("SECRET_KEY", DEV_SECRET_KEY).strip()
ALLOWED_HOSTS = env.comma_list("ALLOWED_HOSTS", "") or (
    ["127.0.0.1", "localhost", "testserver"] if DEBUG else []
)
CSRF_TRUSTED_ORIGINS = env.origins("CSRF_TRUSTED_ORIGINS", "")
_DATABASE = env.database("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}")
STATIC_ROOT = env.path("STATIC_ROOT", BASE_DIR / "staticfiles", validate=absolute)
# The frozen weekly data releases: one folder per release, never rewritten once published.
RELEASES_ROOT = env.path("RELEASES_ROOT", BASE_DIR / "var" / "releases", validate=absolute)
_SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", True)
_SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", 31_536_000, validate=AT_LEAST_0)
LOG_LEVEL = env.log_level("LOG_LEVEL", logging.INFO)

# Upstreams. Clients read these when they are built, so tests point them at replay servers.
POLYMARKET_GAMMA_URL = env.http_url("POLYMARKET_GAMMA_URL", "https://gamma-api.polymarket.com")
OPENROUTER_BASE_URL = env.http_url("OPENROUTER_BASE_URL", "https://openrouter.ai/api/v1")
OPENROUTER_API_KEY = env.str("OPENROUTER_API_KEY", "").strip()
# Sent to OpenRouter as X-Title and HTTP-Referer (its attribution headers).
OPENROUTER_APP_NAME = env.str("OPENROUTER_APP_NAME", "Forecaster Arena").strip()
OPENROUTER_REFERER = env.http_url("OPENROUTER_REFERER", "")
# Without a key, offline stand-ins answer for the LLMs. They are not the models, so outside the
# embedded default (DEBUG=1) that must be asked for on purpose: OFFLINE_AGENTS=1.
OFFLINE_AGENTS = env.bool("OFFLINE_AGENTS", DEBUG)
# Where market data comes from: "gamma" (the real API) or "demo" (the recordings shipped in
# markets/recordings, moved by a seeded random walk). The embedded default is the demo.
MARKET_SOURCE = env.market_source("MARKET_SOURCE", "demo" if DEBUG else "gamma")
MARKET_UNIVERSE_SIZE = env.int("MARKET_UNIVERSE_SIZE", 500, validate=AT_LEAST_1)
HTTP_CONNECT_TIMEOUT = env.float("HTTP_CONNECT_TIMEOUT", 5.0, validate=POSITIVE)
HTTP_READ_TIMEOUT = env.float("HTTP_READ_TIMEOUT", 30.0, validate=POSITIVE)
HTTP_MAX_RETRIES = env.int("HTTP_MAX_RETRIES", 3, validate=AT_LEAST_0)
HTTP_BACKOFF_SECONDS = env.float("HTTP_BACKOFF_SECONDS", 0.5, validate=AT_LEAST_0)
HTTP_RETRY_AFTER_CAP_SECONDS = env.float("HTTP_RETRY_AFTER_CAP_SECONDS", 60.0, validate=AT_LEAST_0)

# The decision protocol (002): malformed output is sent back this many times, then HOLD.
DECISION_PARSE_RETRIES = env.int("DECISION_PARSE_RETRIES", 1, validate=AT_LEAST_0)

# Outside agents (issue 13): the weekly decision window, in minutes after Sunday 00:00 UTC
# (default 00:05 to 01:00), in which they read their prompt and submit through the API; a
# per-token rate limit (requests per fixed window); the largest submission body accepted; how
# long an issued token lives unless staff choose otherwise.
OUTSIDE_WINDOW_OPENS_MINUTES = env.int("OUTSIDE_WINDOW_OPENS_MINUTES", 5, validate=AT_LEAST_0)
OUTSIDE_WINDOW_CLOSES_MINUTES = env.int("OUTSIDE_WINDOW_CLOSES_MINUTES", 60, validate=AT_LEAST_1)
OUTSIDE_API_RATE_LIMIT = env.int("OUTSIDE_API_RATE_LIMIT", 30, validate=AT_LEAST_1)
OUTSIDE_API_RATE_WINDOW_SECONDS = env.int(
    "OUTSIDE_API_RATE_WINDOW_SECONDS", 60, validate=AT_LEAST_1
)
OUTSIDE_API_MAX_BODY_BYTES = env.int("OUTSIDE_API_MAX_BODY_BYTES", 64 * 1024, validate=AT_LEAST_1)
OUTSIDE_TOKEN_DAYS = env.int("OUTSIDE_TOKEN_DAYS", 90, validate=AT_LEAST_1)

# Celery. With no broker (the embedded default only) tasks run in-process; tests always have one.
REDIS_URL = env.redis_url("REDIS_URL", "")

# The JSON API's rate limit: requests per client IP in a fixed window (0 turns it off),
# counted in the "api_rate" cache below.
API_RATE_LIMIT = env.int("API_RATE_LIMIT", 120, validate=AT_LEAST_0)
API_RATE_WINDOW_SECONDS = env.int("API_RATE_WINDOW_SECONDS", 60, validate=AT_LEAST_1)

# The rate limit's counts live in Redis when REDIS_URL is set, so every web process and
# server counts against one limit; else in each process's memory (the embedded default runs
# one). Short socket timeouts: an unreachable Redis lets requests through, never stalls them.
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "api_rate": (
        {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "forecaster",
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        }
        if REDIS_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "api-rate"}
    ),
}

try:
    env.seal()
except EnvValidationError as exc:
    # seal() maps each malformed variable's name to its messages.
    errors = exc.error_messages if isinstance(exc.error_messages, Mapping) else {}
    problems = "\n".join(
        f"  {name}={os.environ.get(name)!r}: {' '.join(str(m) for m in messages)}"
        for name, messages in errors.items()
    )
    raise ImproperlyConfigured(f"malformed environment variables:\n{problems}") from None

if not (
    OUTSIDE_WINDOW_OPENS_MINUTES < OUTSIDE_WINDOW_CLOSES_MINUTES <= 7 * 24 * 60
):  # a window that never opens, or runs into the next week, is a mistake
    raise ImproperlyConfigured(
        f"the outside agents' decision window must open before it closes, within the week: "
        f"OUTSIDE_WINDOW_OPENS_MINUTES={OUTSIDE_WINDOW_OPENS_MINUTES}, "
        f"OUTSIDE_WINDOW_CLOSES_MINUTES={OUTSIDE_WINDOW_CLOSES_MINUTES}"
    )

if not OPENROUTER_API_KEY and not OFFLINE_AGENTS:
    raise ImproperlyConfigured(
        "OPENROUTER_API_KEY is not set, so offline stand-in agents would answer for the models "
        "(OFFLINE_AGENTS is off, its default when DEBUG=0). Set OPENROUTER_API_KEY, or set "
        "OFFLINE_AGENTS=1 to run offline agents on purpose."
    )

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django_celery_beat",
    "ninja",
    "csp",
    "axes",
    "forecaster.apps.ForecasterConfig",
    "markets",
    "agents",
    "arena",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "forecaster.http.ApiMiddleware",  # /api/v1/ only: rate limit, error envelope, ETag, CORS
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: it turns a locked-out sign-in into its 429 response.
    "axes.middleware.AxesMiddleware",
]

# django-axes counts failed sign-ins first, so a locked-out pair never reaches the password check.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Sign-in (the admin's is the only one) locks a username from one client IP out after this many
# failures in a row, for the cool-off; a success resets the count. Per pair, not per IP alone,
# so one attacker cannot lock staff out from everywhere. The IP is REMOTE_ADDR, as for the API's
# rate limit (forecaster/http.py: what a deployment behind a reverse proxy must do about it).
AXES_FAILURE_LIMIT = 5
AXES_COOLOFF_TIME = timedelta(minutes=15)
AXES_LOCKOUT_PARAMETERS = [["ip_address", "username"]]
AXES_RESET_ON_SUCCESS = True
# Quiet start-up (no banner from every manage.py process); lockouts are still logged as warnings.
AXES_VERBOSE = False
# No admin pages for the attempts: they would be the admin's only editable rows. A lockout ends
# after the cool-off, or at once with `manage.py axes_reset_username <name>`.
AXES_ENABLE_ADMIN = False

# Content-Security-Policy (django-csp): scripts, styles, fonts and connections only from the
# site itself; chart data travels in <script type="application/json"> blocks, which are not run.
# Inline style *attributes* are allowed (a chart legend's colour, a few templates' spacing): they
# cannot run code, while <style> elements stay limited to our own files. data: images are the
# icons the API docs' stylesheet (ninja's Swagger UI) embeds.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "style-src-attr": ["'unsafe-inline'"],
        "img-src": [SELF, "data:"],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}
# SecurityMiddleware's headers, spelled out although they are Django's defaults: the policy is
# read here, not in Django's release notes.
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

ROOT_URLCONF = "forecaster.urls"
WSGI_APPLICATION = "forecaster.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "forecaster.context_processors.site",
            ],
        },
    },
]

DATABASES = {"default": _DATABASE}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

# Production hardening; `manage.py check --deploy` with DEBUG=0 reports nothing.
if not DEBUG:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = _SECURE_SSL_REDIRECT
    SECURE_HSTS_SECONDS = _SECURE_HSTS_SECONDS
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}

CELERY_BROKER_URL = REDIS_URL or None
CELERY_RESULT_BACKEND = REDIS_URL or None
CELERY_RESULT_EXPIRES = 24 * 3600
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TIMEZONE = "UTC"
CELERY_ENABLE_UTC = True
CELERY_TASK_ACKS_ON_FAILURE_OR_TIMEOUT = True
# The arena's tasks are acks_late and safe to deliver twice: one whose pool process died
# (killed, out of memory) is put back on the queue and delivered again, with the same id.
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# A worker reserves only the task it runs: a queued cohort's chain goes to an idle worker.
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Results name the worker that ran them (`worker`), for operators and the worker drills.
CELERY_RESULT_EXTENDED = True
# How long Redis keeps a message a worker took but never acknowledged before delivering it
# again (a worker lost whole: nothing rejected it). Longer than every task's hard time limit
# (31 min at most), or a task still running would be delivered a second time. Kombu looks
# for such messages every 100 s (unacked_restore_interval × unacked_restore_throttle).
CELERY_VISIBILITY_TIMEOUT_SECONDS = 3600
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_VISIBILITY_TIMEOUT_SECONDS}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_BEAT_SCHEDULE: dict[str, dict[str, object]] = {
    "start-cohort": {
        "task": "arena.start_cohort",
        "schedule": crontab(minute=0, hour=0, day_of_week="sun"),
    },
    "run-decisions": {
        "task": "arena.run_decisions",
        "schedule": crontab(minute=5, hour=0, day_of_week="sun"),
    },
    # Hourly, the decisions still owed this week are retried (RETRYABLE ones) or reclaimed
    # (a RUNNING claim older than 30 min: a dead worker); nobody owing one costs one query.
    "retry-decisions": {
        "task": "arena.retry_decisions",
        "schedule": crontab(minute=35),
        "options": {"expire_seconds": 50 * 60},
    },
    # An outside agent's decision still awaiting its submission when the window closed
    # becomes a HOLD "no submission"; nothing awaiting costs one query.
    "close-outside-decisions": {
        "task": "arena.close_outside_decisions",
        "schedule": crontab(minute="*/5"),
        "options": {"expire_seconds": 4 * 60},
    },
    "take-snapshots": {
        "task": "arena.take_snapshots",
        "schedule": crontab(minute="*/10"),
        "options": {"expire_seconds": 9 * 60},  # a late snapshot is worthless
    },
    "check-resolutions": {
        "task": "arena.check_resolutions",
        "schedule": crontab(minute="7,37"),
        "options": {"expire_seconds": 25 * 60},
    },
    "sync-markets": {
        "task": "markets.sync_markets",
        "schedule": crontab(minute="*/5"),
        # django-celery-beat keeps `expire_seconds` and drops `expires`.
        "options": {"expire_seconds": 4 * 60},
    },
}
