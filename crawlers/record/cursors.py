"""Crawler cursors (`last_block`): the last block each crawler has fully processed, moved by the crawl in
the same transaction as the block's rows, or by hand through `set_cursor` (command and admin)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from crawlers.chain.rpc import Answer, RpcClient
from crawlers.models import CHAIN, FINALIZED, LATEST, LastBlock
from crawlers.scan.ranges import make_client
from dws_project.locks import exclusive_run

logger = logging.getLogger("dws.crawlers")

LABELS = (LATEST, FINALIZED)


def cursor_get(label: str) -> LastBlock | None:
    return LastBlock.objects.filter(chain=CHAIN, label=label).first()


def cursor_set(label: str, value: int, block_hash: str | None = None) -> None:
    """One UPDATE per block on the hot path; the INSERT only on a crawler's very first run."""
    updated = LastBlock.objects.filter(chain=CHAIN, label=label).update(value=value, block_hash=block_hash)
    if not updated:
        LastBlock.objects.create(chain=CHAIN, label=label, value=value, block_hash=block_hash)


def job_name(label: str) -> str:
    """The non-overlap lock name of a crawler (its Celery task, its command and `set_cursor` share it)."""
    return f"crawl-{label}"


@dataclass(frozen=True)
class ChainTips:
    head: int | None  # None: the provider did not say (error, null, time-out)
    finalized: int | None


def chain_tips(client: RpcClient) -> ChainTips:
    """The provider's head and finalized block numbers, in one batched round trip."""
    head, final = client.batch([("eth_blockNumber", []), ("eth_getBlockByNumber", ["finalized", False])])
    head_number = int(head.value, 16) if isinstance(head, Answer) and isinstance(head.value, str) else None
    final_number = (
        int(final.value["number"], 16)
        if isinstance(final, Answer) and isinstance(final.value, dict) and isinstance(final.value.get("number"), str)
        else None
    )
    return ChainTips(head_number, final_number)


class CursorRefused(Exception):
    """`set_cursor` would not move the cursor; the message says why, for the operator."""


def set_cursor(label: str, value: int, *, operator: str, client: RpcClient | None = None) -> int | None:
    """Move a crawler's cursor (the last block it has processed) by hand; returns the previous value.

    Refused beyond the chain head (or when the provider will not say where the head is), and while a
    run of that crawler holds its lock, so the run cannot write the old position back afterwards.
    """
    if label not in LABELS:
        raise CursorRefused(f"unknown crawler {label!r}")
    if value < 0:
        raise CursorRefused("the block number must be >= 0")
    tips = chain_tips(client or make_client())
    if tips.head is None:
        raise CursorRefused("the provider did not say where its head is; try again")
    if value > tips.head:
        raise CursorRefused(f"block {value} is beyond the chain head {tips.head}")
    with exclusive_run(job_name(label)) as acquired:
        if not acquired:
            raise CursorRefused(f"the {label} crawler is running; try again in a few seconds")
        before = cursor_get(label)
        cursor_set(label, value)
    previous = before.value if before else None
    logger.warning("cursor %s moved by %s: %s -> %d (head %d)", label, operator, previous, value, tips.head)
    return previous
