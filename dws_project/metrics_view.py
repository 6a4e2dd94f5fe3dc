"""`GET /metrics`: the Prometheus scrape of the web processes, for operator networks only (wiring)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from dws_project import api_errors
from dws_project.access import operator_allowed
from dws_project.metrics_collectors import scrape_registry


def metrics_endpoint(request: HttpRequest) -> HttpResponse:
    """Everyone outside DWS_ADMIN_ALLOWED_NETWORKS gets the numbered 404: the surface is not advertised."""
    if not operator_allowed(request):
        return api_errors.json_error(api_errors.NOT_FOUND)
    return HttpResponse(generate_latest(scrape_registry()), content_type=CONTENT_TYPE_LATEST)
