"""A donation address that is a contract on one chain and nothing on another: refused on the other.

The usual presale treasury is a Safe: a contract, at an address that exists only where the Safe was
deployed. Listed for several chains, it takes money on a chain where it has no code just as well, and
nobody may ever be able to move that money (a Safe is deployed at the same address elsewhere only by the
same factory, salt and set-up). So the address's code is read on every chain that shares it: where
another chain has contract code there and this one has none, the chain is refused, with a CRITICAL line
naming it -- its crawlers hold (nothing is lost: they resume from their cursors once it is deployed) and
the page does not offer it. An EIP-7702 delegation is an account with a key, which owns its address on
every chain: it never refuses one.

Each chain's code is read at a worker's start (every chain, in a thread) and by each of its crawler runs
(one `eth_getCode` when the address is shared), and kept in Redis for the other chains' runs and the web
tier. No answer is no evidence: nothing is refused on it.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence

from django.conf import settings
from redis.exceptions import RedisError

from crawlers.chain.clients import make_probe_client
from crawlers.chain.outcomes import Answer
from crawlers.chain.rpc import RpcClient
from crawlers.decode.authorizations import address_mode
from dws_project.chain_settings import ChainSettings
from dws_project.redis_client import get_redis

logger = logging.getLogger("dws.crawlers")

KEY = "dws:address-code"  # hash: chain -> {"address": ..., "mode": plain | contract | delegated}
CONTRACT = "contract"
PLAIN = "plain"


def sharing(chain: ChainSettings, chains: Sequence[ChainSettings]) -> list[ChainSettings]:
    """The other configured chains whose donation address is this chain's."""
    return [c for c in chains if c.name != chain.name and c.donation_address == chain.donation_address]


def read_mode(client: RpcClient, chain: ChainSettings) -> str | None:
    """The address's mode on `chain` now, noted for the others; None when the provider did not say."""
    outcome = client.call("eth_getCode", [chain.donation_address, "latest"])
    if not isinstance(outcome, Answer) or not isinstance(outcome.value, str):
        return None
    mode = address_mode(outcome.value)
    try:
        get_redis().hset(KEY, chain.name, json.dumps({"address": chain.donation_address, "mode": mode}))
    except RedisError as exc:
        logger.warning("donation address code of %s not shared: %s", chain.name, type(exc).__name__)
    return mode


def known_modes() -> dict[str, dict]:
    try:
        raw = get_redis().hgetall(KEY)
    except RedisError:
        return {}
    modes = {}
    for name, value in raw.items():
        try:
            modes[name.decode() if isinstance(name, bytes) else name] = json.loads(value)
        except (ValueError, TypeError):
            continue
    return modes


def refusal_reason(chain: ChainSettings, mode: str | None, chains: Sequence[ChainSettings]) -> str | None:
    """Why `chain` is refused, given its address's `mode` there and what the other chains noted."""
    if mode != PLAIN:
        return None
    noted = known_modes()
    for other in sharing(chain, chains):
        seen = noted.get(other.name)
        if seen and seen.get("address") == chain.donation_address and seen.get("mode") == CONTRACT:
            return (
                f"the donation address {chain.donation_address} is a contract on {other.name} and has no code on "
                f"{chain.name} (a Safe not deployed there?): {chain.name} is refused, nothing sent there may ever be "
                f"movable; deploy it on {chain.name} or give {chain.variable('DONATION_ADDRESS')} an address that "
                "exists there"
            )
    return None


def address_code_refusal(client: RpcClient, chain: ChainSettings) -> str | None:
    """Why this run of `chain` must hold (its address is a contract elsewhere and nothing here), or None.
    Costs one call only when another chain shares the address."""
    chains = settings.CONFIG.chains
    if not sharing(chain, chains):
        return None
    return refusal_reason(chain, read_mode(client, chain), chains)


def refused_chains() -> dict[str, str]:
    """Chain -> why it is refused, from what the runs and the start noted (for the page and /health)."""
    chains = settings.CONFIG.chains
    noted = known_modes()
    refused = {}
    for chain in chains:
        seen = noted.get(chain.name)
        if not seen or seen.get("address") != chain.donation_address:
            continue
        reason = refusal_reason(chain, seen.get("mode"), chains)
        if reason is not None:
            refused[chain.name] = reason
    return refused


def check_address_codes(process: str) -> dict[str, str]:
    """Read the address's code on every chain sharing it (one thread each: a slow provider delays no
    other) and say CRITICAL for each refused chain; returns the refusals."""
    chains = settings.CONFIG.chains
    shared = [c for c in chains if sharing(c, chains)]
    threads = [
        threading.Thread(target=read_mode, args=(make_probe_client(c), c), name=f"dws-code-{c.name}", daemon=True)
        for c in shared
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    refused = refused_chains()
    for name, reason in refused.items():
        logger.critical("%s: chain %s: %s", process, name, reason)
    return refused
