"""Raw chain quantities to the amounts we record: scaled down to a column's decimals, never rounded up."""

from __future__ import annotations

from decimal import ROUND_DOWN, Decimal

ETH_DECIMALS = 18
WEI_PER_ETH = 10**ETH_DECIMALS


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
