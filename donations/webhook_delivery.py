"""Delivering the webhook outbox: due deliveries, in order per donation, with exponential retry.

Called by the Celery task (donations.tasks.deliver_webhooks) under a non-overlap lock, never from a
crawler. A delivery is due when it is pending, its retry time has come, and no earlier delivery of the
same donation (or of the campaign) to the same endpoint is still undelivered: a later event is never
sent before the earlier one was accepted. An inactive endpoint's deliveries wait until it is active
again. Any 2xx is acceptance; anything else (another status, a
time-out, a refused connection) is retried with a doubling delay, for at least RETRY_WINDOW after the
event, then given up (an operator can redeliver it from the admin).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlsplit

import requests
from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from donations.webhook_models import DeliveryStatus, WebhookAttempt, WebhookDelivery
from donations.webhooks import SIGNATURE_HEADER, body_bytes, sign
from dws_project.redaction import redact, redact_url

logger = logging.getLogger("dws.webhooks")

RETRY_WINDOW = timedelta(hours=24)
FIRST_RETRY = timedelta(seconds=30)
MAX_RETRY_DELAY = timedelta(hours=1)
# Seconds for the connection and for the answer (the Django setting DWS_WEBHOOK_TIMEOUT overrides it).
DEFAULT_TIMEOUT = 10.0


@dataclass
class DrainResult:
    delivered: int = 0
    failed_attempts: int = 0
    gave_up: int = 0

    def summary(self) -> str:
        return f"webhooks: {self.delivered} delivered, {self.failed_attempts} failed attempts, {self.gave_up} given up"


def retry_delay(attempts: int) -> timedelta:
    """30 s, 1 min, 2 min, … capped at an hour: about 35 attempts over the first 24 hours."""
    return min(FIRST_RETRY * (2 ** max(attempts - 1, 0)), MAX_RETRY_DELAY)


def due_deliveries(now: datetime, limit: int, *, skip_endpoints: frozenset[int] = frozenset()) -> list[int]:
    earlier_pending = WebhookDelivery.objects.filter(
        endpoint_id=OuterRef("endpoint_id"), order_key=OuterRef("order_key"), event_id__lt=OuterRef("event_id")
    ).exclude(status=DeliveryStatus.DELIVERED)
    rows = (
        WebhookDelivery.objects.filter(status=DeliveryStatus.PENDING, next_attempt_at__lte=now, endpoint__active=True)
        .exclude(Exists(earlier_pending))
        .exclude(endpoint_id__in=skip_endpoints)
        .order_by("event_id", "id")
        .values_list("id", "endpoint_id")[:limit]
    )
    return [row[0] for row in rows]


def webhooks_drain(*, now: datetime | None = None, limit: int = 200, budget_seconds: float = 180.0) -> DrainResult:
    """Send every due delivery (and those an acceptance makes due), up to `limit` attempts and about
    `budget_seconds` (inside the task's time limit; the next run continues). An endpoint that fails
    once is skipped for the rest of the run, so one dead receiver does not hold up the others."""
    result = DrainResult()
    attempted: set[int] = set()
    failing: set[int] = set()
    deadline = time.monotonic() + budget_seconds
    while len(attempted) < limit and time.monotonic() < deadline:
        due = due_deliveries(now or timezone.now(), limit, skip_endpoints=frozenset(failing))
        batch = [i for i in due if i not in attempted]
        if not batch:
            break
        for delivery_id in batch[: limit - len(attempted)]:
            if time.monotonic() >= deadline:
                break
            attempted.add(delivery_id)
            endpoint_id, ok = _attempt(delivery_id, result, now)
            if endpoint_id is not None and not ok:
                failing.add(endpoint_id)
                break  # re-read what is due without that endpoint
    if result.delivered or result.failed_attempts or result.gave_up:
        logger.info("%s", result.summary())
    return result


def _attempt(delivery_id: int, result: DrainResult, now: datetime | None) -> tuple[int | None, bool]:
    """One attempt; (endpoint id, accepted), or (None, False) when another worker had the delivery."""
    with transaction.atomic():
        delivery = (
            WebhookDelivery.objects.select_for_update(skip_locked=True)
            .select_related("event", "endpoint")
            .filter(id=delivery_id, status=DeliveryStatus.PENDING)
            .first()
        )
        if delivery is None:
            return None, False  # another worker has it, or it was delivered meanwhile
        status_code, error, duration_ms = send(delivery.endpoint.url, delivery.endpoint.secret, delivery.event.payload)
        at = now or timezone.now()
        WebhookAttempt.objects.create(
            delivery=delivery, attempted_at=at, status_code=status_code, error=error, duration_ms=duration_ms
        )
        delivery.attempts += 1
        where = f"{delivery.event.event} {delivery.event.idempotency_key} to {redact_url(delivery.endpoint.url)}"
        if status_code is not None and 200 <= status_code < 300:
            delivery.status = DeliveryStatus.DELIVERED
            delivery.delivered_at = at
            result.delivered += 1
        elif at - delivery.event.created_at >= RETRY_WINDOW:
            delivery.status = DeliveryStatus.GAVE_UP
            result.gave_up += 1
            logger.error("webhook %s: gave up after %d attempts (%s)", where, delivery.attempts, error or status_code)
        else:
            delivery.next_attempt_at = at + retry_delay(delivery.attempts)
            result.failed_attempts += 1
            logger.warning("webhook %s: attempt %d failed (%s)", where, delivery.attempts, error or status_code)
        delivery.save(update_fields=["status", "attempts", "next_attempt_at", "delivered_at", "modified_at"])
        return delivery.endpoint_id, delivery.status == DeliveryStatus.DELIVERED


def send(url: str, secret: str, payload: dict, *, timeout: float | None = None) -> tuple[int | None, str, int]:
    """POST one signed body; (status code or None, error text without secrets, milliseconds)."""
    if urlsplit(url).scheme not in ("http", "https"):
        return None, "refused: not an http(s) URL", 0
    body = body_bytes(payload)
    headers = {
        "content-type": "application/json",
        "user-agent": "dws-webhooks/1",
        SIGNATURE_HEADER: sign(secret, int(time.time()), body),
    }
    started = time.monotonic()
    try:
        response = requests.post(
            url,
            data=body,
            headers=headers,
            timeout=timeout or float(getattr(settings, "DWS_WEBHOOK_TIMEOUT", DEFAULT_TIMEOUT)),
            allow_redirects=False,
            stream=True,
        )
        response.close()  # the answer's body is not ours to read
        return response.status_code, "" if response.ok else f"HTTP {response.status_code}", _ms(started)
    except requests.Timeout:
        return None, "time-out", _ms(started)
    except requests.RequestException as exc:
        # The exception text carries the URL, which may hold a token: show the kind of failure only.
        return None, redact(type(exc).__name__), _ms(started)


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


def webhook_redeliver(*, delivery_ids: list[int]) -> int:
    """An operator's redelivery: the deliveries become pending and due now (their attempts are kept)."""
    return WebhookDelivery.objects.filter(id__in=delivery_ids).update(
        status=DeliveryStatus.PENDING, next_attempt_at=timezone.now(), delivered_at=None, modified_at=timezone.now()
    )
