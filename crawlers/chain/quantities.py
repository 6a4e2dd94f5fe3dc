"""A node's numbers: the one rule for reading a JSON-RPC quantity ("0x1b4")."""

from __future__ import annotations

import re

# Hex digits after "0x", at most 256 bits. Python's int(text, 16) alone also takes "-0x5", " 0x5", "0x5_0" and
# no "0x" at all; none of those is a quantity a node sends.
QUANTITY = re.compile(r"0x[0-9a-fA-F]{1,64}")


def hex_quantity(value: object) -> int | None:
    """`value` as an integer when it is a quantity; None for anything else (a malformed answer is no evidence)."""
    return int(value, 16) if isinstance(value, str) and QUANTITY.fullmatch(value) else None
