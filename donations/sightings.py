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

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Protocol

from donations.rules import round_usd, usd_value

# ETH amounts are kept at 8 decimals: widening them would not preserve the donations on record.
ETH_AMOUNT_SCALE = 8
AMOUNT_DECIMALS = 10  # donation.amount's scale (NUMERIC(20,10)): a coin's amount is written at it

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
