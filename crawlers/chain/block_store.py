"""Fetching blocks: full blocks in one batch (with any extra calls riding along), finalized blocks through
DWS_BLOCK_CACHE, and the raw answers kept in DWS_DEBUG_DATA_STORE."""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crawlers.chain.rpc import Answer, NoEvidence, RpcClient
from crawlers.chain.rpc import Outcome as RpcOutcome
from dws_project.config import Config

logger = logging.getLogger("dws.crawlers")


# --- reading the chain ----------------------------------------------------------------------------


def write_private(directory: str, name: str, text: str) -> None:
    """Write `directory/name` readable by its owner only (0600), creating the directory on first use.

    Written to a temporary name and renamed, so a reader (or a crash) never sees half a file.
    """
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    temporary = folder / f".{name}.{os.getpid()}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # an existing file keeps its mode through O_CREAT; the umask may widen it
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    os.replace(temporary, target)


def debug_dump(config: Config, name: str, payload: object) -> None:
    """DWS_DEBUG_DATA_STORE: keep a raw provider answer for replay; a failed write never stops a crawl."""
    if not config.debug_data_store:
        return
    try:
        write_private(config.debug_data_store, name, json.dumps(payload))
    except (OSError, TypeError, ValueError) as exc:
        logger.warning("debug data store: could not write %s: %s", name, type(exc).__name__)


# --- DWS_BLOCK_CACHE: finalized blocks kept on disk ---------------------------------------------


class BlockCacheWriteError(Exception):
    """A fetched finalized block could not be written to DWS_BLOCK_CACHE: the block is retried next run."""


def _cached_block(config: Config, number: int) -> dict | None:
    """The cached copy of finalized block `number`; a copy that does not parse (or is not that block) is
    discarded, so the caller fetches it again."""
    path = Path(config.block_cache) / f"fb-{number}.json"  # type: ignore[arg-type]
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


def fetch_blocks(client: RpcClient, config: Config, numbers: Sequence[int], *, finalized: bool) -> list[RpcOutcome]:
    """Full blocks by number, in one batch; finalized ones through DWS_BLOCK_CACHE when it is set."""
    return fetch_blocks_with(client, config, numbers, finalized=finalized)[0]


def fetch_blocks_with(
    client: RpcClient,
    config: Config,
    numbers: Sequence[int],
    *,
    finalized: bool,
    extra: Sequence[tuple[str, Sequence[Any]]] = (),
) -> tuple[list[RpcOutcome], list[RpcOutcome]]:
    """Full blocks by number and the `extra` calls (the balance evidence), in one batch.

    Finalized blocks come through DWS_BLOCK_CACHE when it is set. A block fetched for the cache that
    cannot be written there comes back as NoEvidence of kind "cache-write": the caller holds it,
    exactly like a block the provider did not give.
    """
    use_cache = finalized and bool(config.block_cache)
    outcomes: dict[int, RpcOutcome] = {}
    if use_cache:
        for number in numbers:
            cached = _cached_block(config, number)
            if cached is not None:
                outcomes[number] = Answer(cached)
    missing = [n for n in numbers if n not in outcomes]
    calls = _calls(missing, extra)
    answered = client.batch(calls) if calls else []
    fetched, extra_outcomes = answered[: len(missing)], answered[len(missing) :]
    for number, outcome in zip(missing, fetched, strict=True):
        if use_cache and isinstance(outcome, Answer) and block_well_formed(outcome.value, number):
            try:
                write_private(config.block_cache, f"fb-{number}.json", json.dumps(outcome.value))  # type: ignore[arg-type]
            except OSError as exc:
                logger.error("block cache: could not write fb-%d.json (%s); block retried next run", number, exc)
                outcome = NoEvidence("eth_getBlockByNumber", "cache-write", f"fb-{number}.json: {type(exc).__name__}")
        outcomes[number] = outcome
    return [outcomes[n] for n in numbers], extra_outcomes


def _calls(numbers: Sequence[int], extra: Sequence[tuple[str, Sequence[Any]]]) -> list[tuple[str, Sequence[Any]]]:
    return [("eth_getBlockByNumber", [hex(n), True]) for n in numbers] + list(extra)


def block_calls(
    config: Config, numbers: Sequence[int], *, finalized: bool, extra: Sequence[tuple[str, Sequence[Any]]] = ()
) -> list[tuple[str, Sequence[Any]]]:
    """The batch `fetch_blocks_with` would post, judging the cache by its files alone (a read-ahead: a
    cached file found corrupt later only means the batch read ahead goes unused)."""
    if finalized and config.block_cache:
        numbers = [n for n in numbers if not (Path(config.block_cache) / f"fb-{n}.json").exists()]
    return _calls(numbers, extra)


def block_well_formed(block: object, number: int) -> bool:
    return (
        isinstance(block, dict)
        and isinstance(block.get("hash"), str)
        and isinstance(block.get("parentHash"), str)
        and isinstance(block.get("transactions"), list)
        and isinstance(block.get("number"), str)
        and int(block["number"], 16) == number
    )
