"""Django settings for dws: every value comes from the environment through dws_project.config."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from celery.schedules import crontab
from kombu import Queue

from dws_project.config import Config, ConfigError, load_config
from dws_project.redaction import register_secrets, register_url

BASE_DIR = Path(__file__).resolve().parent.parent


def _load() -> Config:
    try:
        return load_config(os.environ)
    except ConfigError as exc:
        # Logging is not configured yet; write log-shaped lines and stop before anything runs.
        for variable, reason in exc.problems:
            sys.stderr.write(f"CRITICAL dws.config configuration error: {variable} {reason}\n")
        sys.stderr.write("CRITICAL dws.config refusing to start; see deploy/env.example\n")
        sys.stderr.flush()
        raise SystemExit(2) from None


CONFIG: Config = _load()
for _chain in CONFIG.chains:
    register_url(_chain.rpc_url)
    if _chain.rpc_check_url:
        register_url(_chain.rpc_check_url)
register_url(CONFIG.redis_url)
register_secrets(*CONFIG.secrets())

SECRET_KEY = CONFIG.secret_key
DEBUG = CONFIG.debug
ALLOWED_HOSTS = list(CONFIG.allowed_hosts)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "donations",
    "prices",
    "affiliates",
    "crawlers",
    "web",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # An ETag on every GET answer and a 304 to a request that already has it: the page polls a donor's data
    # every second after a donation (issue 36), and an unchanged answer then costs no body.
    "django.middleware.http.ConditionalGetMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # delphi's per-client limit, before any real work so a refused request costs little (static files,
    # served by WhiteNoise from memory, are not counted).
    "dws_project.ratelimit.RateLimitMiddleware",
    # Reads the body once and answers an oversized or broken one with a numbered 400/413.
    "dws_project.request_guard.RequestGuardMiddleware",
    # The admin answers DWS_ADMIN_ALLOWED_NETWORKS only (others: 404), and login attempts beyond their
    # budgets get a 429, both before any session, CSRF or password work.
    "dws_project.admin_access.AdminAllowListMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "dws_project.urls"
WSGI_APPLICATION = "dws_project.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# Connect timeout bounds the dial and the start-up handshake of every connection, not just the first.
DB_CONNECT_TIMEOUT = 10
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": CONFIG.database.name,
        "USER": CONFIG.database.user,
        "PASSWORD": CONFIG.database.password,
        "HOST": CONFIG.database.host,
        "PORT": CONFIG.database.port or "",
        "CONN_MAX_AGE": 60,
        "CONN_HEALTH_CHECKS": True,
        "OPTIONS": {
            "connect_timeout": DB_CONNECT_TIMEOUT,
            "sslmode": CONFIG.database.sslmode,
            "application_name": "dws",
        },
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Django's own type for the setting: inferred, the OPTIONS dict among strings would make every value a Collection.
CACHES: dict[str, dict[str, Any]] = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": CONFIG.redis_url,
        "KEY_PREFIX": "dws",
        # JSON, never pickle: a value planted in Redis must not run code in whoever reads it.
        "OPTIONS": {"serializer": "dws_project.cache.JSONSerializer"},
    }
}

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

# How long one /health report (which asks the provider) is served to every caller.
HEALTH_CACHE_SECONDS = 5
# The public proof's pages of ranges and summaries stay in the shared cache until what they show changes
# (crawlers/proof_report.py), and leave it after this long unread; 0 turns the cache off.
PROOF_CACHE_SECONDS = 3600
# /proof.json and /proof answer up to 500 ranges: a budget per client of their own (5/s, bursts of 20).
PROOF_RATE_PER_SECOND = 5.0
PROOF_RATE_BURST = 20
# /proof/donations.csv streams every confirmed donation: a download budget per client of its own, on top of
# the site-wide rate limit (one every 5 s, bursts of 5).
PROOF_CSV_RATE_PER_SECOND = 0.2
PROOF_CSV_RATE_BURST = 5

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
# The web process serves the page's own files (no CDN, no separate file server): WhiteNoise from the
# apps' static directories, so a checkout serves them without collectstatic (the image still collects).
WHITENOISE_USE_FINDERS = True
# The donation page re-reads a donor's data this often while a donation of theirs is unconfirmed, and every
# second after the donor sent one until the crawlers (the head follower: within a block) have recorded it. A
# conditional GET each (ETag: 304 while nothing changed), well inside the per-client rate limit.
WEB_PENDING_REFRESH_SECONDS = 5
WEB_SENT_REFRESH_SECONDS = 1

# delphi's bodies are a few hundred bytes and the admin's forms a few kilobytes; anything beyond this is
# refused (413, code 1010) before it is parsed.
DATA_UPLOAD_MAX_MEMORY_SIZE = 256 * 1024

SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
CSRF_TRUSTED_ORIGINS = list(CONFIG.csrf_trusted_origins)
if CONFIG.https:
    # DWS_HTTPS=on: the site is served over TLS by a proxy in front (see docs/security.md).
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = True
    # Orchestrator probes talk plain HTTP to the pod itself; a redirect would fail them.
    SECURE_REDIRECT_EXEMPT = [r"^live$", r"^ready$", r"^version$", r"^health$"]
    SECURE_HSTS_SECONDS = 365 * 24 * 3600
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    # Only a directive: nothing is preloaded until an operator submits the domain to the browsers' list.
    SECURE_HSTS_PRELOAD = True
    # The TLS proxy says the original scheme; it must overwrite whatever a client sent in this header.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

REST_FRAMEWORK = {
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["dws_project.request_guard.GuardedJSONParser"],
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "COERCE_DECIMAL_TO_STRING": True,
    "EXCEPTION_HANDLER": "dws_project.api_errors.exception_handler",
}
# delphi rate limit per client address (token bucket in Redis, shared by all web processes).
DWS_RATE_LIMIT_PER_SECOND = 50
DWS_RATE_LIMIT_BURST = 100
# Admin login attempts (each hashes a password), counted in the shared cache with django-ratelimit.
DWS_ADMIN_LOGIN_RATE_PER_CLIENT = "10/m"
DWS_ADMIN_LOGIN_RATE_PER_USERNAME = "5/m"
RATELIMIT_USE_CACHE = "default"
# Signed endpoints (a signature check each) draw on a second, smaller budget per client as well.
DWS_SIGNED_RATE_LIMIT_PER_SECOND = 10
DWS_SIGNED_RATE_LIMIT_BURST = 20
SPECTACULAR_SETTINGS = {
    "TITLE": "delphi",
    "DESCRIPTION": "The dws donation API used by the donation page.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The status enums share the field name "status"; give each its domain name in the schema.
    "ENUM_NAME_OVERRIDES": {
        "DonationStatusEnum": "donations.models.DonationStatus",
        "StakeStatusEnum": "donations.models.StakeStatus",
        "CampaignStatusEnum": "donations.models.CampaignStatus",
        "AttributionStatusEnum": "affiliates.models.AttributionStatus",
    },
}

# Celery: Redis broker, at-least-once delivery (acks late) and one task at a time per process, so a
# killed worker's task is redelivered and no worker hoards work another could run.
CELERY_BROKER_URL = CONFIG.redis_url
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
# JSON only, in and out (never pickle: a message planted in the broker must not run code in a worker).
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_SERIALIZER = "json"
CELERY_RESULT_ACCEPT_CONTENT = ["json"]
CELERY_EVENT_SERIALIZER = "json"
CELERY_TIMEZONE = "UTC"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = True
# Queues (issue 14): the minute price cycle never waits behind a crawler catching up, and a webhook run
# (issue 21: its receivers are someone else's servers) never holds a crawler's worker. A worker per
# queue: `-Q prices`, `-Q webhooks` and `-Q crawlers,celery` (the default queue carries the delphi jobs).
# Every queue is declared (issue 22), so `celery -A dws_project worker` without `-Q` consumes them all
# and a plain worker does all the work; `-Q` only narrows a dedicated worker to some of them.
PRICES_QUEUE, CRAWLERS_QUEUE, WEBHOOKS_QUEUE, DEFAULT_QUEUE = "prices", "crawlers", "webhooks", "celery"
CELERY_TASK_DEFAULT_QUEUE = DEFAULT_QUEUE
CELERY_TASK_QUEUES = [Queue(name) for name in (DEFAULT_QUEUE, CRAWLERS_QUEUE, PRICES_QUEUE, WEBHOOKS_QUEUE)]
CELERY_TASK_ROUTES = {
    "prices.*": {"queue": PRICES_QUEUE},
    "crawlers.*": {"queue": CRAWLERS_QUEUE},
    "donations.deliver_webhooks": {"queue": WEBHOOKS_QUEUE},
}
# beat renews its heartbeat on every tick (dws_project/heartbeat.py); it ticks at least this often.
CELERY_BEAT_SCHEDULER = "dws_project.heartbeat:HeartbeatScheduler"
CELERY_BEAT_MAX_LOOP_INTERVAL = 10
# Beat entries are named by cadence; `expires` keeps a backlog of stale runs from piling up.
CELERY_BEAT_SCHEDULE: dict[str, dict] = {}
# prices: the minute cycle at the top of every minute, the historical request poll every 10 s.
CELERY_BEAT_SCHEDULE.update(
    {
        "every-1m-fetch-prices": {
            "task": "prices.fetch_prices",
            "schedule": crontab(minute="*"),
            "options": {"expires": 55},
        },
        "every-10s-serve-price-requests": {
            "task": "prices.serve_price_requests",
            "schedule": 10.0,
            "options": {"expires": 10},
        },
    }
)
# crawlers, one entry per chain and job, named with the chain (DESIGN "Chains"), so each chain is crawled
# under its own locks in parallel. The latest crawler is the head follower (issue 36): a task that holds the
# chain's latest lock for a lease of minutes and crawls each block as it appears; beat (re)starts it every
# 5 s (a copy finding the lock held ends at once), so a killed worker's chains are followed again within
# seconds of its return. The latest crawler's own 12 s run (DESIGN's `every-12s-crawl-latest-<chain>`) stays
# as the safety net of a worker without room for a follower: while the follower holds the lock it skips. The
# follower also queues the finalized crawler whenever the finalized tag moves; the minute's beat is the
# safety net. The old-unconfirmed judge every 15 minutes (issue #4); reconcile the last day once a day.
for _name in CONFIG.chain_names:
    CELERY_BEAT_SCHEDULE.update(
        {
            f"every-5s-follow-head-{_name}": {
                "task": "crawlers.follow_head",
                "schedule": 5.0,
                "kwargs": {"chain": _name},
                "options": {"expires": 5},
            },
            f"every-12s-crawl-latest-{_name}": {
                "task": "crawlers.crawl_latest",
                "schedule": 12.0,
                "kwargs": {"chain": _name},
                "options": {"expires": 12},
            },
            f"every-60s-crawl-finalized-{_name}": {
                "task": "crawlers.crawl_finalized",
                "schedule": 60.0,
                "kwargs": {"chain": _name},
                "options": {"expires": 60},
            },
            f"every-15m-crawl-old-unconfirmed-{_name}": {
                "task": "crawlers.crawl_old_unconfirmed",
                "schedule": 15 * 60.0,
                "kwargs": {"chain": _name},
                "options": {"expires": 15 * 60},
            },
            f"every-1d-reconcile-{_name}": {
                "task": "crawlers.reconcile_last_day",
                "schedule": crontab(minute=17, hour=3),
                "kwargs": {"chain": _name},
                "options": {"expires": 3600},
            },
        }
    )
# delphi: finish unstakings that are due; settle affiliate claims whose donation is now recorded.
CELERY_BEAT_SCHEDULE["every-5m-complete-unstakes"] = {
    "task": "donations.tasks.complete_unstakes",
    "schedule": 300.0,
    "options": {"expires": 300},
}
# webhooks: each change queues a delivery run after its commit; this catches up retries and missed kicks.
# One attempt's deadline (connection to answer), seconds; a run lasts about twice this at most.
DWS_WEBHOOK_TIMEOUT = 10.0
CELERY_BEAT_SCHEDULE["every-30s-deliver-webhooks"] = {
    "task": "donations.deliver_webhooks",
    "schedule": 30.0,
    "options": {"expires": 30},
}
# /proof/donations.csv: the parts holding changed blocks are built again (cheap when nothing changed).
CELERY_BEAT_SCHEDULE["every-10s-refresh-proof-csv"] = {
    "task": "donations.refresh_proof_csv",
    "schedule": 10.0,
    "options": {"expires": 10},
}
# The used signed messages (replay protection, in PostgreSQL) outlive their window by minutes at most.
CELERY_BEAT_SCHEDULE["every-10m-purge-used-signatures"] = {
    "task": "affiliates.purge_used_signatures",
    "schedule": 600.0,
    "options": {"expires": 600},
}
CELERY_BEAT_SCHEDULE["every-60s-resolve-affiliate-donations"] = {
    "task": "affiliates.tasks.resolve_affiliate_donations",
    "schedule": 60.0,
    "options": {"expires": 60},
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "redacting": {
            "()": "dws_project.redaction.RedactingFormatter",
            "format": "%(asctime)s %(levelname)s %(name)s %(message)s",
        },
    },
    "handlers": {
        "stderr": {"class": "logging.StreamHandler", "formatter": "redacting"},
    },
    "root": {"handlers": ["stderr"], "level": CONFIG.log_level},
    "loggers": {
        "django.db.backends": {"level": "INFO"},
        "web3": {"level": "WARNING"},
        "urllib3": {"level": "WARNING"},
    },
}
