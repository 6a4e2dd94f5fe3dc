"""Which blocks of a range the donation address takes part in a call in: `trace_filter` (Parity/Erigon/
Nethermind/reth/anvil), for an address with code (crawlers/scan/with_code.py).

A provider that refuses the method is remembered in Redis (per provider origin, for an hour, shared by
every worker), so each range does not ask again; without it, every block of a range is traced.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from redis.exceptions import RedisError

from crawlers.chain.outcomes import TOO_LARGE, Answer, Call, NoEvidence, NoEvidenceError, RpcOutcome, require
from crawlers.chain.rpc import RpcClient
from crawlers.scan.traces import is_refusal
from dws_project.chain_settings import ChainSettings
from dws_project.redis_client import get_redis

logger = logging.getLogger("dws.crawlers.scan.traces")


def _malformed(client: RpcClient, why: str) -> NoEvidenceError:
    return NoEvidenceError(NoEvidence("trace_filter", "malformed", f"{client.origin}: {why}"))


FILTER_REFUSAL_SECONDS = 3600  # a provider that refused trace_filter is asked again after this long


def _filter_key(client: RpcClient) -> str:
    return f"dws:trace-filter-refused:{client.endpoint}"


def _filter_refused(client: RpcClient) -> bool:
    try:
        return bool(get_redis().exists(_filter_key(client)))
    except RedisError:
        return False  # no shared memory: ask, which costs a call, never a decision


def _remember_filter_refused(client: RpcClient) -> None:
    logger.info("provider %s refuses trace_filter: every block's traces are read instead", client.origin)
    try:
        get_redis().set(_filter_key(client), "1", ex=FILTER_REFUSAL_SECONDS)
    except RedisError as exc:
        logger.warning("provider %s: could not share the trace_filter refusal: %s", client.origin, type(exc).__name__)


def blocks_with_calls(client: RpcClient, chain: ChainSettings, hashes: dict[int, str]) -> list[int] | None:
    """Of the scanned blocks (`hashes`: number -> hash, consecutive), those in which a call frame goes to
    or comes from the donation address, by `trace_filter` (two filters in one batch); None when the
    provider does not serve it for this range (a refusal, an error object such as a result cap, an answer
    past DWS_RPC_MAX_ANSWER_MB, or
    DWS_TRACE allowing only the debug family): the caller traces every block instead. A passing failure
    (a time-out, a 429, a null) or a trace of another fork raises NoEvidenceError (hold)."""
    if chain.trace_mode not in ("auto", "trace") or not hashes or _filter_refused(client):
        return None
    start, end = min(hashes), max(hashes)
    us = [chain.donation_address]
    span = {"fromBlock": hex(start), "toBlock": hex(end)}
    calls: list[Call] = [("trace_filter", [{**span, "toAddress": us}]), ("trace_filter", [{**span, "fromAddress": us}])]
    numbers: set[int] = set()
    for outcome in client.batch(calls):
        # An answer past the cap (a contract calling us thousands of times) is no reason to hold: every
        # block is traced instead (crawlers/scan/traces.py reads an oversized one per transaction).
        if isinstance(outcome, NoEvidence) and outcome.kind in ("error", TOO_LARGE):
            if is_refusal(outcome):
                _remember_filter_refused(client)
            return None
        found = require(outcome)
        if not isinstance(found, list):
            raise _malformed(client, "not a list")
        for item in found:
            number = item.get("blockNumber") if isinstance(item, dict) else None
            if isinstance(number, str):
                number = int(number, 16)
            if not isinstance(number, int) or number not in hashes:
                raise _malformed(client, "a trace without a block of the range")
            if str(item.get("blockHash") or hashes[number]).lower() != hashes[number]:
                raise NoEvidenceError(NoEvidence("trace_filter", "reorged", f"block {number} is another block now"))
            numbers.add(number)
    return sorted(numbers)


def may_ask(client: RpcClient, chain: ChainSettings) -> bool:
    """Whether trace_filter may be asked of this provider (DWS_TRACE allows it, no refusal remembered)."""
    return chain.trace_mode in ("auto", "trace") and not _filter_refused(client)


def value_blocks(
    client: RpcClient, chain: ChainSettings, start: int, end: int, outcomes: Sequence[RpcOutcome]
) -> tuple[set[int] | None, set[int] | None]:
    """From the answers to the two filters over start..end (to the address, from it): the blocks where a
    frame brought it value, and those where one took value from it (a call or a create with value, its
    self-destruct); (None, None) where the provider did not answer both (a refusal is remembered, as
    above). A Safe read by its events (crawlers/scan/safe.py) takes them as a second source."""
    us = chain.donation_address
    arrived: set[int] = set()
    left: set[int] = set()
    for outcome in outcomes:
        if is_refusal(outcome):
            _remember_filter_refused(client)
        if not isinstance(outcome, Answer) or not isinstance(outcome.value, list):
            return None, None
        for item in outcome.value:
            if not isinstance(item, dict) or not isinstance(action := item.get("action"), dict):
                return None, None
            number = item.get("blockNumber")
            number = int(number, 16) if isinstance(number, str) else number
            if not isinstance(number, int) or not start <= number <= end:
                return None, None
            kind, value = item.get("type"), _wei(action.get("value") or action.get("balance"))
            if kind == "suicide":
                if str(action.get("address") or "").lower() == us:
                    left.add(number)
                elif str(action.get("refundAddress") or "").lower() == us and value:
                    arrived.add(number)
                continue
            if not value or action.get("callType") in ("delegatecall", "staticcall", "callcode"):
                continue
            if str(action.get("from") or "").lower() == us:
                left.add(number)
            elif str(action.get("to") or "").lower() == us:
                arrived.add(number)
    return arrived, left


def _wei(value: object) -> int:
    try:
        return int(str(value), 16) if isinstance(value, str) else int(value or 0)  # type: ignore[call-overload]
    except ValueError:
        return 1  # not a quantity: taken as value, so its block is looked at
