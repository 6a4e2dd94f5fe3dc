"""What every dws process does before its main job: configuration (in settings) and one database check.

The configuration is validated while Django loads the settings module; this module adds the database
check. A process that cannot reach its database logs a redacted reason and exits non-zero: something
else (compose, systemd, Kubernetes) restarts it, and we never run half-configured.
"""

from __future__ import annotations

import logging
import sys

from django.conf import settings
from django.db import connection

from dws_project.redaction import redact

logger = logging.getLogger("dws.startup")

EXIT_DATABASE_UNAVAILABLE = 3

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
    password = settings.DATABASES["default"]["PASSWORD"]
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


def boot_management_command(argv: list[str]) -> None:
    """manage.py: validate the configuration (by loading settings), then check the database."""
    import django

    settings.INSTALLED_APPS  # noqa: B018 - loading settings validates the configuration
    django.setup()
    command = argv[1] if len(argv) > 1 else "help"
    if command in _NO_DATABASE_COMMANDS or command.startswith("-") or "--help" in argv or "-h" in argv:
        return
    check_database(f"manage.py {command}")
