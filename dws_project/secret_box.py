"""Secrets kept in the database (webhook secrets), encrypted with DWS_SECRETS_KEY.

cryptography's Fernet (AES-128-CBC with an HMAC-SHA256 over it, and a version and time stamp): a
well-kept recipe, so we write none of the cryptography ourselves. DWS_SECRETS_KEY is a comma list of
Fernet keys: the first encrypts, every one decrypts (MultiFernet), which is how the key is rotated
(put the new key first, run `manage.py rotate_secrets`, then drop the old one). A database dump or a
replica alone then reveals no secret; whoever holds the key and the database still can.
"""

from __future__ import annotations

import base64
import binascii

from cryptography.fernet import Fernet, InvalidToken, MultiFernet


class SecretsKeyMissing(Exception):
    """A secret is to be stored or read, and DWS_SECRETS_KEY is not set."""

    def __init__(self) -> None:
        super().__init__("DWS_SECRETS_KEY is not set: secrets kept in the database cannot be stored or read")


class SecretUnreadable(Exception):
    """A stored secret does not decrypt with any DWS_SECRETS_KEY key (another key, or altered)."""

    def __init__(self) -> None:
        super().__init__("a stored secret does not decrypt with DWS_SECRETS_KEY")


def parse_secrets_key(value: str) -> tuple[str, ...]:
    """DWS_SECRETS_KEY: one or more Fernet keys (url-safe base64 of 32 bytes), comma separated."""
    keys = tuple(k.strip() for k in value.split(",") if k.strip())
    if not keys:
        raise ValueError("must be one or more Fernet keys")
    for position, key in enumerate(keys, start=1):
        try:
            raw = base64.urlsafe_b64decode(key.encode("ascii"))
        except (binascii.Error, ValueError, UnicodeEncodeError):
            raw = b""
        if len(raw) != 32:
            raise ValueError(
                f"key {position} is not a Fernet key (url-safe base64 of 32 bytes; make one with "
                '`python -c "from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())"`)'
            )
    return keys


def _box(keys: tuple[str, ...] | None) -> MultiFernet:
    if not keys:
        raise SecretsKeyMissing
    return MultiFernet([Fernet(k) for k in keys])


def seal(secret: str, keys: tuple[str, ...] | None) -> str:
    """The stored form of `secret` (a Fernet token, text)."""
    return _box(keys).encrypt(secret.encode()).decode("ascii")


def unseal(token: str, keys: tuple[str, ...] | None) -> str:
    try:
        return _box(keys).decrypt(token.encode("ascii")).decode()
    except (InvalidToken, UnicodeError):
        raise SecretUnreadable from None


def reseal(token: str, keys: tuple[str, ...] | None) -> str:
    """`token` encrypted again with the first key (after a rotation)."""
    try:
        return _box(keys).rotate(token.encode("ascii")).decode("ascii")
    except (InvalidToken, UnicodeError):
        raise SecretUnreadable from None
