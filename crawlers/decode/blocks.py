"""Block answers to headers: the number, hash, parent and time the crawlers chain together and record."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime


@dataclass(frozen=True)
class BlockHeader:
    number: int
    hash: str
    parent_hash: str
    time: datetime


def block_header(block: dict) -> BlockHeader:
    """The header of a well-formed block answer (full or not)."""
    return BlockHeader(
        number=int(block["number"], 16),
        hash=block["hash"].lower(),
        parent_hash=block["parentHash"].lower(),
        time=datetime.fromtimestamp(int(block["timestamp"], 16), tz=UTC),
    )


def header_of(block: object, number: int | None = None) -> BlockHeader | None:
    """The header of a block answer, or None when it is not one (of block `number`, when given)."""
    if not isinstance(block, dict):
        return None
    if not all(isinstance(block.get(k), str) for k in ("number", "hash", "parentHash", "timestamp")):
        return None
    try:
        header = block_header(block)
    except ValueError:
        return None
    return header if number is None or header.number == number else None


def block_carries(block: dict, tx_hash: str) -> bool:
    """Whether a block answer (full, or with its transactions' hashes) lists the transaction."""
    for tx in block.get("transactions") or []:
        found = tx.get("hash") if isinstance(tx, dict) else tx
        if isinstance(found, str) and found.lower() == tx_hash:
            return True
    return False
