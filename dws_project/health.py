"""Orchestrator probes: /live (the process answers), /ready (the database answers), /version; and /health,
the operators' view of the workers (crawler lag, price feed, reconcile), which never decides readiness."""

from __future__ import annotations

import logging

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
    """
    return JsonResponse(health_report())
