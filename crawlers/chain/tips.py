"""The one read of where the chain is: its head and its finalized block (the node's `finalized` tag), and
which chain that is.

Every crawler run begins with `tip_block(..., chain=...)`: the node's chain id is asked in the same round
trip as the tip and must be the chain's (DWS_CHAIN_ID for chain eth, DWS_NAME_CHAIN_ID for another), so
the pin is checked at every run (a provider re-pointed while the worker runs is caught at its next run)
for no extra request. A node on another chain raises `ChainMismatchError`; the run holds, and nothing that
node says is recorded.
"""

from __future__ import annotations

from dataclasses import dataclass

from crawlers.chain.calls import header_call
from crawlers.chain.outcomes import Answer, Call, NoEvidence, NoEvidenceError, RpcOutcome
from crawlers.chain.quantities import hex_quantity
from crawlers.chain.rpc import RpcClient
from dws_project.chain_settings import ChainSettings

HEAD_CALL: Call = ("eth_blockNumber", [])
FINALIZED_CALL = header_call("finalized")
CHAIN_ID_CALL: Call = ("eth_chainId", [])


class ChainMismatchError(Exception):
    """The provider serves another chain than the configured chain id: nothing it says may be recorded."""

    def __init__(self, text: str, variable: str) -> None:
        super().__init__(text)
        self.variable = variable

    def hold_reason(self) -> str:
        """Why a run holds, for its result and its CRITICAL line (the same words wherever it is met)."""
        return f"{self}; holding, nothing is recorded until the provider serves the chain id {self.variable} names"


@dataclass(frozen=True)
class ChainTips:
    head: int | None  # None: the provider did not say (error, null, time-out)
    finalized: int | None


def _head_number(outcome: RpcOutcome) -> int | None:
    return hex_quantity(outcome.value) if isinstance(outcome, Answer) else None


def _block_number(outcome: RpcOutcome) -> int | None:
    if isinstance(outcome, Answer) and isinstance(outcome.value, dict):
        return hex_quantity(outcome.value.get("number"))
    return None


def chain_tips(client: RpcClient) -> ChainTips:
    """The provider's head and finalized block numbers, in one batched round trip."""
    head, final = client.batch([HEAD_CALL, FINALIZED_CALL])
    return ChainTips(_head_number(head), _block_number(final))


def _require_number(outcome: RpcOutcome, method: str, number: int | None) -> int:
    if number is None:
        why = outcome if isinstance(outcome, NoEvidence) else NoEvidence(method, "malformed", "not a number")
        raise NoEvidenceError(why)
    return number


def require_chain_id(client: RpcClient, outcome: RpcOutcome, chain: ChainSettings) -> None:
    """Raise ChainMismatchError unless `outcome` (an eth_chainId answer) is `chain`'s id; NoEvidenceError when
    the provider did not say."""
    actual = _require_number(outcome, CHAIN_ID_CALL[0], _head_number(outcome))
    if actual != chain.chain_id:
        variable = chain.variable("CHAIN_ID")
        raise ChainMismatchError(
            f"provider {client.origin} of chain {chain.name} serves chain id {actual}, {variable} is {chain.chain_id}",
            variable,
        )


def check_chain_id(client: RpcClient, chain: ChainSettings) -> None:
    """One look at the provider's chain id (for a run that reads no tip)."""
    require_chain_id(client, client.call(*CHAIN_ID_CALL), chain)


def tip_block(client: RpcClient, *, finalized: bool, chain: ChainSettings | None = None) -> int:
    """The finalized block's number, or the head's; raises NoEvidenceError when the provider does not say.

    With `chain`, the provider's chain id is asked in the same round trip and must be that chain's
    (ChainMismatchError otherwise)."""
    method, params = FINALIZED_CALL if finalized else HEAD_CALL
    if chain is None:
        outcome = client.call(method, params)
    else:
        identity, outcome = client.batch([CHAIN_ID_CALL, (method, params)])
        require_chain_id(client, identity, chain)
    number = _block_number(outcome) if finalized else _head_number(outcome)
    return _require_number(outcome, method, number)
