"""The one read of where the chain is: its head and its finalized block (the node's `finalized` tag)."""

from __future__ import annotations

from dataclasses import dataclass

from crawlers.chain.calls import header_call
from crawlers.chain.outcomes import Answer, Call, NoEvidence, NoEvidenceError, RpcOutcome
from crawlers.chain.rpc import RpcClient

HEAD_CALL: Call = ("eth_blockNumber", [])
FINALIZED_CALL = header_call("finalized")


@dataclass(frozen=True)
class ChainTips:
    head: int | None  # None: the provider did not say (error, null, time-out)
    finalized: int | None


def _head_number(outcome: RpcOutcome) -> int | None:
    return int(outcome.value, 16) if isinstance(outcome, Answer) and isinstance(outcome.value, str) else None


def _block_number(outcome: RpcOutcome) -> int | None:
    if isinstance(outcome, Answer) and isinstance(outcome.value, dict) and isinstance(outcome.value.get("number"), str):
        return int(outcome.value["number"], 16)
    return None


def chain_tips(client: RpcClient) -> ChainTips:
    """The provider's head and finalized block numbers, in one batched round trip."""
    head, final = client.batch([HEAD_CALL, FINALIZED_CALL])
    return ChainTips(_head_number(head), _block_number(final))


def tip_block(client: RpcClient, *, finalized: bool) -> int:
    """The finalized block's number, or the head's; raises NoEvidenceError when the provider does not say."""
    method, params = FINALIZED_CALL if finalized else HEAD_CALL
    outcome = client.call(method, params)
    number = _block_number(outcome) if finalized else _head_number(outcome)
    if number is None:
        why = outcome if isinstance(outcome, NoEvidence) else NoEvidence(method, "malformed", "not a block number")
        raise NoEvidenceError(why)
    return number
