"""Raw chain quantities to the amounts we record: scaled down to a column's decimals, never rounded up."""

from __future__ import annotations

from decimal import ROUND_DOWN, Context, Decimal

from crawlers.chain.quantities import hex_quantity
from donations.sightings import Transfer
from dws_project.chain_settings import ChainSettings

ETH_DECIMALS = 18
WEI_PER_ETH = 10**ETH_DECIMALS
# Exact for any uint256 at any scale (78 digits, and 18 decimals): Decimal's default 28 digits made a
# transfer of 2^255 units raise InvalidOperation, which held the whole block and every asset in it. A
# value the donation columns cannot hold is judged later (donations/sightings.py `donation_unholdable`).
WIDE = Context(prec=120)


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
    return Decimal(raw).scaleb(-decimals, context=WIDE).quantize(quantum, rounding=ROUND_DOWN, context=WIDE)


def log_amount(log: dict) -> int:
    """The raw amount of an ERC-20 Transfer log (its data word); an empty data field is 0."""
    data = log.get("data") or "0x"
    return int(data, 16) if data not in ("0x", "") else 0


def log_block_number(log: dict) -> int:
    """The block a log names (0 when it names none, which no scanned block is)."""
    return int(log.get("blockNumber") or "0x0", 16)


def raw_units(chain: ChainSettings, transfer: Transfer) -> int:
    """A transfer's amount back in raw units (wei, the coin's base units), as written at its column's
    scale (exact for a coin of up to 10 decimals; ETH and finer coins lose what the column rounded off)."""
    coin = chain.stable_coin(transfer.asset)
    decimals = coin.scale if coin is not None else ETH_DECIMALS
    return int(transfer.amount.scaleb(decimals, context=WIDE))
