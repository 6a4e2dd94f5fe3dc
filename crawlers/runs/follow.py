"""The head follower: the latest crawler of one chain, following the head as it moves instead of on a timer.

A Celery task per chain (`crawlers.follow_head`, (re)started by beat every few seconds) or `manage.py crawl
latest --follow` takes the chain's `latest` lock for a lease of FOLLOW_LEASE_SECONDS and, until the lease is
over, watches the head (crawlers/chain/heads.py: polled at a third of the chain's block time, or pushed by a
`newHeads` subscription where DWS_WS_URL / DWS_NAME_WS_URL is set) and runs the latest crawler as soon as a
new block is there. Each run is the same guarded run the beat's task made (`observed_run`: the crawl, its
log line, metrics and catch-up progress); a run that holds is tried again after HELD_RETRY_SECONDS, as the
beat's cadence did. When the chain's `finalized` block moves, the finalized crawler is queued at once, so a
donation is confirmed seconds after the tag covers its block instead of at the next minute's beat.

It ends between blocks, never inside one: when the lease is over (the task queues its successor at once),
when the worker is asked to stop (SIGTERM), or when the lease is lost (the lock was found to be another's).
A worker killed outright leaves a lock whose holder's PostgreSQL session is gone; the next follower takes it
over at once (dws_project/locks.py), so following resumes within beat's restart interval of the worker's
return.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from celery import current_app
from django.conf import settings

from crawlers.chain.clients import make_client
from crawlers.chain.heads import (
    HeadSource,
    PolledHeads,
    SubscribedHeads,
    SubscriptionFailed,
    learn_block_time,
    poll_interval,
)
from crawlers.chain.rpc import RpcClient
from crawlers.models import FINALIZED, LATEST
from crawlers.record.cursors import cursor_get
from crawlers.runs.cadence import run_finished
from crawlers.runs.jobs import LOCK_TTL, job_chain, observed_run
from crawlers.runs.operator import job_name
from crawlers.runs.progress import tip_note
from crawlers.runs.results import run_title
from dws_project import shutdown
from dws_project.chain_settings import ChainSettings
from dws_project.locks import DATABASE_GONE, Lease, database_gone, leased_run

logger = logging.getLogger("dws.crawlers")

# How long one follower holds the chain's latest lock before handing over to its successor (a Django
# setting, so a test can shorten it): long enough that a hand-over is rare, short enough that a deploy's
# new code follows the head within minutes.
FOLLOW_LEASE_SECONDS = float(getattr(settings, "CRAWLER_FOLLOW_LEASE", 240.0))
HELD_RETRY_SECONDS = 12.0  # a run that held is tried again after this (the beat's old cadence)
ALIVE_NOTE_SECONDS = 10.0  # how often a following crawler notes a finished run (the overdue clock)
FINALIZED_AGAIN_SECONDS = 5.0  # a finalized crawler still behind the tag is queued again after this
FINALIZED_TASK = "crawlers.crawl_finalized"

BUSY, LEASE_OVER, SHUTDOWN, LEASE_LOST, DATABASE = "busy", "lease over", "shutdown", "lease lost", "database gone"


@dataclass
class FollowResult:
    chain: str
    ended: str = ""  # BUSY (another follower holds the lock), LEASE_OVER, SHUTDOWN, LEASE_LOST, DATABASE
    runs: int = 0
    blocks: int = 0
    source: str = ""  # "poll" or "websocket"

    def summary(self) -> str:
        return f"follow {run_title(LATEST, self.chain)}: {self.ended}; {self.runs} run(s), {self.blocks} block(s)" + (
            f" ({self.source})" if self.source else ""
        )


def queue_finalized_run(chain: str) -> None:
    """Queue one run of `chain`'s finalized crawler for a worker (by the task's name: this room imports no task).
    It expires quickly: a later move of the tag queues another."""
    current_app.send_task(FINALIZED_TASK, kwargs={"chain": chain}, expires=60)


def follow_head(
    *,
    chain: str | None = None,
    seconds: float | None = None,
    on_finalized: Callable[[str], None] = queue_finalized_run,
    client: RpcClient | None = None,
) -> FollowResult:
    """Follow `chain`'s head for one lease of `seconds` (FOLLOW_LEASE_SECONDS) under its latest lock."""
    settings_ = job_chain(chain)
    with leased_run(job_name(LATEST, settings_.name), ttl=LOCK_TTL) as lease:
        if lease is None:
            return FollowResult(settings_.name, ended=BUSY)
        result = FollowResult(settings_.name)
        try:
            _follow(
                settings_,
                client or make_client(settings_),
                lease,
                seconds or FOLLOW_LEASE_SECONDS,
                on_finalized,
                result,
            )
        except DATABASE_GONE as exc:
            database_gone(f"follow {run_title(LATEST, settings_.name)}", exc)
            result.ended = DATABASE
    log = logger.warning if result.ended in (LEASE_LOST, DATABASE) else logger.info
    log("%s", result.summary())
    return result


def _head_source(chain: ChainSettings, client: RpcClient, block_time: float) -> HeadSource:
    if chain.ws_url:
        try:
            return SubscribedHeads(chain.ws_url, client, block_time=block_time)
        except SubscriptionFailed as exc:
            logger.warning("follow %s: no newHeads subscription (%s); polling", run_title(LATEST, chain.name), exc)
    return PolledHeads(client, poll_interval(block_time))


class _FinalizedKick:
    """Queues the finalized crawler when the tag moves, and again while that crawler is behind it and moving
    (a run that stopped short of the tag: the task expired, or its run read an older tag). One that stopped
    moving holds (a provider that will not answer): it is not queued again until the tag moves, so a failing
    provider is asked no more often than the finalized crawler's own beat asks it."""

    def __init__(self, chain: str, on_finalized: Callable[[str], None]) -> None:
        self._chain = chain
        self._on_finalized = on_finalized
        self._seen: int | None = None
        self._kicked_at = float("-inf")
        self._cursor_at_kick: int | None = None  # the finalized cursor when it was last queued

    def see(self, finalized: int | None) -> None:
        if finalized is None:
            return
        moved = self._seen is None or finalized > self._seen
        self._seen = finalized if self._seen is None else max(self._seen, finalized)
        if not moved and time.monotonic() - self._kicked_at < FINALIZED_AGAIN_SECONDS:
            return
        cursor = cursor_get(chain=self._chain, label=FINALIZED)
        at = cursor.value if cursor is not None else None
        if not moved and (at is None or at >= finalized or at == self._cursor_at_kick):
            return
        tip_note(self._chain, FINALIZED, finalized)
        self._on_finalized(self._chain)
        self._kicked_at = time.monotonic()
        self._cursor_at_kick = at


def _follow(
    chain: ChainSettings,
    client: RpcClient,
    lease: Lease,
    seconds: float,
    on_finalized: Callable[[str], None],
    result: FollowResult,
) -> None:
    deadline = time.monotonic() + seconds

    def stop() -> bool:
        if shutdown.requested():
            result.ended = SHUTDOWN
        elif lease.lost.is_set():
            result.ended = LEASE_LOST
        elif time.monotonic() >= deadline:
            result.ended = LEASE_OVER
        return bool(result.ended)

    title = run_title(LATEST, chain.name)
    block_time = learn_block_time(client)
    interval = poll_interval(block_time)
    source = _head_source(chain, client, block_time)
    logger.info(
        "follow %s: block time %.2f s; heads by %s (poll every %.2f s)", title, block_time, source.kind, interval
    )
    kick = _FinalizedKick(chain.name, on_finalized)
    reached = -1  # the tip the last run reached
    retry_at = 0.0  # after a hold: no run before this
    noted_at = float("-inf")
    try:
        while not stop():
            try:
                tips = source.next_tips(stop)
            except SubscriptionFailed as exc:
                logger.warning("follow %s: newHeads subscription lost (%s); polling", title, exc)
                source.close()
                source = PolledHeads(client, interval)
                continue
            if tips is None or tips.head is None:
                continue
            result.source = source.kind
            tip_note(chain.name, LATEST, tips.head)
            if time.monotonic() - noted_at >= ALIVE_NOTE_SECONDS:
                run_finished(LATEST, chain.name)  # following: the overdue clock sees it alive
                noted_at = time.monotonic()
            if tips.head > reached and time.monotonic() >= retry_at:
                reached, retry_at = _crawl_to_head(chain, client, result, stop, reached)
            kick.see(tips.finalized)
    finally:
        source.close()


def _crawl_to_head(
    chain: ChainSettings, client: RpcClient, result: FollowResult, stop: Callable[[], bool], reached: int
) -> tuple[int, float]:
    """Runs of the latest crawler until it is at the head (a catch-up takes several); (tip reached, retry time)."""
    while True:
        run = observed_run(LATEST, chain, client, note_finished=False)
        result.runs += 1
        result.blocks += run.blocks
        if run.held is not None:
            return reached, time.monotonic() + HELD_RETRY_SECONDS
        if run.tip is not None and run.cursor is not None and run.cursor >= run.tip:
            reached = run.tip
        if not run.more_to_do or stop():
            return reached, 0.0
