"""Parsers for the operations variables (metrics, heartbeats, the freeze on drift); `config` reads them."""

from __future__ import annotations

import ipaddress

DEFAULT_HEARTBEAT_DIR = "/tmp/dws-heartbeat"  # noqa: S108 - per container; a shared host sets its own


def parse_on_off(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered == "on":
        return True
    if lowered == "off":
        return False
    raise ValueError("must be on or off")


def parse_port(value: str) -> int:
    text = value.strip()
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise ValueError("must be a TCP port from 1 to 65535")
    return int(text)


def parse_listen_host(value: str) -> str:
    text = value.strip()
    try:
        ipaddress.ip_address(text)
    except ValueError:
        raise ValueError("must be an IP address to listen on, e.g. 127.0.0.1 or 0.0.0.0") from None
    return text


def parse_absolute_path(value: str) -> str:
    text = value.strip()
    if not text.startswith("/"):
        raise ValueError("must be an absolute path")
    return text


MIN_TOKEN_LENGTH = 24


def parse_token(value: str) -> str:
    text = value.strip()
    if len(text) < MIN_TOKEN_LENGTH or any(c.isspace() for c in text):
        raise ValueError(f"must be at least {MIN_TOKEN_LENGTH} characters without spaces")
    return text
