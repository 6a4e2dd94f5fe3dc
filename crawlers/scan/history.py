"""Whether the provider keeps the state of old blocks: learnt by how it behaves, never by its wording.

Each client words a missing state its own way (geth's "missing trie node", Erigon's, Nethermind's,
hosted providers', anvil loaded from a dump: "BlockOutOfRangeError: block height is N but requested was
0"), and an archive provider's load balancer may say "header not found" about a block it has, for a
moment. So the words decide nothing. A balance refused (a definite error object, not a time-out or a
429) is taken as "no historical state there" only when all of these hold:

* the block is older than the recent states every full node keeps (`RECENT_STATES` behind the head):
  a refused recent block is a node lagging its peers, held and retried;
* the same balance asked at the head answers now (the provider does serve balances);
* a refusal of an old balance was already seen on an earlier run (the memory is in Redis, per provider
  origin, shared by every worker, kept `MEMORY_SECONDS` after the last refusal): one transient refusal
  holds the range once, and the next run asks again.

The same memory, per block, decides a block whose call traces every method answers with an error in
such a range (`untraceable`): a first sighting holds it, a later run's takes it as untraceable, so one
passing failure of a load balancer never publishes an internal donation's block unproven.

Deciding wrongly costs work, never money: a range taken as without history is read with the call
traces of every block (crawlers/scan/proof.py), and published unproven where those are refused too.
"""

from __future__ import annotations

import logging

from redis.exceptions import RedisError

from crawlers.chain.outcomes import Answer, NoEvidenceError
from crawlers.chain.rpc import RpcClient
from crawlers.chain.tips import tip_block
from dws_project.chain_settings import ChainSettings
from dws_project.redis_client import get_redis

logger = logging.getLogger("dws.crawlers")

RECENT_STATES = 128  # blocks of state a full node keeps behind its head (geth's default)
MEMORY_SECONDS = 3600  # how long a refusal of old state is remembered after the last one


def memory_key(client: RpcClient) -> str:
    return f"dws:no-history:{client.endpoint}"


def far_behind(client: RpcClient, block: int) -> bool:
    """Whether `block` is beyond the recent states every full node keeps (so its state may be pruned)."""
    try:
        return tip_block(client, finalized=False) - block > RECENT_STATES
    except NoEvidenceError:
        return False


def _head_answers(client: RpcClient, chain: ChainSettings) -> bool:
    return isinstance(client.call("eth_getBalance", [chain.donation_address, "latest"]), Answer)


def _seen_on_an_earlier_run(key: str, run: str, *, first_sighting: str, what: str) -> bool:
    """Whether the refusal remembered at `key` was first seen by another run than `run`. A first sighting is
    remembered (MEMORY_SECONDS, every worker) and logged; a repeat keeps the memory alive. No shared memory
    (Redis down): False, so the caller holds and asks again."""
    try:
        redis = get_redis()
        first_run = redis.get(key)
        if first_run is None:
            redis.set(key, run, ex=MEMORY_SECONDS)
            logger.warning(first_sighting)
            return False
        redis.expire(key, MEMORY_SECONDS)
    except RedisError as exc:
        logger.warning("no shared memory of refused %s (%s)", what, type(exc).__name__)
        return False
    if isinstance(first_run, bytes):
        first_run = first_run.decode()
    return bool(first_run != run)


def history_missing(client: RpcClient, chain: ChainSettings, refused: int, run: str) -> bool:
    """Whether the provider keeps no state at block `refused`, whose balance it just refused (see the
    module doc). False means: hold the range and ask again (a first sighting, a recent block, a head
    that does not answer either, or no shared memory to tell one run from the next)."""
    if not far_behind(client, refused) or not _head_answers(client, chain):
        return False
    return _seen_on_an_earlier_run(
        memory_key(client),
        run,
        first_sighting=(
            f"provider {client.origin} refused the balance at old block {refused} while the head answers; asking "
            "again on the next run before taking it for a provider without historical state"
        ),
        what="old state",
    )


def untraceable(client: RpcClient, block: int, run: str) -> bool:
    """Whether block `block`'s traces, refused by every method in a range without historical state, are
    taken as unavailable: only when an earlier run saw that refusal too (else hold and ask again)."""
    return _seen_on_an_earlier_run(
        f"{memory_key(client)}:traces:{block}",
        run,
        first_sighting=(
            f"provider {client.origin} refused the call traces of block {block} by every method; asking again on "
            "the next run before publishing it unproven"
        ),
        what="traces",
    )
