"""Celery shells over the price service: a lock, one service call, a one-line outcome."""

from __future__ import annotations

import logging

from celery import shared_task

from dws_project import metrics
from dws_project.locks import held_while_database_gone, non_overlapping
from prices import requests, services

logger = logging.getLogger("dws.prices.tasks")

FETCH_PRICES_JOB = "fetch-prices"
SERVE_PRICE_REQUESTS_JOB = "serve-price-requests"
# Lock TTLs: a run's lock is extended while it works; these only bound how long a crashed holder
# keeps the next run out.
FETCH_PRICES_LOCK_TTL = 60.0
SERVE_PRICE_REQUESTS_LOCK_TTL = 30.0


@held_while_database_gone(FETCH_PRICES_JOB)
@non_overlapping(FETCH_PRICES_JOB, ttl=FETCH_PRICES_LOCK_TTL)
def run_fetch_prices() -> services.CycleResult:
    return services.fetch_prices()


@held_while_database_gone(SERVE_PRICE_REQUESTS_JOB)
@non_overlapping(SERVE_PRICE_REQUESTS_JOB, ttl=SERVE_PRICE_REQUESTS_LOCK_TTL)
def run_serve_price_requests() -> requests.ServeResult:
    return requests.serve_price_requests()


@shared_task(name="prices.fetch_prices", ignore_result=True, soft_time_limit=50, time_limit=58)
def fetch_prices() -> None:
    result = run_fetch_prices()
    if result is not None:
        metrics.price_cycle_observed(
            used=[q.venue for q in result.aggregate.used],
            dropped=[(d.venue, d.reason) for d in result.aggregate.dropped],
            outcome=result.outcome,
        )
        logger.info("fetch_prices: minute %s written=%s", result.minute.isoformat(), result.written)


# A poll stops claiming after POLL_BUDGET_SECONDS; one request then costs at most four venue time-outs.
@shared_task(name="prices.serve_price_requests", ignore_result=True, soft_time_limit=240, time_limit=270)
def serve_price_requests() -> None:
    result = run_serve_price_requests()
    if result is not None and result.claimed:
        logger.info(
            "serve_price_requests: %d claimed, %d succeeded, %d failed",
            result.claimed,
            result.succeeded,
            result.failed,
        )
