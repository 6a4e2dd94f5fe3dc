"""The coins' Transfer logs to and from the donation address over a range: both filters in one round trip
when the span is within what the provider accepts, else through `RpcClient.get_logs`, which splits it."""

from __future__ import annotations

from collections.abc import Sequence

from crawlers.chain.calls import transfer_filters, transfer_log_calls
from crawlers.chain.outcomes import Answer, RpcOutcome
from crawlers.chain.rpc import RpcClient
from dws_project.chain_settings import ChainSettings

# The logs of the coins' Transfers (to us, from us), as the node answered them.
TransferLogs = tuple[list[dict], list[dict]]


def logs_in_one_batch(client: RpcClient, chain: ChainSettings, start: int, end: int) -> bool:
    """Whether both Transfer filters over start..end go in one batch: there are coins to ask about, and
    the span is within what the provider accepts (else `get_logs` splits it)."""
    return bool(chain.stable_coins) and end - start + 1 <= client.log_span


def transfer_logs(client: RpcClient, chain: ChainSettings, start: int, last: int) -> TransferLogs:
    """(logs to us, logs from us). A provider that refuses the span (or either filter) is asked again
    through `get_logs`; anything short of two full answers raises NoEvidenceError."""
    if not chain.stable_coins:
        return [], []
    if logs_in_one_batch(client, chain, start, last):
        outcomes = client.batch(transfer_log_calls(chain, start, last))
        answered = answered_logs(outcomes)
        if answered is not None:
            return answered
    contracts = [c.contract for c in chain.stable_coins]
    to_us, from_us = (
        client.get_logs(addresses=contracts, topics=topics, from_block=start, to_block=last)
        for topics in transfer_filters(chain)
    )
    return to_us, from_us


def answered_logs(answers: Sequence[RpcOutcome]) -> TransferLogs | None:
    """The two filters' logs from answers already in hand (a batch they rode in), or None unless both are
    full answers."""
    if len(answers) != 2:
        return None
    to_us, from_us = answers
    if not (isinstance(to_us, Answer) and isinstance(from_us, Answer)):
        return None
    if isinstance(to_us.value, list) and isinstance(from_us.value, list):
        return to_us.value, from_us.value
    return None
