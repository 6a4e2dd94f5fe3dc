"""Orchestrator probes: /live (the process answers), /ready (the database answers), /version; and /health,
the operators' view of the workers (crawler lag, price feed, reconcile), which never decides readiness."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, JsonResponse
from redis.exceptions import LockError, RedisError

from crawlers.chain.clients import PROBE_TIMEOUT
from crawlers.selectors import health_report
from dws_project import __version__
from dws_project.access import operator_allowed
from dws_project.redis_client import get_redis

logger = logging.getLogger("dws.health")


def live(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def ready(request: HttpRequest) -> JsonResponse:
    """Depends on the database only: a slow exchange or provider must not take the pod out."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception:
        logger.warning("ready probe: database unavailable", exc_info=True)
        return JsonResponse({"status": "unavailable"}, status=503)
    return JsonResponse({"status": "ok"})


def version(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"version": __version__})


REPORT_KEY = "dws:health-report"
LOCK_KEY = "dws:health-lock"
# The one computing the report asks the provider with PROBE_TIMEOUT (connect and read); the others
# wait that long and a little more for its result.
LOCK_TTL = 4 * PROBE_TIMEOUT + 2
WAIT_FOR_REPORT = 2 * PROBE_TIMEOUT + 1


def shared_report() -> dict[str, Any]:
    """The report, computed at most once per HEALTH_CACHE_SECONDS across every web process.

    /health is exempt from the rate limit, so concurrent callers that all find the cache empty must not
    each ask the provider: one takes a Redis lock and computes, the others wait for its result.
    """
    seconds = settings.HEALTH_CACHE_SECONDS
    if seconds <= 0:
        return health_report()
    report = cache.get(REPORT_KEY)
    if report is not None:
        return report
    try:
        lock = get_redis().lock(LOCK_KEY, timeout=LOCK_TTL, blocking_timeout=WAIT_FOR_REPORT, thread_local=False)
        acquired = lock.acquire()
    except RedisError as exc:
        logger.warning("health: lock unavailable (%s), computing without it", type(exc).__name__)
        return health_report()
    try:
        report = cache.get(REPORT_KEY)  # computed by the holder we waited for
        if report is None:
            if not acquired:
                # The holder is stuck beyond every time-out; say so rather than pile onto the provider.
                return {"status": "unknown"}
            report = health_report()
            cache.set(REPORT_KEY, report, seconds)
        return report
    finally:
        if acquired:
            try:
                lock.release()
            except (LockError, RedisError):
                logger.info("health: lock expired before release")


def health(request: HttpRequest) -> JsonResponse:
    """Crawler cursors against the chain, price feed age, open price requests, the last reconcile.

    The provider is asked with a short time-out; what it does not answer is reported as "unknown".
    The detail (provider host, cursors, reconcile summary) is for operators (DWS_ADMIN_ALLOWED_NETWORKS);
    anyone else gets the bare status.
    """
    report = shared_report()
    if operator_allowed(request):
        return JsonResponse(report)
    return JsonResponse({"status": report["status"]})
