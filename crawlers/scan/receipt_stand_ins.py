"""A credited transaction whose receipt is past DWS_RPC_MAX_ANSWER_MB even alone, shown to the second
provider's check (crawlers/scan/agreement.py) by smaller answers.

The check compares every credited transaction's receipt, and anyone can put a megabyte log beside a
donation in one transaction (a contract that pays a coin and emits a log of junk): its receipt alone is
past the cap, and the finalized crawler waited for the check provider for ever. What the agreement reads
of such a receipt is asked in parts as small as the transfers themselves:

* a coin transfer: the check provider's Transfer logs of the donation coins to the address in that block
  (`eth_getLogs` pinned by the block's hash). A log exists only for a transaction that succeeded, in the
  block it names, so those of the transaction stand in for its receipt: success in that block, and the
  logs the agreement looks the transfer up in (a log it does not find there is a disagreement, as in a
  receipt);
* ETH paid by an internal call: success in that block, and the block is shown by its transactions (the
  transaction object, and its call trace showing the frame: path, donor, amount, under no failure), as
  where the check provider keeps no state.

A top-level ETH transfer's receipt carries only what the donation address's own code logs: it has no
stand-in, and is waited for like any receipt short of evidence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from crawlers.chain.calls import TRANSFER_TOPIC, address_topic
from crawlers.chain.outcomes import Answer, Call, NoEvidence, RpcOutcome, too_large
from crawlers.chain.rpc import RpcClient
from crawlers.scan.results import ScannedBlock
from dws_project.chain_settings import ChainSettings


def receipt_stand_ins(
    check: RpcClient, chain: ChainSettings, blocks: Sequence[ScannedBlock], receipts: Mapping[str, RpcOutcome]
) -> tuple[dict[str, RpcOutcome], list[ScannedBlock]]:
    """The receipts with a stand-in for each credited transaction's receipt past the cap (see the module doc),
    and the blocks whose internal ETH must be shown by their transactions instead."""
    found = dict(receipts)
    oversized = {tx for tx, outcome in receipts.items() if too_large(outcome)}
    paid = [(b, t) for b in blocks for t in b.transfers if t.tx_hash in oversized]
    if not paid:
        return found, []
    coin_blocks = sorted({t.block_hash for _, t in paid if t.log_index is not None})
    logs = dict(zip(coin_blocks, check.batch([_coin_logs_call(chain, h) for h in coin_blocks]), strict=True))
    by_trace: dict[int, ScannedBlock] = {}
    for tx in sorted({t.tx_hash for _, t in paid}):
        transfers = [t for _, t in paid if t.tx_hash == tx]
        if any(t.log_index is None and t.trace_address is None for t in transfers):
            continue  # a top-level ETH transfer: no stand-in, its receipt is waited for
        block_hash = transfers[0].block_hash
        stand_in: RpcOutcome = Answer({"status": "0x1", "blockHash": block_hash, "logs": []})
        if any(t.log_index is not None for t in transfers):
            stand_in = _from_logs(tx, block_hash, logs[block_hash])
        found[tx] = stand_in
        by_trace |= {b.header.number: b for b, t in paid if t.tx_hash == tx and t.trace_address is not None}
    return found, list(by_trace.values())


def _coin_logs_call(chain: ChainSettings, block_hash: str) -> Call:
    coins = [coin.contract for coin in chain.stable_coins]
    topics = [TRANSFER_TOPIC, None, address_topic(chain.donation_address)]
    return "eth_getLogs", [{"blockHash": block_hash, "address": coins, "topics": topics}]


def _from_logs(tx: str, block_hash: str, outcome: RpcOutcome) -> RpcOutcome:
    """A receipt of transaction `tx` in `block_hash` made of the block's coin logs of that transaction."""
    if not isinstance(outcome, Answer):
        return outcome
    if not isinstance(outcome.value, list):
        return NoEvidence("eth_getLogs", "malformed", f"logs of block {block_hash}: not a list")
    logs = [
        log
        for log in outcome.value
        if isinstance(log, dict)
        and str(log.get("transactionHash") or "").lower() == tx
        and str(log.get("blockHash") or "").lower() == block_hash
        and not log.get("removed")
    ]
    return Answer({"status": "0x1", "blockHash": block_hash, "logs": logs})
