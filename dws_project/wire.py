"""How values are written on the wire (API answers, webhooks, the proof page): amounts as fixed-point
strings, never floats or exponents; times in UTC with a `Z`."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal


def decimal_text(value: Decimal | int) -> str:
    """A decimal as the API writes it: fixed point, all of the column's decimals, no exponent.

    Integers go through str(): format(int, "f") would pass through a float and lose digits.
    """
    if isinstance(value, int):
        return str(value)
    return format(value, "f")


def utc_text(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return moment.isoformat().replace("+00:00", "Z")


def utc_second_text(moment: datetime | None) -> str | None:
    """A stored time to the second, UTC, with a `Z` (`2026-11-30T18:20:11Z`), as PostgreSQL's to_char renders it
    for the donations page: the donation's and the proof's shapes."""
    return None if moment is None else moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
