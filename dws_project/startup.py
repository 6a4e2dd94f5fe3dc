"""What every dws process does before its main job: configuration (in settings) and the start-up checks.

The configuration is validated while Django loads the settings module; this module adds the database
check and the Redis eviction check. A process that cannot reach its database logs a redacted reason
and exits non-zero: something else (compose, systemd, Kubernetes) restarts it, and we never run
half-configured. A Redis that may evict keys under memory pressure could drop a job lock (and run a
job twice) or a provider's back-off window: the web, worker and beat processes refuse to start on one.
(Used signed messages are kept in PostgreSQL, affiliates.signing, so no Redis loss can replay one.)
"""

from __future__ import annotations

import logging
import sys

from django.conf import settings
from django.db import connection

from dws_project.redaction import redact

logger = logging.getLogger("dws.startup")

EXIT_DATABASE_UNAVAILABLE = 3
EXIT_REDIS_EVICTS = 4
# maxmemory-policy values that never evict a key without an expiry; `noeviction` is the recommended one
# (volatile-* still evicts keys that carry a TTL, such as replay keys, if Redis runs out of memory).
SAFE_EVICTION_POLICIES = ("noeviction", "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl")

# Commands that neither touch the chain nor the database; they still validate the configuration.
_NO_DATABASE_COMMANDS = frozenset(
    {"help", "version", "makemigrations", "sign_request", "collectstatic", "shell", "probe"}
)


def describe_database_error(exc: BaseException) -> str:
    """A one-line reason for a failed connection, with nothing of the connection string in it."""
    text = " ".join(str(exc).split())
    if "does not support SSL" in text:
        return "server does not support SSL, but DWS_DB_SSLMODE requires it"
    if "timeout expired" in text:
        return f"connection timed out after {settings.DB_CONNECT_TIMEOUT} s"
    password = settings.CONFIG.database.password  # what DATABASES["default"]["PASSWORD"] holds
    if password:
        text = text.replace(password, "***")
    return redact(text)[:500]


def check_database(process: str) -> None:
    """Open the database once; on failure log why (redacted) and exit the process non-zero."""
    where = settings.CONFIG.database.describe()
    try:
        connection.ensure_connection()
    except Exception as exc:  # noqa: BLE001 - any failure to connect stops the process the same way
        reason = describe_database_error(exc)
        logger.critical("%s: cannot open the database at %s: %s", process, where, reason)
        sys.stderr.flush()
        raise SystemExit(EXIT_DATABASE_UNAVAILABLE) from None
    finally:
        connection.close()
    logger.info("%s: database %s reachable", process, where)


def check_redis_eviction(process: str) -> None:
    """Exit the process when Redis's maxmemory-policy could evict our keys; warn when it cannot be read."""
    from dws_project.redaction import redact_url
    from dws_project.redis_client import get_redis

    where = redact_url(settings.CONFIG.redis_url)
    try:
        # INFO works where managed services disable CONFIG GET.
        policy = str(get_redis().info("memory").get("maxmemory_policy", ""))
    except Exception as exc:  # noqa: BLE001 - an unreachable Redis is the rate limiter's concern, not fatal here
        logger.warning("%s: cannot read Redis's maxmemory-policy at %s: %s", process, where, type(exc).__name__)
        return
    if policy not in SAFE_EVICTION_POLICIES:
        logger.critical(
            "%s: Redis at %s has maxmemory-policy %s, which may evict job locks; "
            "set maxmemory-policy to noeviction (or a volatile-* policy) on the server behind REDIS_URL",
            process,
            where,
            policy or "unknown",
        )
        sys.stderr.flush()
        raise SystemExit(EXIT_REDIS_EVICTS)
    logger.info("%s: Redis %s maxmemory-policy %s", process, where, policy)


def boot_management_command(argv: list[str]) -> None:
    """manage.py: validate the configuration (by loading settings), then check the database."""
    import django

    settings.INSTALLED_APPS  # noqa: B018 - loading settings validates the configuration
    django.setup()
    command = argv[1] if len(argv) > 1 else "help"
    if command in _NO_DATABASE_COMMANDS or command.startswith("-") or "--help" in argv or "-h" in argv:
        return
    check_database(f"manage.py {command}")
