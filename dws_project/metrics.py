"""Prometheus metrics: what each process counts (the registry and its hooks). The scrape and what the
database says at scrape time are the wiring's (dws_project/metrics_collectors.py).

Several processes (Celery's prefork children, gunicorn's workers) count into one set of series through
prometheus_client's multiprocess mode: with PROMETHEUS_MULTIPROC_DIR set (before this module is
imported), every process writes its values to files in that directory and a scrape sums them. Gauges
written by the jobs use the "mostrecent" mode: the last process to set one wins, whichever it was.

The hooks below (`crawl_observed`, `rpc_observed`, `rpc_timed`, `price_cycle_observed`,
`rate_limit_refused`, `rate_limit_local`) are the only calls the rest of the code makes. They take plain
values (never a client, never a call to the node or the database) and a metric never raises into a job.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Callable, Iterable, Sequence
from typing import ParamSpec

from prometheus_client import Counter, Gauge, Histogram, multiprocess

logger = logging.getLogger("dws.metrics")

MULTIPROC_DIR_VAR = "PROMETHEUS_MULTIPROC_DIR"

# --- written by the jobs -------------------------------------------------------------------------------

CHAIN_TIP = Gauge(
    "dws_crawler_tip_block",
    "Block the crawler aimed for on its last run: the head (latest) or the finalized block (finalized).",
    ["chain", "crawler"],
    multiprocess_mode="mostrecent",
)
LAG_BLOCKS = Gauge(
    "dws_crawler_lag_blocks",
    "Blocks between the crawler's cursor and its tip at the end of its last run.",
    ["chain", "crawler"],
    multiprocess_mode="mostrecent",
)
LAG_SECONDS = Gauge(
    "dws_crawler_lag_seconds",
    "Seconds between the cursor block's timestamp and the tip block's, at the end of the last run.",
    ["chain", "crawler"],
    multiprocess_mode="mostrecent",
)
LAST_RUN = Gauge(
    "dws_crawler_last_run_timestamp_seconds",
    "Unix time the crawler's last run ended.",
    ["chain", "crawler"],
    multiprocess_mode="mostrecent",
)
BLOCKS = Counter(
    "dws_crawler_blocks", "Blocks written by the crawler (rate() gives blocks per second).", ["chain", "crawler"]
)
ROUND_TRIPS = Counter(
    "dws_crawler_round_trips", "HTTP round trips to the provider made by crawler runs.", ["chain", "crawler"]
)
HELD = Counter("dws_crawler_held", "Runs that stopped short of their tip, by reason.", ["chain", "crawler", "reason"])

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
RATE_LIMIT_LOCAL = Counter(
    "dws_ratelimit_local_decisions",
    "API requests the rate limit decided with the process's own buckets because Redis did not answer.",
)

# The held reasons, by what they ask of an operator (a free text label would explode the series).
_HELD_REASONS = (  # first match wins: the hold texts of crawlers/runs/crawl.py, ranges.py, flows.py and balances.py
    ("shutdown", "shutdown"),
    ("postgresql lock", "overlap"),
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
    ("does not say readably what it cost", "malformed"),  # a fee field that is not a quantity (decode/receipts.py)
    ("unreadable in its block", "malformed"),
    ("disagree on whether it is an op-stack deposit", "malformed"),
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


_HookParams = ParamSpec("_HookParams")


def _never_raise(func: Callable[_HookParams, None]) -> Callable[_HookParams, None]:
    @functools.wraps(func)
    def guarded(*args: _HookParams.args, **kwargs: _HookParams.kwargs) -> None:
        try:
            func(*args, **kwargs)
        except Exception:
            logger.warning("metrics hook %s failed", func.__name__, exc_info=True)

    return guarded


@_never_raise
def crawl_observed(
    *,
    chain: str,
    crawler: str,
    blocks: int,
    round_trips: int,
    held: str | None,
    tip: int | None,
    cursor: int | None,
    lag_seconds: int | None,
) -> None:
    """After a crawler run: blocks, round trips, the tip, the lag in blocks and seconds, a hold's reason."""
    BLOCKS.labels(chain, crawler).inc(blocks)
    ROUND_TRIPS.labels(chain, crawler).inc(round_trips)
    LAST_RUN.labels(chain, crawler).set(time.time())
    if held:
        HELD.labels(chain, crawler, held_reason(held)).inc()
    if tip is not None and cursor is not None:
        CHAIN_TIP.labels(chain, crawler).set(tip)
        LAG_BLOCKS.labels(chain, crawler).set(max(tip - cursor, 0))
        if lag_seconds is not None:
            LAG_SECONDS.labels(chain, crawler).set(lag_seconds)


@_never_raise
def rpc_observed(methods: Sequence[str], outcomes: Sequence[str]) -> None:
    """Each request's outcome ("answer", or the kind of no evidence), by method: a batch counts each."""
    for method, outcome in zip(methods, outcomes, strict=False):
        RPC_REQUESTS.labels(method, _RPC_OUTCOMES.get(outcome, outcome)).inc()


@_never_raise
def rpc_timed(call: str, seconds: float) -> None:
    RPC_LATENCY.labels(call).observe(seconds)


@_never_raise
def price_cycle_observed(*, used: Iterable[str], dropped: Iterable[tuple[str, str]], outcome: str) -> None:
    """A minute cycle: the venues it used, those it dropped (venue, reason), and its outcome (written,
    kept, nothing-written)."""
    for venue in used:
        VENUE_QUOTES.labels(venue, "used", "").inc()
    for venue, reason in dropped:
        VENUE_QUOTES.labels(venue, "dropped", drop_reason(reason)).inc()
    PRICE_CYCLES.labels(outcome).inc()


@_never_raise
def rate_limit_refused() -> None:
    RATE_LIMIT_REFUSALS.inc()


@_never_raise
def rate_limit_local() -> None:
    RATE_LIMIT_LOCAL.inc()


def multiprocess_enabled() -> bool:
    return bool(os.environ.get(MULTIPROC_DIR_VAR))


def process_exited(pid: int) -> None:
    """Drop a dead process's live gauges (its counters stay, summed into the totals)."""
    if multiprocess_enabled():
        multiprocess.mark_process_dead(pid)
