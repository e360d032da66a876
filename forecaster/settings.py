"""Settings for Forecaster Arena, read from the environment.

Every variable is optional for the embedded default (SQLite, no Redis, no network, DEBUG on).
Production sets DATABASE_URL, REDIS_URL, OPENROUTER_API_KEY, SECRET_KEY and DEBUG=0; with DEBUG=0
a missing OPENROUTER_API_KEY stops start-up unless OFFLINE_AGENTS=1 asks for offline agents.
A malformed value stops the process at start-up with the variable's name and the reason.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlparse

import dj_database_url
import django_stubs_ext
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured

django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent

# The key the embedded default runs with; a system check refuses it when DEBUG is off.
DEV_SECRET_KEY = "dev-only-insecure-key-forecaster-arena-never-use-in-production"


def env_bool(name: str, default: bool) -> bool:
    """Return the boolean in `name`; accept 1/0, true/false, yes/no, on/off."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use 1/0, true/false)")


def env_url(name: str, default: str, *, schemes: tuple[str, ...]) -> str:
    """Return the URL in `name`, which must have one of `schemes` and a host."""
    raw = os.environ.get(name, "").strip() or default
    if not raw:
        return ""
    parsed = urlparse(raw)
    if parsed.scheme not in schemes or not parsed.netloc:
        raise ImproperlyConfigured(
            f"{name}={raw!r} is not a URL with scheme {'/'.join(schemes)} and a host"
        )
    return raw.rstrip("/")


def env_int(name: str, default: int, *, minimum: int = 0) -> int:
    """Return the integer in `name`, at least `minimum`."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from exc
    if value < minimum:
        raise ImproperlyConfigured(f"{name}={value} is below its minimum {minimum}")
    return value


def env_database(name: str, default: str) -> dict[str, object]:
    """Return Django's DATABASES entry for the URL in `name`."""
    raw = os.environ.get(name, "").strip() or default
    try:
        config = dj_database_url.parse(raw, conn_max_age=60, conn_health_checks=True)
    except (ValueError, KeyError) as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a database URL: {exc}") from exc
    engine = str(config.get("ENGINE", ""))
    if engine not in {"django.db.backends.sqlite3", "django.db.backends.postgresql"}:
        raise ImproperlyConfigured(f"{name}={raw!r}: only sqlite:// and postgres:// are supported")
    if engine == "django.db.backends.sqlite3":
        config["ENGINE"] = "forecaster.sqlite3"
        config["CONN_MAX_AGE"] = 0
        config["OPTIONS"] = {
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            # WAL lets pages read while the demo or a command writes.
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    return dict(config)


DEBUG = env_bool("DEBUG", True)
SECRET_KEY = os.environ.get("SECRET_KEY", "").strip() or DEV_SECRET_KEY
ALLOWED_HOSTS = [
    h.strip() for h in os.environ.get("ALLOWED_HOSTS", "").split(",") if h.strip()
] or (["127.0.0.1", "localhost", "testserver"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = [
    o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()
]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django_celery_beat",
    "forecaster.apps.ForecasterConfig",
    "markets",
    "agents",
    "arena",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

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

DATABASES = {"default": env_database("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
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
STATIC_ROOT = BASE_DIR / "staticfiles"
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
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    X_FRAME_OPTIONS = "DENY"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}

# Upstreams. Clients read these when they are built, so tests point them at replay servers.
POLYMARKET_GAMMA_URL = env_url(
    "POLYMARKET_GAMMA_URL", "https://gamma-api.polymarket.com", schemes=("http", "https")
)
OPENROUTER_BASE_URL = env_url(
    "OPENROUTER_BASE_URL", "https://openrouter.ai/api/v1", schemes=("http", "https")
)
OPENROUTER_API_KEY = os.environ.get("OPENROUTER_API_KEY", "").strip()
# Without a key, offline stand-ins answer for the LLMs. They are not the models, so outside the
# embedded default (DEBUG=1) that must be asked for on purpose: OFFLINE_AGENTS=1.
OFFLINE_AGENTS = env_bool("OFFLINE_AGENTS", DEBUG)
if not OPENROUTER_API_KEY and not OFFLINE_AGENTS:
    raise ImproperlyConfigured(
        "OPENROUTER_API_KEY is not set, so offline stand-in agents would answer for the models "
        "(OFFLINE_AGENTS is off, its default when DEBUG=0). Set OPENROUTER_API_KEY, or set "
        "OFFLINE_AGENTS=1 to run offline agents on purpose."
    )

# Where market data comes from: "gamma" (the real API) or "demo" (the recordings shipped in
# markets/recordings, moved by a seeded random walk). The embedded default is the demo.
MARKET_SOURCE = os.environ.get("MARKET_SOURCE", "").strip().lower() or (
    "demo" if DEBUG else "gamma"
)
if MARKET_SOURCE not in {"gamma", "demo"}:
    raise ImproperlyConfigured(f"MARKET_SOURCE={MARKET_SOURCE!r} must be 'gamma' or 'demo'")
MARKET_UNIVERSE_SIZE = env_int("MARKET_UNIVERSE_SIZE", 500, minimum=1)
HTTP_CONNECT_TIMEOUT = float(env_int("HTTP_CONNECT_TIMEOUT", 5, minimum=1))
HTTP_READ_TIMEOUT = float(env_int("HTTP_READ_TIMEOUT", 30, minimum=1))
HTTP_MAX_RETRIES = env_int("HTTP_MAX_RETRIES", 3, minimum=0)
HTTP_BACKOFF_SECONDS = float(os.environ.get("HTTP_BACKOFF_SECONDS", "0.5") or 0.5)
HTTP_RETRY_AFTER_CAP_SECONDS = float(env_int("HTTP_RETRY_AFTER_CAP_SECONDS", 60, minimum=0))

# The decision protocol (002): malformed output is sent back this many times, then HOLD.
DECISION_PARSE_RETRIES = env_int("DECISION_PARSE_RETRIES", 1, minimum=0)

# Celery. With no broker (the embedded default only) tasks run in-process; tests always have one.
REDIS_URL = env_url("REDIS_URL", "", schemes=("redis", "rediss"))
CELERY_BROKER_URL = REDIS_URL or None
CELERY_RESULT_BACKEND = REDIS_URL or None
CELERY_RESULT_EXPIRES = 24 * 3600
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TIMEZONE = "UTC"
CELERY_ENABLE_UTC = True
CELERY_TASK_ACKS_ON_FAILURE_OR_TIMEOUT = True
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
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
