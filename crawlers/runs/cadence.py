"""How often each crawler job runs, and when one is overdue: it has not finished a run for several of its
cadences. The record is in PostgreSQL (`crawler_run`), so every process sees it and a Redis flush does
not erase it; `manage.py probe worker|beat --ready` and the `dws_crawler_overdue` gauge read it.

A worker and beat, when they start, note that they expect every job to run from then (`expect_runs`): a
job that never runs (no worker consumes its queue) is overdue counted from the start, and a deployment
back from a long stop is not overdue before its jobs have had their cadences to run again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db.models.functions import Greatest
from django.utils import timezone

from crawlers.models import FINALIZED, LATEST, CrawlerRun
from crawlers.runs.old_unconfirmed import OLD_UNCONFIRMED

# Seconds between runs (the beat schedule in settings uses the same numbers).
INTERVALS = {LATEST: 12, FINALIZED: 60, OLD_UNCONFIRMED: 15 * 60}
JOBS = tuple(INTERVALS)
OVERDUE_CADENCES = 5  # runs missed in a row before a job is overdue
# Never less than the longest a single crawl run may take (its task's soft time limit): a run catching up
# for minutes has not missed its next start.
OVERDUE_FLOOR_SECONDS = 300.0


def overdue_after(job: str) -> float:
    return max(OVERDUE_CADENCES * INTERVALS[job], OVERDUE_FLOOR_SECONDS)


@dataclass(frozen=True)
class Overdue:
    chain: str
    job: str
    seconds: float  # since the last finished run, or since a worker or beat started expecting one
    limit: float
    ever_ran: bool

    def describe(self) -> str:
        last = "" if self.ever_ran else " (none since it was expected)"
        return (
            f"crawler {self.job} ({self.chain}): no run finished for {self.seconds:.0f} s{last}, "
            f"overdue after {self.limit:.0f} s ({OVERDUE_CADENCES} runs of every {INTERVALS[self.job]} s)"
        )


def expect_runs(chain: str, *, now: datetime | None = None) -> None:
    """From now on every job of `chain` is expected to run: its overdue clock restarts now."""
    now = now or timezone.now()
    for job in JOBS:
        CrawlerRun.objects.update_or_create(chain=chain, job=job, defaults={"expected_since": now})


def run_finished(job: str, chain: str, *, now: datetime | None = None) -> None:
    CrawlerRun.objects.update_or_create(chain=chain, job=job, defaults={"last_finished_at": now or timezone.now()})


def run_ages(*, now: datetime | None = None) -> list[Overdue]:
    """Every expected job with its age; `overdue_jobs` keeps those past their limit."""
    now = now or timezone.now()
    # A chain taken out of DWS_CHAINS keeps its rows (its runs' history) but is expected to run no more.
    configured = CrawlerRun.objects.filter(chain__in=settings.CONFIG.chain_names)
    rows = configured.annotate(reference=Greatest("expected_since", "last_finished_at")).order_by("chain", "job")
    ages = []
    for row in rows:
        if row.job not in INTERVALS:
            continue
        reference = row.reference  # the later of the last finished run and the last start expecting one
        ages.append(
            Overdue(
                chain=row.chain,
                job=row.job,
                seconds=max((now - reference).total_seconds(), 0.0),
                limit=overdue_after(row.job),
                ever_ran=row.last_finished_at is not None,
            )
        )
    return ages


def overdue_jobs(*, now: datetime | None = None) -> list[Overdue]:
    return [age for age in run_ages(now=now) if age.seconds > age.limit]
