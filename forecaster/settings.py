"""Settings for Forecaster Arena: Django's configuration, from the environment.

Every variable is read and checked in one place, forecaster/environment.py, which stops the
process at start-up with ImproperlyConfigured when one is malformed; this module turns what it
read into Django's settings. README.md has the table of every variable.
"""

from __future__ import annotations

import os
from datetime import timedelta

import django_stubs_ext
from celery.schedules import crontab
from csp.constants import NONE, SELF

from forecaster.environment import BASE_DIR, read_environment

django_stubs_ext.monkeypatch()

_env = read_environment(os.environ)

DEBUG = _env.debug
SECRET_KEY = _env.secret_key
ALLOWED_HOSTS = _env.allowed_hosts
CSRF_TRUSTED_ORIGINS = _env.csrf_trusted_origins
STATIC_ROOT = _env.static_root
RELEASES_ROOT = _env.releases_root
LOG_LEVEL = _env.log_level

POLYMARKET_GAMMA_URL = _env.polymarket_gamma_url
OPENROUTER_BASE_URL = _env.openrouter_base_url
OPENROUTER_API_KEY = _env.openrouter_api_key
OPENROUTER_APP_NAME = _env.openrouter_app_name
OPENROUTER_REFERER = _env.openrouter_referer
OFFLINE_AGENTS = _env.offline_agents
MARKET_SOURCE = _env.market_source
MARKET_UNIVERSE_SIZE = _env.market_universe_size
HTTP_CONNECT_TIMEOUT = _env.http_connect_timeout
HTTP_READ_TIMEOUT = _env.http_read_timeout
HTTP_MAX_RETRIES = _env.http_max_retries
HTTP_BACKOFF_SECONDS = _env.http_backoff_seconds
HTTP_RETRY_AFTER_CAP_SECONDS = _env.http_retry_after_cap_seconds
DECISION_PARSE_RETRIES = _env.decision_parse_retries
# The methodology new cohorts run (docs/methodology.md): v2 asks every answer for stated
# probabilities, on its bets and on the week's forecast panel. A cohort keeps the version it
# started with.
METHODOLOGY_VERSION = _env.methodology_version
# Questions in each week's forecast panel (methodology v2, arena/panel.py): K.
PANEL_SIZE = 20
DECISION_MAX_ROUNDS = _env.decision_max_rounds
DECISION_RETRY_DEADLINE_HOURS = _env.decision_retry_deadline_hours
# A decision task that meets a database error before it claims anything tries again after
# 1, 2, 4, 8 and 16 s (a restart or failover), then reports it; the hourly retry serves it.
DECISION_TASK_DATABASE_RETRIES = 5

OUTSIDE_WINDOW_OPENS_MINUTES = _env.outside_window_opens_minutes
OUTSIDE_WINDOW_CLOSES_MINUTES = _env.outside_window_closes_minutes
OUTSIDE_API_RATE_LIMIT = _env.outside_api_rate_limit
OUTSIDE_API_RATE_WINDOW_SECONDS = _env.outside_api_rate_window_seconds
OUTSIDE_API_MAX_BODY_BYTES = _env.outside_api_max_body_bytes
# An outside submission's claim older than this is taken to be a dead web worker's: a
# resubmission takes it over, with a new claim, so one that was only slow executes nothing
# more. Far longer than a submission takes: its body is read before it claims, and its live
# price read gives up in about half a minute (markets/sources.py, live_read_source).
OUTSIDE_SUBMISSION_CLAIM_SECONDS = 90
OUTSIDE_TOKEN_DAYS = _env.outside_token_days
# Downloads (exports and release files) a web process sends at once, each holding one of its
# threads for as long as the client reads: kept under gunicorn's --threads (8 in the Procfile,
# compose.yaml and the Dockerfile), so the pages always have threads left. An export is
# written whole to a temporary file (in TMPDIR, the system's temporary folder) first.
DOWNLOADS_PER_PROCESS = 4
# A held market still unsettled this many days past its end date is warned of on the status
# page, with the reason the last resolution check left it open (docs/resolution.md).
RESOLUTION_STALL_DAYS = _env.resolution_stall_days
# A market settled without UMA's word (docs/resolution.md, rules 6 and 7) is read again for
# this many days after: a different final verdict upstream is recorded for staff.
RESOLUTION_RECHECK_DAYS = _env.resolution_recheck_days

# Celery. With no broker (the embedded default only) tasks run in-process; tests always have one.
REDIS_URL = _env.redis_url

# The JSON API's rate limit, counted in the "api_rate" cache below.
API_RATE_LIMIT = _env.api_rate_limit
# The public pages are kept whole until the data may have changed (arena/views/page_cache.py),
# at most this long; 0 renders every request.
PAGE_CACHE_SECONDS = _env.page_cache_seconds
API_RATE_WINDOW_SECONDS = _env.api_rate_window_seconds

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
    # Whole public pages, per process, packed with zlib: the biggest (a model's page, ~300 KB)
    # keeps ~75 KB.
    "pages": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": "pages",
        "OPTIONS": {"MAX_ENTRIES": 400},
    },
}

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
    # Outside the API's middleware and WhiteNoise, so their own answers (an error envelope,
    # a static file) carry it too.
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    # Public reads under the seal (arena/seal.py): the week hidden until the outside window
    # closes. Before the API's middleware, so its cached answers are read under it too.
    "forecaster.http.SealMiddleware",
    "forecaster.http.ApiMiddleware",  # /api/v1/ only: rate limit, error envelope, ETag, CORS
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "forecaster.http.NotFoundPageMiddleware",  # the site's own 404 page, DEBUG or not
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
# The only sign-in is the staff admin's: a `next` that is not safe to follow (another
# site's address) lands on the admin, not on Django's default /accounts/profile/, a 404 here.
LOGIN_REDIRECT_URL = "/admin/"
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

DATABASES = {"default": _env.database}
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
    SECURE_SSL_REDIRECT = _env.secure_ssl_redirect
    SECURE_HSTS_SECONDS = _env.secure_hsts_seconds
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
    # And every 5 minutes in Sunday's first hour, the outside agents' window: a run whose
    # sending of tasks died (a killed worker) is queued again within minutes (QUEUE_GRACE),
    # so every cohort decides on the week's snapshot before the window closes.
    "retry-decisions-sunday": {
        "task": "arena.retry_decisions",
        # Not at :35, when the hourly one comes.
        "schedule": crontab(minute="10-30/5,40-55/5", hour=0, day_of_week="sun"),
        "options": {"expire_seconds": 4 * 60},
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
