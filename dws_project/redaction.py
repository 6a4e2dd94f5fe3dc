"""Secret redaction: the one place that decides what of a secret may be shown.

Used at every boundary where text leaves the process: log formatting, error messages, the JSON-RPC
client and the startup checks.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from urllib.parse import quote, quote_plus, urlsplit

_MASK = "***"
_secrets: dict[str, str] = {}  # secret -> what is shown instead
_lock = threading.Lock()


def redact_url(url: str) -> str:
    """scheme://host[:port] of a URL: providers put API keys in the path, query or user info."""
    try:
        parts = urlsplit(str(url).strip())
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "<unparseable URL>"
    if not parts.scheme or not host:
        return "<unparseable URL>"
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme}://{host}" + (f":{port}" if port else "")


def signature_digest(signature: str) -> str:
    """How a rejected signature is logged: it is a bearer credential inside its time window."""
    return "sha256:" + hashlib.sha256(signature.encode("utf-8", "replace")).hexdigest()[:16]


def register_secrets(*secrets: str | None) -> None:
    """Remember strings that must never be printed; the log formatter masks them.

    A secret also travels percent-encoded (a password inside DATABASE_URL or REDIS_URL, a key in a
    query string), so those spellings are masked too.
    """
    for secret in secrets:
        if not secret:
            continue
        for spelling in {secret, quote(secret, safe=""), quote(secret), quote_plus(secret)}:
            register_replacement(spelling, _MASK)


def register_url(url: str) -> None:
    """A URL whose path, query or user info may hold a key: shown as scheme://host only."""
    register_replacement(url, redact_url(url))


def register_replacement(secret: str | None, shown: str) -> None:
    global _secrets
    if not secret or len(secret) < 4:
        return
    with _lock:
        updated = {**_secrets, secret: shown}
        # Longest first, so a whole URL is replaced before the key inside it.
        _secrets = dict(sorted(updated.items(), key=lambda item: len(item[0]), reverse=True))


def redact(text: object) -> str:
    """`text` with every registered secret masked."""
    result = str(text)
    for secret, shown in _secrets.items():
        if secret in result:
            result = result.replace(secret, shown)
    return result


class RedactingFormatter(logging.Formatter):
    """Formats as usual, then masks secrets in the whole line, traceback included."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))
