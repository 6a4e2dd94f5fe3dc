"""The daily reconcile: a day of each chain, by time, in as many runs as it takes.

A day is the chain's blocks of the last 24 hours, found from their timestamps, never a count of blocks: a
day on Ethereum is ~7,200 blocks, on a 2-second rollup ~43,200, on Arbitrum ~345,600. Its first block is
the first whose timestamp is less than 24 hours before the finalized block's, found by a bounded search
(block timestamps never go back; each level asks up to 7 headers in one batch and narrows the interval
eightfold, so a chain of a billion blocks takes ten round trips).

A run checks at most DAILY_RUN_BLOCKS of the day (one run's work, within the task's time limit); the
task queues the next run at once until the day is covered through the finalized block it was found
from. A day continues where the chain's last daily run stopped (yesterday's last run and today's first
meet; a day a lagging crawler cut short resumes), never before the day's first block (older blocks are
the finalized crawler's own proof and checkpoints to check) nor before the chain's start block.

Each run is stored (trigger "daily") with the day it is covering; /health shows per chain through which
block and when it was last reconciled, and whether its day is covered (crawlers/selectors.py).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings

from crawlers.chain.calls import header_call
from crawlers.chain.clients import make_reconcile_client
from crawlers.chain.outcomes import Answer
from crawlers.chain.rpc import RpcClient
from crawlers.decode.balances import split_points
from crawlers.decode.blocks import BlockHeader, header_of
from crawlers.models import ReconcileRun
from crawlers.runs.reconcile import ReconcileError, ReconcileReport, check_chain_served, reconcile
from dws_project.chain_settings import ChainSettings
from dws_project.config import Config

logger = logging.getLogger("dws.crawlers")

DAILY = "daily"
DAY = timedelta(hours=24)
DAILY_RUN_BLOCKS = 7200  # the most one daily run checks: a day of Ethereum's blocks; a rollup's takes several
SEARCH_LEVELS = 40  # bounds the search for the day's first block (ten levels cover a billion blocks)


@dataclass(frozen=True)
class DailyRun:
    """One daily run: its report (None: nothing new to check) and whether the day needs another run."""

    report: ReconcileReport | None
    more_to_do: bool = False


def _header(client: RpcClient, block: int | str) -> BlockHeader:
    outcome = client.call(*header_call(block))
    header = header_of(outcome.value) if isinstance(outcome, Answer) else None
    if header is None:
        raise ReconcileError(f"the provider gave no evidence for block {block}'s header; try again")
    return header


def day_first_block(client: RpcClient, last: BlockHeader, floor: int) -> int:
    """The first block of `floor`..`last.number` whose timestamp is less than a day before `last`'s."""
    since: datetime = last.time - DAY
    low, high = floor - 1, last.number  # blocks up to `low` are older than a day (or before `floor`)
    for _ in range(SEARCH_LEVELS):
        if high - low <= 1:
            return high
        points = split_points(low, high)
        outcomes = client.batch([header_call(point) for point in points])
        times = {}
        for point, outcome in zip(points, outcomes, strict=True):
            header = header_of(outcome.value, point) if isinstance(outcome, Answer) else None
            if header is None:
                raise ReconcileError(f"the provider gave no evidence for block {point}'s time; try again")
            times[point] = header.time
        high = next((point for point in points if times[point] > since), high)
        low = max((point for point in points if point < high), default=low)
    raise ReconcileError(f"the first block of the day before block {last.number} was not found; try again")


def _last_daily(chain: str) -> ReconcileRun | None:
    return ReconcileRun.objects.filter(chain=chain, trigger=DAILY).order_by("-finished_at", "-id").first()


def reconcile_last_day(
    *,
    chain: str | None = None,
    config: Config | None = None,
    client: RpcClient | None = None,
    max_blocks: int = DAILY_RUN_BLOCKS,
) -> DailyRun:
    """One daily run of `chain` (the first when None): the next at most `max_blocks` of its last day."""
    config = config or settings.CONFIG
    chain_ = config.chain(chain) if chain else config.first_chain
    return _run(chain_, client or make_reconcile_client(chain_), max_blocks)


def _run(chain: ChainSettings, client: RpcClient, max_blocks: int) -> DailyRun:
    check_chain_served(client, chain)
    finalized = _header(client, "finalized")
    first_of_day = day_first_block(client, finalized, max(chain.start_block or 0, 0))
    first = first_of_day
    last = _last_daily(chain.name)
    if last is not None and first_of_day - 1 <= last.to_block:
        first = last.to_block + 1  # the day goes on where the last daily run stopped
    if first > finalized.number:
        logger.info("reconcile %s: its day through block %d is reconciled already", chain.name, finalized.number)
        return DailyRun(None)
    to = min(finalized.number, first + max_blocks - 1)
    logger.info(
        "reconcile %s: its day is blocks %d..%d (by their timestamps); this run checks %d..%d",
        chain.name,
        first_of_day,
        finalized.number,
        first,
        to,
    )
    report = reconcile(first, to, chain=chain.name, client=client, trigger=DAILY, day=(first_of_day, finalized.number))
    # Cut short by the crawler (not crawled that far yet): the next day's run goes on from there.
    return DailyRun(report, more_to_do=to < finalized.number and report.to_block == to)
