"""A donation address that is a contract on one chain and nothing on another: refused on the other.

The usual presale treasury is a Safe: a contract, at an address that exists only where the Safe was
deployed. Listed for several chains, it takes money on a chain where it has no code just as well, and
nobody may ever be able to move that money (a Safe is deployed at the same address elsewhere only by the
same factory, salt and set-up). So the address's code is read on every chain that shares it: where
another chain has contract code there and this one has none, the chain is refused, with a CRITICAL line
naming it -- its crawlers hold (nothing is lost: they resume from their cursors once it is deployed) and
the page does not offer it. An EIP-7702 delegation is an account with a key, which owns its address on
every chain: it never refuses one.

What each chain's address is (its mode: plain, contract, delegated) is kept in PostgreSQL (`address_mode`),
written by whoever read the code there: a worker's start (every chain, each read in a thread of its own),
each crawler run of a chain that shares its address (its own chain's code, one `eth_getCode`), and that run
again for another sharing chain whose mode was never read. Decisions read only that table, and fail
closed: a chain that shares its address is crawled and offered only while its own mode is known and, if it
is plain, every other sharing chain's mode is known and none is a contract. A mode never read (that
chain's provider down since the deployment began, or the database away for the page) holds the chain and
hides it from the page, with the reason; nothing about it is kept in Redis, so no Redis flush, restart or
write can offer a refused chain again. A provider that does not answer changes no stored mode.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence

from django.conf import settings
from django.db import DatabaseError

from crawlers.chain.clients import make_probe_client
from crawlers.chain.outcomes import Answer
from crawlers.chain.rpc import RpcClient
from crawlers.decode.authorizations import address_mode
from crawlers.models import AddressModeKind
from crawlers.record.address_modes import address_mode_record, address_modes
from dws_project.chain_settings import ChainSettings

logger = logging.getLogger("dws.crawlers")

CONTRACT = AddressModeKind.CONTRACT.value
PLAIN = AddressModeKind.PLAIN.value
START_READ_SECONDS = 10  # how long a worker's start waits for every chain's code


def sharing(chain: ChainSettings, chains: Sequence[ChainSettings]) -> list[ChainSettings]:
    """The other configured chains whose donation address is this chain's."""
    return [c for c in chains if c.name != chain.name and c.donation_address == chain.donation_address]


def code_mode(client: RpcClient, chain: ChainSettings) -> str | None:
    """The address's mode on `chain` now, from its provider; None when the provider did not say."""
    outcome = client.call("eth_getCode", [chain.donation_address, "latest"])
    if not isinstance(outcome, Answer) or not isinstance(outcome.value, str):
        return None
    return address_mode(outcome.value)


def read_mode(client: RpcClient, chain: ChainSettings) -> str | None:
    """The address's mode on `chain` now, recorded for every decision (a contract read before stays one:
    crawlers/record/address_modes.py); None when the provider did not say (the stored mode stays as it was)."""
    mode = code_mode(client, chain)
    if mode is None:
        return None
    return address_mode_record(chain=chain.name, address=chain.donation_address, mode=mode)


def _known(chain: ChainSettings, modes: Mapping[str, tuple[str, str]]) -> str | None:
    """The stored mode of `chain`'s current donation address, or None (never read, or read for another)."""
    address, mode = modes.get(chain.name, ("", ""))
    return mode if address == chain.donation_address else None


def refusal_reason(
    chain: ChainSettings, chains: Sequence[ChainSettings], modes: Mapping[str, tuple[str, str]]
) -> str | None:
    """Why `chain` must not take donations now, from the stored modes, or None. Only a chain that shares its
    address can be refused, and only a plain one can lose money to a contract elsewhere."""
    others = sharing(chain, chains)
    if not others:
        return None
    own = _known(chain, modes)
    if own is None:
        return (
            f"the code at the donation address {chain.donation_address} on {chain.name} was never read, and "
            f"{chain.name} shares that address with {', '.join(c.name for c in others)}: {chain.name} is held "
            "until its provider answers (a Safe deployed on another chain only would make money sent here unmovable)"
        )
    if own != PLAIN:
        return None
    for other in others:
        seen = _known(other, modes)
        if seen is None:
            return (
                f"the donation address {chain.donation_address} has no code on {chain.name}, and its code on "
                f"{other.name} was never read: {chain.name} is held until {other.name}'s provider answers (were it "
                f"a Safe there, nothing sent to it on {chain.name} might ever be movable)"
            )
        if seen == CONTRACT:
            return (
                f"the donation address {chain.donation_address} is a contract on {other.name} and has no code on "
                f"{chain.name} (a Safe not deployed there?): {chain.name} is refused, nothing sent there may ever be "
                f"movable; deploy it on {chain.name} or give {chain.variable('DONATION_ADDRESS')} an address that "
                "exists there"
            )
    return None


def address_code_refusal(client: RpcClient, chain: ChainSettings) -> str | None:
    """Why this run of `chain` must hold, or None. Costs one call when another chain shares the address (and
    one more per sharing chain whose mode was never read)."""
    chains = settings.CONFIG.chains
    others = sharing(chain, chains)
    if not others:
        return None
    read_mode(client, chain)
    modes = address_modes()
    for other in others:
        if _known(other, modes) is None and read_mode(make_probe_client(other), other) is not None:
            modes = address_modes()
    return refusal_reason(chain, chains, modes)


def refused_chains() -> dict[str, str]:
    """Chain -> why it takes no donations now (for the page and /health). The database away: every chain
    that shares its address is refused (its modes cannot be read), never offered on a guess."""
    chains = settings.CONFIG.chains
    if not any(sharing(c, chains) for c in chains):
        return {}
    try:
        modes = address_modes()
    except DatabaseError as exc:
        logger.warning(
            "donation address modes unreadable (%s): chains sharing an address not offered", type(exc).__name__
        )
        return {
            c.name: f"the code at the donation address on {c.name} cannot be read back (the database is unavailable)"
            for c in chains
            if sharing(c, chains)
        }
    refused = {}
    for chain in chains:
        reason = refusal_reason(chain, chains, modes)
        if reason is not None:
            refused[chain.name] = reason
    return refused


def check_address_codes(process: str) -> dict[str, str]:
    """Read the address's code on every chain sharing it (one thread each: a slow provider delays no other),
    record what answered, and say CRITICAL for each refused chain; returns the refusals."""
    chains = settings.CONFIG.chains
    shared = [c for c in chains if sharing(c, chains)]
    read: dict[str, str | None] = {}

    def look(chain: ChainSettings) -> None:  # the node only: the database is written below, by this thread
        read[chain.name] = code_mode(make_probe_client(chain), chain)

    threads = [threading.Thread(target=look, args=(c,), name=f"dws-code-{c.name}", daemon=True) for c in shared]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=START_READ_SECONDS)
    for chain in shared:
        mode = read.get(chain.name)
        if mode is not None:
            address_mode_record(chain=chain.name, address=chain.donation_address, mode=mode)
    refused = refused_chains()
    for name, reason in refused.items():
        logger.critical("%s: chain %s: %s", process, name, reason)
    return refused
