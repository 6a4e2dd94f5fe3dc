"""Prometheus metrics: what each process counts, what the database says at scrape time, and the scrape.

Several processes (Celery's prefork children, gunicorn's workers) count into one set of series through
prometheus_client's multiprocess mode: with PROMETHEUS_MULTIPROC_DIR set (before this module is
imported), every process writes its values to files in that directory and a scrape sums them. Gauges
written by the jobs use the "mostrecent" mode: the last process to set one wins, whichever it was.

Everything the database knows (cursors, donations, prices, reconcile, the campaign) is read when the
scrape happens, by `DatabaseCollector`, so it is right whichever process serves the scrape.

The hooks below (`crawl_observed`, `rpc_observed`, `price_cycle_observed`, `rate_limit_refused`) are
the only calls the rest of the code makes; a metric never raises into a job.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, multiprocess
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import REGISTRY, Collector

if TYPE_CHECKING:
    from crawlers.chain.rpc import Outcome, RpcClient
    from crawlers.runs.crawl import CrawlResult
    from prices.services import CycleResult

logger = logging.getLogger("dws.metrics")

MULTIPROC_DIR_VAR = "PROMETHEUS_MULTIPROC_DIR"

# --- written by the jobs -------------------------------------------------------------------------------

CHAIN_TIP = Gauge(
    "dws_crawler_tip_block",
    "Block the crawler aimed for on its last run: the head (latest) or the finalized block (finalized).",
    ["crawler"],
    multiprocess_mode="mostrecent",
)
LAG_BLOCKS = Gauge(
    "dws_crawler_lag_blocks",
    "Blocks between the crawler's cursor and its tip at the end of its last run.",
    ["crawler"],
    multiprocess_mode="mostrecent",
)
LAG_SECONDS = Gauge(
    "dws_crawler_lag_seconds",
    "Seconds between the cursor block's timestamp and the tip block's, at the end of the last run.",
    ["crawler"],
    multiprocess_mode="mostrecent",
)
LAST_RUN = Gauge(
    "dws_crawler_last_run_timestamp_seconds",
    "Unix time the crawler's last run ended.",
    ["crawler"],
    multiprocess_mode="mostrecent",
)
BLOCKS = Counter("dws_crawler_blocks", "Blocks written by the crawler (rate() gives blocks per second).", ["crawler"])
ROUND_TRIPS = Counter("dws_crawler_round_trips", "HTTP round trips to the provider made by crawler runs.", ["crawler"])
HELD = Counter("dws_crawler_held", "Runs that stopped short of their tip, by reason.", ["crawler", "reason"])

RPC_REQUESTS = Counter(
    "dws_rpc_requests",
    "JSON-RPC requests to the provider by method and outcome "
    "(answer, null, error, 429, timeout, connection, http, malformed, backoff).",
    ["method", "outcome"],
)
RPC_LATENCY = Histogram(
    "dws_rpc_request_seconds",
    "Duration of one HTTP round trip to the provider (call = the method, or 'batch').",
    ["call"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 15, 30),
)

VENUE_QUOTES = Counter(
    "dws_price_venue_quotes",
    "Venue quotes in the minute price cycle: used, or dropped with a reason.",
    ["venue", "outcome", "reason"],
)
PRICE_CYCLES = Counter(
    "dws_price_cycles", "Minute price cycles by outcome (written, kept, nothing-written).", ["outcome"]
)

RATE_LIMIT_REFUSALS = Counter("dws_ratelimit_refusals", "API requests refused by the per-client rate limit (429).")

# The held reasons, by what they ask of an operator (a free text label would explode the series).
_HELD_REASONS = (  # first match wins: the hold texts of crawlers/runs/crawl.py, ranges.py and balances.py
    ("shutdown", "shutdown"),
    ("eth_getlogs answered short", "logs-short"),
    ("no balance evidence", "no-evidence"),
    ("left the donation address", "balance-mismatch"),
    ("nonce moved", "balance-mismatch"),
    ("the call traces show", "balance-mismatch"),
    ("dws_block_cache", "block-cache"),
    ("does not build on the finalized", "finalized-mismatch"),
    ("re-org", "reorg"),
    ("eth price", "price-missing"),
    ("malformed", "malformed"),
    ("behind our cursor", "node-behind"),
    ("no evidence", "no-evidence"),
    ("no block from", "no-evidence"),
    ("no transfer logs", "no-evidence"),
    ("no tx receipt", "no-evidence"),
)
_DROP_REASONS = (
    ("non-positive", "non-positive"),
    ("below quorum", "below-quorum"),
    ("deviates", "deviation"),
    ("too few", "too-few-survived"),
)
_RPC_OUTCOMES = {"rate-limited": "429", "timeout": "timeout"}


def held_reason(text: str) -> str:
    lowered = text.lower()
    return next((label for needle, label in _HELD_REASONS if needle in lowered), "other")


def drop_reason(text: str) -> str:
    return next((label for needle, label in _DROP_REASONS if needle in text), "no-quote")


def _never_raise(func):
    @functools.wraps(func)
    def guarded(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except Exception:
            logger.warning("metrics hook %s failed", func.__name__, exc_info=True)
            return None

    return guarded


@_never_raise
def crawl_observed(result: CrawlResult | None, *, client: RpcClient, trips_before: int) -> None:
    """After a crawler run: blocks, round trips, the tip, the lag in blocks and seconds, a hold's reason."""
    if result is None:  # another run held the lock
        return
    label = result.label
    BLOCKS.labels(label).inc(result.blocks)
    ROUND_TRIPS.labels(label).inc(client.round_trips - trips_before)
    LAST_RUN.labels(label).set(time.time())
    if result.held:
        HELD.labels(label, held_reason(result.held)).inc()
    if result.tip is not None and result.cursor is not None:
        CHAIN_TIP.labels(label).set(result.tip)
        lag = max(result.tip - result.cursor, 0)
        LAG_BLOCKS.labels(label).set(lag)
        seconds = 0 if lag == 0 else _seconds_between(client, result.cursor, result.tip)
        if seconds is not None:
            LAG_SECONDS.labels(label).set(seconds)


def _seconds_between(client: RpcClient, first: int, last: int) -> int | None:
    """The timestamps of two blocks, in one round trip."""
    from crawlers.chain.rpc import Answer

    outcomes = client.batch([("eth_getBlockByNumber", [hex(n), False]) for n in (first, last)])
    stamps = [int(o.value["timestamp"], 16) for o in outcomes if isinstance(o, Answer) and isinstance(o.value, dict)]
    return stamps[1] - stamps[0] if len(stamps) == 2 else None


@_never_raise
def rpc_observed(methods: Sequence[str], outcomes: Sequence[Outcome]) -> None:
    """Each request's outcome, by method: a batch counts each of its requests."""
    from crawlers.chain.rpc import NoEvidence

    for method, outcome in zip(methods, outcomes, strict=False):
        label = _RPC_OUTCOMES.get(outcome.kind, outcome.kind) if isinstance(outcome, NoEvidence) else "answer"
        RPC_REQUESTS.labels(method, label).inc()


@_never_raise
def rpc_timed(call: str, seconds: float) -> None:
    RPC_LATENCY.labels(call).observe(seconds)


@_never_raise
def price_cycle_observed(result: CycleResult | None) -> None:
    """The venues a minute cycle used and dropped (by reason), and whether it wrote the minute."""
    if result is None:
        return
    for quote in result.aggregate.used:
        VENUE_QUOTES.labels(quote.venue, "used", "").inc()
    for dropped in result.aggregate.dropped:
        VENUE_QUOTES.labels(dropped.venue, "dropped", drop_reason(dropped.reason)).inc()
    if result.written:
        outcome = "written"
    elif result.aggregate.price is not None:
        outcome = "kept"
    else:
        outcome = "nothing-written"
    PRICE_CYCLES.labels(outcome).inc()


@_never_raise
def rate_limit_refused() -> None:
    RATE_LIMIT_REFUSALS.inc()


# --- read from the database at scrape time -------------------------------------------------------------


# The database gauges are computed once per this many seconds for all processes and targets (shared
# through the Redis cache): with a million donations the counts take ~0.35 s, and three targets
# scraping every 15 s must not each pay for it.
DATABASE_CACHE_KEY = "dws:metrics-database"
DATABASE_CACHE_SECONDS = 10


class DatabaseCollector(Collector):
    """Gauges read from PostgreSQL when scraped (shared for DATABASE_CACHE_SECONDS by all scrapers)."""

    def collect(self) -> Iterator[Metric]:
        from django.db import connection

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
    from django.core.cache import cache
    from redis.exceptions import RedisError

    def compute() -> list[FamilySpec]:
        return [(f.name, f.documentation, _labels(f), _samples(f)) for f in _database_families()]

    try:
        return cache.get_or_set(DATABASE_CACHE_KEY, compute, DATABASE_CACHE_SECONDS)
    except RedisError:  # Redis down: the database still answers, every scrape pays for itself
        return compute()


def _labels(family: Metric) -> list[str]:
    return list(getattr(family, "_labelnames", ()))


def _samples(family: Metric) -> list[tuple[list[str], float]]:
    return [(list(sample.labels.values()), sample.value) for sample in family.samples]


def _database_families() -> Iterable[Metric]:
    from django.db.models import Count, Min
    from django.utils import timezone

    from crawlers import models as crawler_models
    from crawlers.models import LastBlock, ReconcileRun
    from donations.models import CampaignStatus, Donation, DonationStats
    from prices.models import ETH, Price, PriceRequest, PriceRequestStatus

    now = timezone.now()
    cursor = GaugeMetricFamily(
        "dws_crawler_cursor_block", "The crawler's cursor: last block written.", labels=["crawler"]
    )
    cursor_age = GaugeMetricFamily(
        "dws_crawler_cursor_age_seconds", "Seconds since the crawler's cursor last moved.", labels=["crawler"]
    )
    for label, value, modified in LastBlock.objects.values_list("label", "value", "modified_at"):
        cursor.add_metric([label], value)
        cursor_age.add_metric([label], (now - modified).total_seconds())
    yield cursor
    yield cursor_age

    donations = GaugeMetricFamily(
        "dws_donations", "Donations on record by status and asset.", labels=["status", "asset"]
    )
    for row in Donation.objects.values("status", "asset").annotate(n=Count("id")).order_by():
        donations.add_metric([row["status"], row["asset"]], row["n"])
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

    inflows = GaugeMetricFamily("dws_unexplained_inflows_open", "Unexplained inflows waiting for an operator.")
    inflows.add_metric([], _open_unexplained_inflows(getattr(crawler_models, "UnexplainedInflow", None)))
    yield inflows

    run = ReconcileRun.objects.order_by("-finished_at").first()
    ok = GaugeMetricFamily("dws_reconcile_last_ok", "1 when the last reconcile found no drift, 0 when it did.")
    run_age = GaugeMetricFamily("dws_reconcile_last_age_seconds", "Seconds since the last reconcile finished.")
    found = GaugeMetricFamily("dws_reconcile_last_discrepancies", "Discrepancies the last reconcile reported.")
    if run is not None:
        ok.add_metric([], 1 if run.ok else 0)
        run_age.add_metric([], (now - run.finished_at).total_seconds())
        found.add_metric([], len(run.discrepancies))
    yield from (ok, run_age, found)

    stats = DonationStats.objects.get()
    status = GaugeMetricFamily("dws_campaign_status", "1 for the campaign's current status.", labels=["status"])
    for choice in CampaignStatus.values:
        status.add_metric([choice], 1 if stats.status == choice else 0)
    yield status


def _open_unexplained_inflows(model: type | None) -> int:
    """Open ones when the model (another branch's work) exists; 0 before it does."""
    if model is None:
        return 0
    fields = {f.name for f in model._meta.get_fields()}
    queryset = model.objects.all()
    for name in ("resolved_at", "explained_at", "closed_at"):
        if name in fields:
            return queryset.filter(**{f"{name}__isnull": True}).count()
    if "status" in fields:
        return queryset.filter(status="open").count()
    return queryset.count()


# --- the scrape ----------------------------------------------------------------------------------------


class _ThisProcess(Collector):
    """The default registry's metrics (single-process mode: this process's own counters)."""

    def collect(self) -> Iterator[Metric]:
        yield from REGISTRY.collect()


def multiprocess_enabled() -> bool:
    return bool(os.environ.get(MULTIPROC_DIR_VAR))


def scrape_registry() -> CollectorRegistry:
    """Every process's counters (multiprocess mode) or this process's, plus the database's gauges."""
    registry = CollectorRegistry(auto_describe=False)
    if multiprocess_enabled():
        multiprocess.MultiProcessCollector(registry)
    else:
        registry.register(_ThisProcess())
    registry.register(DatabaseCollector())
    return registry


def process_exited(pid: int) -> None:
    """Drop a dead process's live gauges (its counters stay, summed into the totals)."""
    if multiprocess_enabled():
        multiprocess.mark_process_dead(pid)


def serve(port: int, host: str) -> None:
    """The worker's scrape endpoint: a small HTTP server thread in the worker's main process."""
    from prometheus_client import start_http_server

    start_http_server(port, addr=host, registry=scrape_registry())
    logger.info("metrics served on http://%s:%d/metrics", host, port)
