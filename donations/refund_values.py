"""What the crawlers hand to the refund register: a stray coin that reached the donation address, and a
transfer out of it (a payout) that may pay an owed refund. Pure values: no ORM, no I/O (the crawlers' pure
decode room builds them, like donations/sightings.py's `Transfer`).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Context, Decimal

from dws_project.chain_settings import ChainSettings

ETH_DECIMALS = 18


# Room for any uint256 (78 digits): Python's default context keeps 28 significant digits and rounds the rest,
# which an 18-decimal token's amount past 10^10 units has.
EXACT = Context(prec=80)


def units(raw: int, decimals: int) -> Decimal:
    """Base units (wei, a token's smallest unit) in the asset's own units, exactly."""
    return Decimal(raw).scaleb(-decimals, context=EXACT)


def base_units(amount: Decimal, decimals: int) -> int:
    """An amount in the asset's own units as base units (what a transfer moves), exactly."""
    return int(amount.scaleb(decimals, context=EXACT).to_integral_exact(context=EXACT))


def amount_text(amount: Decimal) -> str:
    """An amount as people read it: fixed point, no trailing zeros, no exponent, every digit kept."""
    return format(amount.normalize(context=EXACT), "f")


def fits_decimals(amount: Decimal, decimals: int) -> bool:
    """Whether `amount` has no more decimals than the asset (a whole number of base units)."""
    return amount == amount.quantize(Decimal(1).scaleb(-decimals), context=EXACT)


@dataclass(frozen=True)
class Token:
    """A token the register can owe: its name on this chain, contract (empty for ETH) and decimals."""

    asset: str
    contract: str
    decimals: int


ETH_TOKEN = Token("eth", "", ETH_DECIMALS)


@dataclass(frozen=True)
class StrayTransfer:
    """A Transfer to the donation address of a well-known token the sale does not take (DWS_STRAY_TOKENS), in
    a finalized block: owed back to its sender."""

    tx_hash: str
    log_index: int
    block_number: int
    sender: str
    token: Token
    raw: int


@dataclass(frozen=True)
class Payout:
    """Value that left the donation address to someone else, in a finalized block: ETH by a transaction it
    sent (`trace_address` empty) or by an internal call from it (a Safe: the frame's path), or a token's
    Transfer log from it (`log_index`). Its identity is (tx_hash, log_index, trace_address)."""

    tx_hash: str
    log_index: int | None
    trace_address: str
    block_number: int
    recipient: str
    token: Token
    raw: int

    @property
    def amount(self) -> Decimal:
        return units(self.raw, self.token.decimals)


def chain_tokens(chain: ChainSettings) -> dict[str, Token]:
    """Every token the register can owe on `chain`, by contract ("" for ETH): ETH, its donation coins, its
    stray tokens."""
    found = {"": ETH_TOKEN}
    for coin in (*chain.stable_coins, *chain.stray_tokens):
        found.setdefault(coin.contract, Token(coin.asset, coin.contract, coin.scale))
    return found


def stray_tokens(chain: ChainSettings) -> dict[str, Token]:
    """The chain's stray tokens (DWS_STRAY_TOKENS), by contract."""
    return {t.contract: Token(t.asset, t.contract, t.scale) for t in chain.stray_tokens}


def asset_token(chain: ChainSettings, asset: str) -> Token | None:
    """The token called `asset` on `chain` (ETH, a donation coin or a stray token), or None."""
    return next((t for t in chain_tokens(chain).values() if t.asset == asset), None)
