"""Raw chain quantities to the amounts we record: scaled down to a column's decimals, never rounded up."""

from __future__ import annotations

from decimal import ROUND_DOWN, Decimal

from crawlers.chain.quantities import hex_quantity

ETH_DECIMALS = 18
WEI_PER_ETH = 10**ETH_DECIMALS


class UnreadableAmount(ValueError):
    """A field the balance identity needs is there but is not a quantity (not hex, negative, not a string):
    no evidence of what was charged or moved. The block is held with this reason, never guessed."""


def quantity(source: dict, name: str) -> int | None:
    """The field `name` of a JSON-RPC object as an integer; None when it is absent (or null, which some nodes
    write for a field they leave out: what it would have said is judged by the balances). Raises
    UnreadableAmount for anything else that is not a hex quantity."""
    value = source.get(name)
    if value is None:
        return None
    number = hex_quantity(value)
    if number is None:
        raise UnreadableAmount(f"its {name} is {str(value)[:80]!r}, not a hex quantity")
    return number


def required_quantity(source: dict, name: str) -> int:
    """`quantity`, for a field every such object has: absent, it is no evidence either."""
    value = quantity(source, name)
    if value is None:
        raise UnreadableAmount(f"it has no {name}")
    return value


def scaled_amount(raw: int, decimals: int, scale: int) -> Decimal:
    """`raw` smallest units of a token with `decimals`, written at `scale` decimals (rounded down): we never
    record more than arrived."""
    quantum = Decimal(1).scaleb(-scale)
    return (Decimal(raw).scaleb(-decimals)).quantize(quantum, rounding=ROUND_DOWN)


def log_amount(log: dict) -> int:
    """The raw amount of an ERC-20 Transfer log (its data word); an empty data field is 0."""
    data = log.get("data") or "0x"
    return int(data, 16) if data not in ("0x", "") else 0


def log_block_number(log: dict) -> int:
    """The block a log names (0 when it names none, which no scanned block is)."""
    return int(log.get("blockNumber") or "0x0", 16)
