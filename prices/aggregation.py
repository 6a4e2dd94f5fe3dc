"""How one minute's ETH price is made from the venues' quotes: a pure function, no I/O.

The six steps (seed 000, "price aggregation"):
1. venues that failed, raised or quoted a non-positive price drop out;
2. at least QUORUM (4) quotes must remain, so the two USDT-quoted venues can never be the majority;
3. the quotes are sorted by price, then venue name, and their median taken: every quote is compared
   with that one reference, so the outcome does not depend on the order the venues answered in;
4. a quote more than MAX_DEVIATION (10%) from the median is dropped on its own, with its deviation;
5. at least MIN_SURVIVORS (3) must survive, otherwise nothing is written;
6. the price is the mean of the survivors.

Historical minutes (klines) use the same steps scaled to the venues that answered: a quorum of one and a
majority of the usable quotes surviving (`min_survivors=None`). A minute made from one venue alone is
recorded flagged and values no donation until a second venue agrees (prices/lookup.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

QUORUM = 4
MIN_SURVIVORS = 3
MAX_DEVIATION = Decimal("0.10")


@dataclass(frozen=True)
class VenueQuote:
    """What one venue gave this cycle: a price, or the reason it gave none."""

    venue: str
    price: Decimal | None
    failure: str | None = None


@dataclass(frozen=True)
class UsedQuote:
    venue: str
    price: Decimal


@dataclass(frozen=True)
class DroppedQuote:
    venue: str
    price: Decimal | None
    reason: str


@dataclass(frozen=True)
class Aggregate:
    """The outcome: `price` is None when nothing may be written, and `reason` then says why."""

    price: Decimal | None
    median: Decimal | None
    used: tuple[UsedQuote, ...]
    dropped: tuple[DroppedQuote, ...]
    reason: str | None


def median_of(sorted_prices: list[Decimal]) -> Decimal:
    middle = len(sorted_prices) // 2
    if len(sorted_prices) % 2:
        return sorted_prices[middle]
    return (sorted_prices[middle - 1] + sorted_prices[middle]) / 2


def aggregate(
    quotes: Iterable[VenueQuote],
    *,
    quorum: int = QUORUM,
    min_survivors: int | None = MIN_SURVIVORS,
    max_deviation: Decimal = MAX_DEVIATION,
) -> Aggregate:
    """Combine one cycle's quotes into a price, or into the reason there is none.

    `min_survivors=None`: more than half of the usable quotes must survive the deviation check (one of
    one, two of two, two of three, three of four).
    """
    dropped: list[DroppedQuote] = []
    valid: list[UsedQuote] = []
    for quote in quotes:
        if quote.price is None:
            dropped.append(DroppedQuote(quote.venue, None, quote.failure or "no quote"))
        elif not quote.price.is_finite() or quote.price <= 0:
            dropped.append(DroppedQuote(quote.venue, quote.price, f"non-positive price {quote.price}"))
        else:
            valid.append(UsedQuote(quote.venue, quote.price))
    valid.sort(key=lambda q: (q.price, q.venue))  # deterministic, whatever order the venues answered in

    def outcome(price: Decimal | None, median: Decimal | None, used: list[UsedQuote], reason: str | None) -> Aggregate:
        ordered_drops = tuple(sorted(dropped, key=lambda d: d.venue))
        return Aggregate(price, median, tuple(used), ordered_drops, reason)

    if len(valid) < quorum:
        dropped.extend(DroppedQuote(q.venue, q.price, "cycle below quorum") for q in valid)
        return outcome(None, None, [], f"quorum not met: {len(valid)} usable quotes, {quorum} needed")

    needed = len(valid) // 2 + 1 if min_survivors is None else min_survivors
    median = median_of([q.price for q in valid])
    survivors: list[UsedQuote] = []
    for usable in valid:
        deviation = abs(usable.price - median) / median
        if deviation > max_deviation:
            dropped.append(
                DroppedQuote(usable.venue, usable.price, f"deviates {deviation * 100:.2f}% from the median {median}")
            )
        else:
            survivors.append(usable)

    if len(survivors) < needed:
        dropped.extend(DroppedQuote(q.venue, q.price, "too few quotes survived the deviation check") for q in survivors)
        return outcome(
            None, median, [], f"only {len(survivors)} quotes within {max_deviation * 100:.0f}% of the median"
        )

    total = sum((q.price for q in survivors), Decimal(0))  # summed in sorted order: order-independent
    return outcome(total / len(survivors), median, survivors, None)
