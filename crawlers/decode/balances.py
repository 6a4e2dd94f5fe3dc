"""Balance answers (`chain.calls.balance_calls`, in that order) to a frozen `Balances` at one block."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from crawlers.chain.outcomes import NoEvidence, NoEvidenceError, RpcOutcome
from crawlers.decode.amounts import ETH_DECIMALS, WIDE
from dws_project.chain_settings import ChainSettings

ETH = "eth"
NONCE = "nonce"  # the pseudo-asset counting the transactions sent from the donation address
HISTORICAL_STATE = re.compile(
    r"missing trie node|header not found|state (is )?not available|historical state|state .*(pruned|not found)",
    re.IGNORECASE,
)
SPLIT_PARTS = 8  # a bisection level splits an interval into up to this many parts (one post per level)
_METHODS = {ETH: "eth_getBalance", NONCE: "eth_getTransactionCount"}


class StateUnavailable(Exception):
    """The provider keeps no state for that block: the balance proof is impossible there."""

    def __init__(self, block: int, detail: str) -> None:
        self.block = block
        super().__init__(detail)


@dataclass(frozen=True)
class Balances:
    block: int
    values: dict[str, int]  # "eth" (wei), NONCE, and each coin asset (base units)


def balances_from(chain: ChainSettings, block: int, outcomes: Sequence[RpcOutcome]) -> Balances:
    """The answers to `balance_calls(chain, block)`. Raises StateUnavailable (no historical state) or
    NoEvidenceError (anything else short of an answer)."""
    assets = [ETH, NONCE] + [coin.asset for coin in chain.stable_coins]
    values: dict[str, int] = {}
    for asset, outcome in zip(assets, outcomes, strict=True):
        if isinstance(outcome, NoEvidence):
            if outcome.kind == "error" and HISTORICAL_STATE.search(outcome.detail):
                raise StateUnavailable(block, outcome.detail)
            raise NoEvidenceError(outcome)
        value = outcome.value
        if value == "0x" and asset not in (ETH, NONCE):
            value = "0x0"  # a call to an address without code (the coin not deployed yet at that block)
        if not isinstance(value, str) or not value.startswith("0x") or len(value) < 3:
            method = _METHODS.get(asset, "eth_call")
            raise NoEvidenceError(NoEvidence(method, "malformed", f"balance of {asset} is {value!r}"))
        values[asset] = int(value, 16)
    return Balances(block, values)


def edge_balances(
    chain: ChainSettings, start: int, end: int, outcomes: Sequence[RpcOutcome]
) -> tuple[Balances, Balances]:
    """The answers to `edge_calls(chain, start, end)`: the balances before the range and at its end."""
    half = len(outcomes) // 2
    return balances_from(chain, start - 1, outcomes[:half]), balances_from(chain, end, outcomes[half:])


def split_points(low: int, high: int) -> list[int]:
    """The blocks whose balances split the interval low+1..high (balances known at `low` and `high`) into
    up to SPLIT_PARTS parts of near-equal length: 2,000 blocks take 4 levels instead of 11."""
    size = high - low
    parts = min(SPLIT_PARTS, size)
    return [low + size * i // parts for i in range(1, parts)]


def balances_in_batch(chain: ChainSettings) -> int:
    """How many answers one `balance_calls` batch has (ETH, the nonce, each coin)."""
    return 2 + len(chain.stable_coins)


def display_amount(chain: ChainSettings, asset: str, raw: int) -> Decimal:
    """A raw amount in the asset's own units (ETH, whole coins)."""
    decimals = ETH_DECIMALS if asset == ETH else next(c.scale for c in chain.stable_coins if c.asset == asset)
    return Decimal(raw).scaleb(-decimals, context=WIDE)  # exact, whatever the raw amount
