"""The sale's pure rules: tiers, the sale cap, USD value and token count of a donation.

Each rule exists only here; the crawlers, the API and the page's server side all import it. Nothing in
this module touches the database: callers pass the confirmed token total read under the
donation_stats lock (for a write) or from the stats row (for display).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, localcontext
from fractions import Fraction

from dws_project.config_values import SaleTier

USD_QUANTUM = Decimal("0.01")
# Wide enough that amount x ETH price is exact for every value the columns can hold (20 + 20 digits).
PRECISION = 60


@dataclass(frozen=True)
class SaleState:
    """What the confirmed token total means for the sale, derived afresh on every read or write."""

    tier_index: int  # 0-based index into the tiers; the last tier once the sale is closed
    token_price: Decimal
    tier_limit: int
    sale_cap: int
    closed: bool

    @property
    def tier_number(self) -> int:
        return self.tier_index + 1


def sale_state(confirmed_tokens: int, tiers: Sequence[SaleTier]) -> SaleState:
    """The tier in force and whether the sale can still deliver tokens.

    The sale is closed once the confirmed tokens reach the last tier's limit (the cap), and open again
    when they no longer do (a raised limit, a reverted donation). The stored campaign status is never
    consulted: it only records what the previous write concluded.
    """
    cap = tiers[-1].token_limit
    for index, tier in enumerate(tiers):
        if confirmed_tokens < tier.token_limit:
            return SaleState(index, tier.token_price, tier.token_limit, cap, closed=False)
    last = len(tiers) - 1
    return SaleState(last, tiers[last].token_price, tiers[last].token_limit, cap, closed=True)


def usd_value(asset: str, amount: Decimal, eth_price: Decimal | None) -> Decimal:
    """The donation's USD value before rounding: ETH at the block's ETH price, stable coins 1:1."""
    if asset == "eth":
        if eth_price is None:
            raise ValueError("an ETH donation needs the ETH price of its block")
        with localcontext(prec=PRECISION):
            return amount * eth_price
    return amount


def round_usd(usd: Decimal) -> Decimal:
    """`usd_amount` as stored: cents, for display and the campaign totals; never an input to tokens."""
    return usd.quantize(USD_QUANTUM, rounding=ROUND_HALF_UP)


def donation_tokens(*, asset: str, amount: Decimal, eth_price: Decimal | None, token_price: Decimal) -> int:
    """The tokens a donation buys: ceiling(amount x ETH price / token price) for ETH, ceiling(amount /
    token price) for a coin (seed 000's formulas, the page's estimate).

    `amount` is the stored amount at its column scale (ETH at 8 decimals), `eth_price` the ETH price
    of the block's minute, `token_price` the tier's. The arithmetic is on exact fractions, so the one
    rounding is the final ceiling; the rounded `usd_amount` never enters it.
    """
    if token_price <= 0:
        raise ValueError("token price must be positive")
    if amount <= 0:
        raise ValueError("a donation amount must be positive")
    value = Fraction(amount)
    if asset == "eth":
        if eth_price is None or eth_price <= 0:
            raise ValueError("an ETH donation needs the (positive) ETH price of its block")
        value *= Fraction(eth_price)
    return math.ceil(value / Fraction(token_price))


def tokens_beyond_cap(confirmed_tokens: int, tiers: Sequence[SaleTier]) -> int:
    """How far the confirmed tokens overshoot the sale cap (0 when they do not).

    Whole donations are credited, so the donation that crosses the cap gets all its tokens and the
    ones confirmed after it get 0: the overshoot is at most one donation's tokens.
    """
    return max(confirmed_tokens - tiers[-1].token_limit, 0)
