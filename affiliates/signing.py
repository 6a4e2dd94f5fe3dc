"""Signed delphi requests: the message a wallet signs and its verification.

A signed request carries three headers: `delphi-key` (the address), `delphi-ts` (UTC, exactly
`YYYY-MM-DD HH:MM:SS+00:00`) and `delphi-signature` (an EIP-191 personal_sign, 0x + 130 hex digits)
over the message

    "<path words>, <lower-case address>, <ts>"

The path words are the request path's segments in order, lower case, joined by single spaces
(`/affiliate/code` -> `affiliate code`, `/user/unstake` -> `user unstake`). The address in the message
binds a signature to one account, the words to one endpoint, the timestamp to a short window.
The body is not part of the message.

A contract wallet (a Safe, an ERC-4337 account) signs by contract: when the signature does not recover
to `delphi-key`, the contract at that address decides (ERC-1271) on every chain where it has code, or,
for an ERC-6492 wrapper, the wallet its factory would deploy there (affiliates/contract_signatures.py).
The signature may then be any length up to MAX_SIGNATURE_BYTES.

A message is accepted once: after a signature checks out, the message's SHA-256 is inserted into the
`used_signature` table (PostgreSQL: a Redis flush or restart must not reopen the window), kept for the
whole window, plus the 5 s future allowance, plus a clock-skew margin (REPLAY_SKEW_MARGIN), counted
from the moment it was accepted. Another web node whose clock lags still finds it there: keeping it
only for the rest of the window on the accepting node's clock let a lagging node accept it again.
Keying on the message rather than the signature bytes also stops the malleable twin of a signature
(same message, other `s`) from being replayed. Expired rows are deleted by a periodic job
(`used_signatures_purge`).
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone
from eth_account import Account
from eth_account.messages import encode_defunct

from affiliates.contract_signatures import ContractRefused, ContractUnreachable, check_contract_signature
from affiliates.models import UsedSignature
from dws_project.redaction import signature_digest

logger = logging.getLogger("dws.signing")

KEY_HEADER = "delphi-key"
TS_HEADER = "delphi-ts"
SIGNATURE_HEADER = "delphi-signature"
TS_FORMAT = "%Y-%m-%d %H:%M:%S+00:00"
MAX_FUTURE = timedelta(seconds=5)
# How far apart the web nodes' clocks may be while a used message is still refused everywhere.
REPLAY_SKEW_MARGIN = timedelta(seconds=60)

_TS_RE = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\+00:00$")
_ADDRESS_RE = re.compile(r"^0x[0-9a-fA-F]{40}$")
MAX_SIGNATURE_BYTES = 3000  # a Safe's several owner signatures, or an ERC-6492 wrapper; headers stay < 8 KB
_SIGNATURE_RE = re.compile(rf"^0x(?:[0-9a-fA-F]{{2}}){{65,{MAX_SIGNATURE_BYTES}}}$")


class SignatureRejected(Exception):
    """Why a signed request was refused; for the server log only (the client sees one generic 401)."""


class SignatureUnverifiable(Exception):
    """A contract wallet's signature could not be checked (the provider did not answer): refused, with
    its own error so the caller knows to try again; never taken as an acceptance."""


@dataclass(frozen=True)
class SignedCaller:
    """The authenticated caller of a signed request: the lower-case address that signed it."""

    address: str

    @property
    def is_authenticated(self) -> bool:
        return True


def path_words(path: str) -> str:
    return " ".join(segment.lower() for segment in path.split("/") if segment)


def signed_message(path: str, address: str, ts: str) -> str:
    return f"{path_words(path)}, {address.lower()}, {ts}"


def format_ts(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime(TS_FORMAT)


def sign(path: str, private_key: str, *, now: datetime | None = None) -> dict[str, str]:
    """The three headers for a request to `path`, signed the way the donation page's wallet signs."""
    account = Account.from_key(private_key)
    address = account.address.lower()
    ts = format_ts(now or datetime.now(UTC))
    signed = Account.sign_message(encode_defunct(text=signed_message(path, address, ts)), private_key=private_key)
    return {KEY_HEADER: address, TS_HEADER: ts, SIGNATURE_HEADER: "0x" + signed.signature.hex().removeprefix("0x")}


def verify(
    *,
    path: str,
    key: str,
    ts: str,
    signature: str,
    max_age: int,
    now: datetime | None = None,
    rpc_urls: Sequence[str] = (),
) -> str:
    """The caller's lower-case address, or SignatureRejected / SignatureUnverifiable. Marks the message
    as used on success only. `rpc_urls`: every chain's provider, where a contract wallet's signature is
    checked; without them, only key signatures are accepted."""
    now = now or datetime.now(UTC)
    if not _ADDRESS_RE.match(key) or not _TS_RE.match(ts) or not _SIGNATURE_RE.match(signature):
        raise SignatureRejected("malformed headers")
    try:
        moment = datetime.strptime(ts, TS_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        raise SignatureRejected("unparseable timestamp") from None
    if moment < now - timedelta(seconds=max_age):
        raise SignatureRejected("timestamp too old")
    if moment > now + MAX_FUTURE:
        raise SignatureRejected("timestamp in the future")
    address = key.lower()
    message = signed_message(path, address, ts)
    if _recovered(message, signature) != address:
        _check_by_contract(rpc_urls, address, message, signature)
    _use_once(message, max_age)
    return address


def replay_key_seconds(max_age: int) -> int:
    """How long a used message is remembered: longer than any node's clock could still accept it."""
    return int((timedelta(seconds=max_age) + MAX_FUTURE + REPLAY_SKEW_MARGIN).total_seconds())


def _use_once(message: str, max_age: int) -> None:
    """Take the message for this request, or SignatureRejected when it was taken before."""
    expires_at = timezone.now() + timedelta(seconds=replay_key_seconds(max_age))
    digest = hashlib.sha256(message.encode()).hexdigest()
    try:
        with transaction.atomic():  # a savepoint: the caller's transaction survives the refusal
            UsedSignature.objects.create(message_hash=digest, expires_at=expires_at)
    except IntegrityError:
        raise SignatureRejected("message already used") from None


def used_signatures_purge(*, now: datetime | None = None) -> int:
    """Delete the used messages no clock could accept any more; returns how many."""
    deleted, _ = UsedSignature.objects.filter(expires_at__lt=now or timezone.now()).delete()
    return deleted


def _recovered(message: str, signature: str) -> str | None:
    if len(signature) != 132:
        return None
    try:
        return Account.recover_message(encode_defunct(text=message), signature=signature).lower()
    except Exception:  # noqa: BLE001 - any unrecoverable signature is simply not a key's
        return None


def _check_by_contract(rpc_urls: Sequence[str], address: str, message: str, signature: str) -> None:
    if not rpc_urls:
        raise SignatureRejected("signer is not delphi-key")
    try:
        check_contract_signature(
            rpc_urls=rpc_urls, address=address, message=message, signature=bytes.fromhex(signature[2:])
        )
    except ContractRefused as exc:
        raise SignatureRejected(str(exc)) from None
    except ContractUnreachable as exc:
        raise SignatureUnverifiable(str(exc)) from None


def log_rejection(reason: SignatureRejected | SignatureUnverifiable, signature: str, path: str) -> None:
    logger.warning("signed request to %s rejected (%s), signature %s", path, reason, signature_digest(signature))
