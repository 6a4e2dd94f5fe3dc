"""Helpers for the delphi API tests: wallet-signed headers and rows as the crawler writes them."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from eth_account import Account
from eth_account.messages import encode_defunct

from donations.models import Donation, DonationStatus, UserData

_tx_counter = itertools.count(1)
# A wallet signs each request anew; two requests signed in the same second would be one message (a
# replay). Default timestamps are therefore distinct seconds: the newest one not yet used in this test.
_used_seconds: set[int] = set()


def forget_used_timestamps() -> None:
    _used_seconds.clear()


def _unused_second() -> datetime:
    second = int(datetime.now(UTC).timestamp())
    while second in _used_seconds:
        second -= 1
    _used_seconds.add(second)
    return datetime.fromtimestamp(second, UTC)


def wallet_ts(moment: datetime | None = None) -> str:
    """The timestamp format the page sends: `2023-10-23 18:45:19+00:00`."""
    return (moment or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S+00:00")


def wallet_headers(
    account, path_words: str, *, ts: str | None = None, address: str | None = None, signer=None
) -> dict[str, str]:
    """Headers as the donation page builds them: personal_sign of "<words>, <address>, <ts>".

    `address` overrides the address in the message, `signer` the key that signs, to build bad requests.
    """
    ts = ts or wallet_ts(_unused_second())
    message = f"{path_words}, {(address or account.address).lower()}, {ts}"
    signed = Account.sign_message(encode_defunct(text=message), private_key=(signer or account).key)
    return {
        "HTTP_DELPHI_KEY": account.address.lower(),
        "HTTP_DELPHI_TS": ts,
        "HTTP_DELPHI_SIGNATURE": "0x" + signed.signature.hex().removeprefix("0x"),
    }


def tx_hash() -> str:
    return "0x" + format(next(_tx_counter), "064x")


def make_donation(
    address: str,
    *,
    asset: str = "eth",
    amount: str = "1.23456",
    usd_amount: str = "1981.41",
    price: str = "0.001",
    tokens: int = 1981414,
    status: str = DonationStatus.CONFIRMED,
    block_time: datetime | None = None,
    tx: str | None = None,
    log_index: int | None = None,
    eth_price: str | None = None,
    confirmed_at: datetime | None = None,
    chain: str = "eth",
) -> Donation:
    """A donation row as the crawler writes it."""
    return Donation.objects.create(
        chain=chain,
        eth_price=Decimal(eth_price) if eth_price else None,
        confirmed_at=confirmed_at,
        tx_hash=tx or tx_hash(),
        log_index=log_index,
        address=address.lower(),
        asset=asset,
        amount=Decimal(amount),
        usd_amount=Decimal(usd_amount),
        price=Decimal(price),
        tokens=tokens,
        status=status,
        block_number=1000,
        block_hash="0x" + "ab" * 32,
        block_time=block_time or datetime(2023, 10, 21, 7, 38, 36, tzinfo=UTC),
    )


def refresh_user_data(address: str) -> UserData:
    """What the crawler does after confirming: user_data = sums of the confirmed donations."""
    confirmed = Donation.objects.filter(address=address.lower(), status=DonationStatus.CONFIRMED)
    total = sum((d.usd_amount for d in confirmed), Decimal("0"))
    tokens = sum(d.tokens for d in confirmed)
    row, _ = UserData.objects.update_or_create(address=address.lower(), defaults={"total": total, "tokens": tokens})
    return row


def make_donor(address: str, *, tokens: int = 1000, usd_amount: str = "1.00") -> UserData:
    make_donation(address, tokens=tokens, usd_amount=usd_amount)
    return refresh_user_data(address)


def minutes_ago(n: int) -> datetime:
    return datetime.now(UTC) - timedelta(minutes=n)


def post_code_as_donor(api, headers):
    """POST /affiliate/code with `headers`, a donation of the signing address recorded first (a code is
    only made for an address a donation of which was seen): for tests about the signature itself."""
    address = headers.get("HTTP_DELPHI_KEY", "")
    if address and not Donation.objects.filter(address=address).exists():
        make_donation(address, status=DonationStatus.UNCONFIRMED)
    return api.post("/affiliate/code", content_type="application/json", **headers)
