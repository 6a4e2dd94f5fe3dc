"""The scrape: every process's counters (dws_project/metrics.py) plus what the database says at scrape time.

Wiring, not core: it reads every app's tables. Everything the database knows (cursors, donations,
prices, reconcile, the campaign) is read when the scrape happens, by `DatabaseCollector`, so it is
right whichever process serves the scrape.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import cast

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.db.models import Count, Min
from django.utils import timezone
from prometheus_client import CollectorRegistry, multiprocess
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import REGISTRY, Collector
from redis.exceptions import RedisError

from crawlers.models import InflowStatus, LastBlock, ReconcileRun, UnexplainedInflow
from crawlers.runs.cadence import run_ages
from crawlers.runs.progress import STATES, crawler_state, tip_noted
from donations.models import CampaignStatus, Donation, DonationStats
from donations.refund_selectors import refunds_owed
from dws_project.metrics import multiprocess_enabled
from prices.models import ETH, Price, PriceRequest, PriceRequestStatus

logger = logging.getLogger("dws.metrics")

# The database gauges are computed once per this many seconds for all processes and targets (shared
# through the Redis cache): with a million donations the counts take ~0.35 s, and three targets
# scraping every 15 s must not each pay for it.
DATABASE_CACHE_KEY = "dws:metrics-database"
DATABASE_CACHE_SECONDS = 10


class DatabaseCollector(Collector):
    """Gauges read from PostgreSQL when scraped (shared for DATABASE_CACHE_SECONDS by all scrapers)."""

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("dws_metrics_database_up", "1 when the scrape could read the database.")
        try:
            families = [_family(*spec) for spec in _cached_database_specs()]
        except Exception:  # a scrape must answer, even with the database down
            logger.warning("metrics: the database could not be read", exc_info=True)
            families = []
            up.add_metric([], 0)
        else:
            up.add_metric([], 1)
        finally:
            connection.close()  # scrapes come from a server thread; never leave its connection open
        yield up
        yield from families


FamilySpec = tuple[str, str, list[str], list[tuple[list[str], float]]]


def _family(name: str, documentation: str, labels: list[str], samples: list[tuple[list[str], float]]) -> Metric:
    family = GaugeMetricFamily(name, documentation, labels=labels)
    for values, sample in samples:
        family.add_metric(values, sample)
    return family


def _cached_database_specs() -> list[FamilySpec]:
    def compute() -> list[FamilySpec]:
        return [(f.name, f.documentation, _labels(f), _samples(f)) for f in _database_families()]

    try:
        # The key holds only what compute() returned (the cache's stubs type every value as Any | None).
        return cast(list[FamilySpec], cache.get_or_set(DATABASE_CACHE_KEY, compute, DATABASE_CACHE_SECONDS))
    except RedisError:  # Redis down: the database still answers, every scrape pays for itself
        return compute()


def _labels(family: Metric) -> list[str]:
    return list(getattr(family, "_labelnames", ()))


def _samples(family: Metric) -> list[tuple[list[str], float]]:
    return [(list(sample.labels.values()), sample.value) for sample in family.samples]


def _database_families() -> Iterable[Metric]:
    now = timezone.now()
    cursor = GaugeMetricFamily(
        "dws_crawler_cursor_block", "The crawler's cursor: last block written.", labels=["chain", "crawler"]
    )
    cursor_age = GaugeMetricFamily(
        "dws_crawler_cursor_age_seconds", "Seconds since the crawler's cursor last moved.", labels=["chain", "crawler"]
    )
    state = GaugeMetricFamily(
        "dws_crawler_state",
        "1 for the crawler's state: following (within 5 blocks of its tip), catching up (behind, its cursor "
        "moving) or stuck (behind, its cursor still for minutes); the tip is the last one a run or the head "
        "follower saw. No series while no tip was seen.",
        labels=["chain", "crawler", "state"],
    )
    for chain, label, value, modified in LastBlock.objects.values_list("chain", "label", "value", "modified_at"):
        cursor.add_metric([chain, label], value)
        cursor_age.add_metric([chain, label], (now - modified).total_seconds())
        tip = tip_noted(chain, label)
        if tip is not None:
            current = crawler_state(label, cursor=value, tip=tip, since_moved=now - modified)
            for name in STATES:
                state.add_metric([chain, label, name], 1 if name == current else 0)
    yield cursor
    yield cursor_age
    yield state

    overdue = GaugeMetricFamily(
        "dws_crawler_overdue",
        "1 when the crawler job has not finished a run for several of its cadences (crawlers/runs/cadence.py).",
        labels=["chain", "crawler"],
    )
    job_age = GaugeMetricFamily(
        "dws_crawler_run_age_seconds",
        "Seconds since the crawler job last finished a run (or since a worker or beat started expecting one).",
        labels=["chain", "crawler"],
    )
    for job in run_ages(now=now):
        overdue.add_metric([job.chain, job.job], 1 if job.seconds > job.limit else 0)
        job_age.add_metric([job.chain, job.job], job.seconds)
    yield overdue
    yield job_age

    donations = GaugeMetricFamily(
        "dws_donations", "Donations on record by chain, status and asset.", labels=["chain", "status", "asset"]
    )
    for row in Donation.objects.values("chain", "status", "asset").annotate(n=Count("id")).order_by():
        donations.add_metric([row["chain"], row["status"], row["asset"]], row["n"])
    yield donations

    latest = (
        Price.objects.filter(asset=ETH, created_at__lte=now)
        .order_by("-created_at")
        .values_list("created_at", flat=True)
        .first()
    )
    age = GaugeMetricFamily("dws_price_age_seconds", "Seconds since the minute of the latest ETH price on record.")
    if latest is not None:
        age.add_metric([], (now - latest).total_seconds())
    yield age

    open_requests = PriceRequest.objects.exclude(status=PriceRequestStatus.SUCCEEDED).aggregate(
        n=Count("id"), oldest=Min("requested_at")
    )
    backlog = GaugeMetricFamily("dws_price_requests_open", "Historical price requests not yet answered.")
    backlog.add_metric([], open_requests["n"])
    yield backlog
    oldest = GaugeMetricFamily(
        "dws_price_requests_oldest_age_seconds", "Age of the oldest open price request (0 when none)."
    )
    oldest.add_metric([], (now - open_requests["oldest"]).total_seconds() if open_requests["oldest"] else 0)
    yield oldest

    inflows = GaugeMetricFamily(
        "dws_unexplained_inflows_open", "Unexplained inflows waiting for an operator.", labels=["chain"]
    )
    open_inflows = UnexplainedInflow.objects.filter(status=InflowStatus.OPEN).values("chain").annotate(n=Count("id"))
    counts = {name: 0 for name in settings.CONFIG.chain_names} | {i["chain"]: i["n"] for i in open_inflows}
    for chain, count in counts.items():
        inflows.add_metric([chain], count)
    yield inflows

    ok = GaugeMetricFamily(
        "dws_reconcile_last_ok", "1 when the chain's last reconcile found no drift, 0 when it did.", labels=["chain"]
    )
    run_age = GaugeMetricFamily(
        "dws_reconcile_last_age_seconds", "Seconds since the chain's last reconcile finished.", labels=["chain"]
    )
    found = GaugeMetricFamily(
        "dws_reconcile_last_discrepancies", "Discrepancies the chain's last reconcile reported.", labels=["chain"]
    )
    for run in ReconcileRun.objects.order_by("chain", "-finished_at").distinct("chain"):
        ok.add_metric([run.chain], 1 if run.ok else 0)
        run_age.add_metric([run.chain], (now - run.finished_at).total_seconds())
        found.add_metric([run.chain], len(run.discrepancies))
    yield from (ok, run_age, found)

    stats = DonationStats.objects.get()
    status = GaugeMetricFamily("dws_campaign_status", "1 for the campaign's current status.", labels=["status"])
    for choice in CampaignStatus.values:
        status.add_metric([choice], 1 if stats.status == choice else 0)
    yield status
    yield from _refund_families(now)


def _refund_families(now: datetime) -> Iterable[Metric]:
    """The refund register: what is owed per chain and asset (in the asset's units), and the rows owed for
    longer than DWS_REFUND_ALERT_DAYS (the DwsRefundOverdue alert)."""
    owed = GaugeMetricFamily(
        "dws_refunds_owed", "Refunds owed, in the asset's own units, per chain and asset.", labels=["chain", "asset"]
    )
    rows = GaugeMetricFamily("dws_refunds_owed_rows", "Refund register rows owed.", labels=["chain", "asset"])
    overdue = GaugeMetricFamily(
        "dws_refunds_overdue",
        "Refunds owed for longer than DWS_REFUND_ALERT_DAYS.",
        labels=["chain", "asset"],
    )
    for total in refunds_owed(now=now, alert_days=settings.CONFIG.refund_alert_days):
        owed.add_metric([total.chain, total.asset], float(total.amount))  # a gauge's value: display only
        rows.add_metric([total.chain, total.asset], total.rows)
        overdue.add_metric([total.chain, total.asset], total.overdue)
    yield from (owed, rows, overdue)


# --- the scrape ----------------------------------------------------------------------------------------


class _ThisProcess(Collector):
    """The default registry's metrics (single-process mode: this process's own counters)."""

    def collect(self) -> Iterator[Metric]:
        yield from REGISTRY.collect()


def scrape_registry() -> CollectorRegistry:
    """Every process's counters (multiprocess mode) or this process's, plus the database's gauges."""
    registry = CollectorRegistry(auto_describe=False)
    if multiprocess_enabled():
        multiprocess.MultiProcessCollector(registry)
    else:
        registry.register(_ThisProcess())
    registry.register(DatabaseCollector())
    return registry
