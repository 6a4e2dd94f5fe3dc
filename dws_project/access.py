"""Who may see operator surfaces: the admin, /health's detail and /metrics.

One rule, used by every place that guards an operator surface: the client (as the rate limiter sees it,
so X-Forwarded-For counts only from DWS_TRUSTED_PROXIES) must be inside DWS_ADMIN_ALLOWED_NETWORKS.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest

from dws_project.ip import in_networks
from dws_project.ratelimit import client_address


def operator_allowed(request: HttpRequest) -> bool:
    """True when the request comes from a network allowed to reach operator surfaces."""
    config = settings.CONFIG
    return in_networks(client_address(request, config.trusted_proxies), config.admin_allowed_networks)
