"""The admin's two guards: who may reach it at all, and how often anyone may try a password.

The admin's login hashes a password (~0.5 s of CPU on the web workers that also serve the page and the
API), so it is the cheapest way to exhaust them. First, the admin answers only clients inside
DWS_ADMIN_ALLOWED_NETWORKS (`operator_allowed`, the rule every operator surface shares): anyone else
gets the numbered 404 from a middleware, before sessions, CSRF or any password hashing. Second, login
attempts are counted per client (IPv6 by /64) and per username with django-ratelimit, in the shared
Redis cache, and refused with the numbered 429 before the password is checked; with Redis away, the
process's own buckets count them at the same rates (dws_project/ratelimit.py), never none.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django_ratelimit.core import is_ratelimited

from dws_project import api_errors
from dws_project.access import operator_allowed
from dws_project.ratelimit import client_bucket, take_local

logger = logging.getLogger("dws.admin")

ADMIN_PREFIX = "/admin/"


def is_admin_path(path: str) -> bool:
    return path.startswith(ADMIN_PREFIX) or path == ADMIN_PREFIX.rstrip("/")


LOGIN_PATH = ADMIN_PREFIX + "login/"


class AdminAllowListMiddleware:
    """The admin does not exist for clients outside DWS_ADMIN_ALLOWED_NETWORKS; login attempts beyond
    their budgets are refused here too, before sessions, CSRF and the admin's own machinery run."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # The routed path (path_info): what Django dispatches on is what the rules decide on.
        if not is_admin_path(request.path_info):
            return self.get_response(request)
        if not operator_allowed(request):
            return api_errors.json_error(api_errors.NOT_FOUND)
        if request.path_info == LOGIN_PATH and request.method == "POST" and login_attempt_refused(request):
            # Django logs every 429 at WARNING already (django.request); one more line per refusal is noise.
            logger.info("admin login attempt refused: too many attempts")
            return api_errors.json_error(api_errors.RATE_LIMITED, **{"Retry-After": "60"})
        return self.get_response(request)


def _client_key(group: str, request: HttpRequest) -> str:
    return client_bucket(request)


def _username_key(group: str, request: HttpRequest) -> str:
    return request.POST.get("username", "").strip().lower()


def login_attempt_refused(request: HttpRequest) -> bool:
    """Count this login attempt per client and per username; True when either budget is spent."""
    limits = (
        ("dws-admin-login-client", _client_key, settings.DWS_ADMIN_LOGIN_RATE_PER_CLIENT),
        ("dws-admin-login-username", _username_key, settings.DWS_ADMIN_LOGIN_RATE_PER_USERNAME),
    )
    for group, key, rate in limits:
        try:
            if is_ratelimited(request, group=group, key=key, rate=rate, method="POST", increment=True):
                # Refused: the later budgets are not charged for an attempt that checks no password.
                return True
        except Exception as exc:  # noqa: BLE001 - a cache outage must not lock the operators out, nor open the door
            logger.warning(
                "admin login limit: the cache is unavailable (%s), counted by this process", type(exc).__name__
            )
            count, seconds = _split_rate(rate)
            allowed, _ = take_local(f"{group}:{key(group, request)}", rate=count / seconds, burst=count)
            if not allowed:
                return True
    return False


_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _split_rate(rate: str) -> tuple[int, int]:
    """django-ratelimit's "10/m": (10 attempts, per 60 seconds)."""
    count, unit = rate.split("/")
    return int(count), _UNIT_SECONDS[unit[-1]] * int(unit[:-1] or 1)
