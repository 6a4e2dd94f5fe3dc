"""Whole numbers read from text we do not control: a header of another server (a provider's or a price
venue's Retry-After), a query parameter, an environment variable."""

from __future__ import annotations


def whole_number(text: str | None, *, max_digits: int = 18) -> int | None:
    """The text's whole number, or None unless it is 1..`max_digits` ASCII digits (spaces around it
    allowed). `str.isdigit` takes '²', which int() refuses (an exception, a 500), and int() takes '٣'."""
    value = (text or "").strip()
    if not 0 < len(value) <= max_digits or not value.isascii() or not value.isdigit():
        return None
    return int(value)
