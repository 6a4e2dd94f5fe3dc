"""Orchestrator probes: /live (the process answers), /ready (the database answers), /version; and /health,
the operators' view of the workers (crawler lag, price feed, reconcile), which never decides readiness."""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, JsonResponse

from crawlers.status import health_report
from dws_project import __version__

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


def health(request: HttpRequest) -> JsonResponse:
    """Crawler cursors against the chain, price feed age, open price requests, the last reconcile.

    The provider is asked with a short time-out; what it does not answer is reported as "unknown".
    The report is shared by all web processes for HEALTH_CACHE_SECONDS: /health is exempt from the
    rate limit, and a client polling it hard must not spend the provider budget the crawlers need.
    """
    seconds = settings.HEALTH_CACHE_SECONDS
    if seconds <= 0:
        return JsonResponse(health_report())
    return JsonResponse(cache.get_or_set("dws:health-report", health_report, seconds))
