"""Fetching full blocks in one batch (with any extra calls riding along), through DWS_BLOCK_CACHE when the
caller says the blocks are final (a finalized block never changes, so a copy on disk is as good as asking).

Anyone can fill a block with calldata until the block with its transactions is past DWS_RPC_MAX_ANSWER_MB
even alone. Such a block is read in parts (`_block_in_parts`): its header with the transactions' hashes,
then each transaction by its place in that block. A transaction whose own object is still past the cap
stands as its hash alone: its sender, recipient and value are not known, so it is nobody's transfer to
the decoders; whatever it did at the donation address, the balance proof sees (ETH it paid is asked of the
traces and, unread there too, is an unexplained inflow; a nonce it moved holds the block)."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path

from crawlers.chain.calls import block_calls
from crawlers.chain.files import write_private
from crawlers.chain.outcomes import Answer, Call, NoEvidence, RpcOutcome, too_large
from crawlers.chain.rpc import RpcClient
from dws_project.chain_settings import ChainSettings

logger = logging.getLogger("dws.crawlers")


# --- DWS_BLOCK_CACHE: finalized blocks kept on disk ---------------------------------------------


def _cached_block(cache_dir: str, number: int) -> dict | None:
    """The cached copy of finalized block `number`; a copy that does not parse (or is not that block) is
    discarded, so the caller fetches it again."""
    path = Path(cache_dir) / f"fb-{number}.json"
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    except OSError as exc:
        logger.warning("block cache: cannot read %s (%s); asking the provider", path.name, type(exc).__name__)
        return None
    try:
        block = json.loads(text)
    except ValueError:
        block = None
    if not block_well_formed(block, number):
        logger.warning("block cache: %s is corrupt; discarded, fetching the block again", path.name)
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    return block


def fetch_blocks(
    client: RpcClient, chain: ChainSettings, numbers: Sequence[int], *, through_cache: bool
) -> list[RpcOutcome]:
    """Full blocks by number, in one batch; through DWS_BLOCK_CACHE (when set) if `through_cache`."""
    return fetch_blocks_with(client, chain, numbers, through_cache=through_cache)[0]


def fetch_blocks_with(
    client: RpcClient,
    chain: ChainSettings,
    numbers: Sequence[int],
    *,
    through_cache: bool,
    extra: Sequence[Call] = (),
) -> tuple[list[RpcOutcome], list[RpcOutcome]]:
    """Full blocks by number and the `extra` calls (the balance evidence), in one batch.

    With `through_cache` (the blocks are final) they come through DWS_BLOCK_CACHE when it is set. A block
    fetched for the cache that cannot be written there comes back as NoEvidence of kind "cache-write":
    the caller holds it, exactly like a block the provider did not give.
    """
    cache_dir = chain.block_cache if through_cache else None
    outcomes: dict[int, RpcOutcome] = {}
    if cache_dir:
        for number in numbers:
            cached = _cached_block(cache_dir, number)
            if cached is not None:
                outcomes[number] = Answer(cached)
    missing = [n for n in numbers if n not in outcomes]
    calls = _calls(missing, extra)
    answered = client.batch(calls) if calls else []
    fetched, extra_outcomes = answered[: len(missing)], answered[len(missing) :]
    for number, outcome in zip(missing, fetched, strict=True):
        if too_large(outcome):
            outcomes[number] = _block_in_parts(client, number)  # never cached: a copy without some bodies
            continue
        if cache_dir and isinstance(outcome, Answer) and block_well_formed(outcome.value, number):
            try:
                write_private(cache_dir, f"fb-{number}.json", json.dumps(outcome.value))
            except OSError as exc:
                logger.error("block cache: could not write fb-%d.json (%s); block retried next run", number, exc)
                outcome = NoEvidence("eth_getBlockByNumber", "cache-write", f"fb-{number}.json: {type(exc).__name__}")
        outcomes[number] = outcome
    return [outcomes[n] for n in numbers], extra_outcomes


def _block_in_parts(client: RpcClient, number: int) -> RpcOutcome:
    """Block `number` with its transactions, asked in parts (see the module doc); NoEvidence when a part is."""
    header = client.call("eth_getBlockByNumber", [hex(number), False])
    if not isinstance(header, Answer):
        return header
    if not block_well_formed(header.value, number) or not all(isinstance(h, str) for h in header.value["transactions"]):
        return NoEvidence("eth_getBlockByNumber", "malformed", f"{client.origin}: block {number} without its hashes")
    block_hash, hashes = header.value["hash"], [h.lower() for h in header.value["transactions"]]
    calls: list[Call] = [("eth_getTransactionByBlockHashAndIndex", [block_hash, hex(i)]) for i in range(len(hashes))]
    transactions: list[dict] = []
    unread = []
    for tx_hash, outcome in zip(hashes, client.batch(calls) if calls else [], strict=True):
        if too_large(outcome):
            transactions.append({"hash": tx_hash})
            unread.append(tx_hash)
            continue
        if not isinstance(outcome, Answer):
            return outcome
        tx = outcome.value
        if not isinstance(tx, dict) or str(tx.get("hash") or "").lower() != tx_hash:
            return NoEvidence(
                "eth_getTransactionByBlockHashAndIndex",
                "malformed",
                f"{client.origin}: not tx {tx_hash} of block {number}",
            )
        transactions.append(tx)
    logger.warning(
        "block %d: the block with its transactions is past DWS_RPC_MAX_ANSWER_MB; read in parts%s",
        number,
        f" (transaction(s) {', '.join(unread)} past it even alone: their hashes only)" if unread else "",
    )
    return Answer({**header.value, "transactions": transactions})


def _calls(numbers: Sequence[int], extra: Sequence[Call]) -> list[Call]:
    return block_calls(numbers) + list(extra)


def block_well_formed(block: object, number: int) -> bool:
    return (
        isinstance(block, dict)
        and isinstance(block.get("hash"), str)
        and isinstance(block.get("parentHash"), str)
        and isinstance(block.get("transactions"), list)
        and isinstance(block.get("number"), str)
        and int(block["number"], 16) == number
    )
