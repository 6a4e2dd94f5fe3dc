"""What the crawlers hand to donations: a transfer seen on chain, its sighting in a block, and the one
identity of a donation. Pure values: no ORM, no I/O (the crawlers' pure decode room builds them).

A donation's identity is (chain, tx_hash, log_index, trace_address), unique with NULLs not distinct; within
one chain (every write and every comparison is a chain's) it is `donation_key`:

* ETH sent by a transaction to the donation address: (tx_hash, None, None);
* ETH sent in an internal call: (tx_hash, None, the frame's path, e.g. "0.1"; crawlers/decode/frames.py);
* a coin Transfer log: (tx_hash, log index, None).

Everything that asks "is this the same donation" (the detector, the block writer, the re-org mover,
`reconcile`) compares `donation_key`s, so two internal frames of one transaction never collide.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, localcontext
from typing import Protocol

from donations.rules import PRECISION, donation_tokens, round_usd, usd_value
from dws_project.config_values import SaleTier

# ETH amounts are kept at 8 decimals: widening them would not preserve the donations on record.
ETH_AMOUNT_SCALE = 8
AMOUNT_DIGITS, AMOUNT_DECIMALS = 20, 10  # donation.amount (NUMERIC(20,10)): a coin's amount is written at it
USD_DIGITS, USD_DECIMALS = 12, 2  # donation.usd_amount (NUMERIC(12,2))
# donation_stats.total and user_data.total: a sum of usd_amounts, each below 10^10, so it has room for 10^12
# of the largest rows a donation can hold (a narrower total overflowed on a sum of rows that each fit, and
# the block writing it failed on every run).
USD_TOTAL_DIGITS = 24
BIGINT_LIMIT = 2**63  # donation.tokens and donation.log_index (bigint) hold less than this

DonationKey = tuple[str, int | None, str | None]


def amount_scale(asset: str) -> int:
    """How many decimals a donation amount of `asset` is written with."""
    return ETH_AMOUNT_SCALE if asset == "eth" else AMOUNT_DECIMALS


def amount_quantum(asset: str) -> Decimal:
    return Decimal(1).scaleb(-amount_scale(asset))


class _Identified(Protocol):
    """A transfer, or a donation row: anything that carries a donation's identity (read only)."""

    @property
    def tx_hash(self) -> str: ...
    @property
    def log_index(self) -> int | None: ...
    @property
    def trace_address(self) -> str | None: ...


def donation_key(item: _Identified) -> DonationKey:
    """The identity of a donation, whether `item` is a sighted transfer or a recorded row."""
    return item.tx_hash, item.log_index, item.trace_address


@dataclass(frozen=True)
class Transfer:
    """A donation as the chain shows it, before any price or token count is applied."""

    tx_hash: str
    log_index: int | None  # None for native ETH
    donor: str  # lower case
    asset: str
    amount: Decimal
    block_number: int
    block_hash: str
    # ETH moved by an internal call: the call frame's position in its transaction's call tree (see
    # crawlers/decode/frames.py); None for a top-level ETH transaction and for coin Transfer logs.
    trace_address: str | None = None


@dataclass(frozen=True)
class Sighting:
    """A transfer seen in a block of `chain` (as DWS_CHAINS names it), with the ETH price of that block's
    minute (None for a coin). A donation's identity is (chain, `donation_key`)."""

    chain: str
    transfer: Transfer
    block_time: datetime
    eth_price: Decimal | None

    @property
    def usd_amount(self) -> Decimal:
        """Rounded to cents: what the row shows and the totals add up, never an input to tokens."""
        t = self.transfer
        return round_usd(usd_value(t.asset, t.amount, self.eth_price if t.asset == "eth" else None))


def donation_unholdable(transfer: Transfer, *, eth_price: Decimal | None, tiers: Sequence[SaleTier]) -> str | None:
    """Why the donation columns cannot hold `transfer` (its log index, its amount, its USD value at
    `eth_price`, or its tokens at the lowest tier's price), or None when they can. No amount anyone can
    send may stop the others: a transfer this names is set aside for the operator as an unexplained
    inflow of its raw amount (crawlers/record/blocks.py), everything beside it credited as usual."""
    t = transfer
    if t.log_index is not None and not 0 <= t.log_index < BIGINT_LIMIT:
        return f"its log index {t.log_index} is past donation.log_index's range"
    if t.amount >= Decimal(10) ** (AMOUNT_DIGITS - AMOUNT_DECIMALS):
        return f"its amount {t.amount:f} {t.asset} is past what donation.amount holds (NUMERIC(20,10))"
    if t.asset == "eth" and eth_price is None:
        return None  # priced later, when the block's ETH price is known
    with localcontext(prec=PRECISION):
        usd = round_usd(usd_value(t.asset, t.amount, eth_price if t.asset == "eth" else None))
    if usd >= Decimal(10) ** (USD_DIGITS - USD_DECIMALS):
        return f"its USD value {usd} is past what donation.usd_amount holds (NUMERIC(12,2))"
    lowest = min(tier.token_price for tier in tiers)
    most = donation_tokens(asset=t.asset, amount=t.amount, eth_price=eth_price, token_price=lowest) if t.amount else 0
    if most >= BIGINT_LIMIT:
        return f"its tokens ({most} at the lowest tier's price) are past what donation.tokens holds"
    return None
