"""Delivering the webhook outbox: due deliveries, in order per donation, with exponential retry.

Run by the Celery task donations.deliver_webhooks (its own queue, under a non-overlap lock), never from
a crawler. A delivery is due when it is pending, its retry time has come, and no earlier delivery of
the same donation (or of the campaign) to the same endpoint is still undelivered: a later event is never
sent before the earlier one was accepted. An inactive endpoint's deliveries wait until it is active
again. Any 2xx is acceptance; anything else is retried with a doubling delay, for at least
RETRY_WINDOW after the event, then given up (an operator can redeliver it from the admin).

Each attempt is three steps, and only the first and the last touch the database, each in its own short
transaction: claim (a conditional UPDATE pushes the retry time out by a lease, so no other run takes it
and a worker that dies mid-send leaves it due again once the lease ends), send (outside any transaction,
through dws_project/egress.py: one hard deadline for the whole exchange, public addresses only, the
connection made to the address that was checked), record (the attempt, and delivered / retry / given
up). Whatever goes wrong in between — a time-out, a refused address, a secret that does not decrypt, the
task's own soft time limit — is a failed attempt that moves the retry, never a delivery left first in
line with nothing written down.

Endpoints are served side by side: each has at most one send in flight, in a thread of its own, so a
slow or dead receiver costs the others nothing. The sends run in threads; the database work stays in
the calling thread.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone

from donations.webhook_models import DeliveryStatus, WebhookAttempt, WebhookDelivery, WebhookEndpoint
from donations.webhooks import SIGNATURE_HEADER, body_bytes, sign
from dws_project import egress
from dws_project.redaction import redact, redact_url
from dws_project.secret_box import SecretsKeyMissing, SecretUnreadable

logger = logging.getLogger("dws.webhooks")

RETRY_WINDOW = timedelta(hours=24)
FIRST_RETRY = timedelta(seconds=30)
MAX_RETRY_DELAY = timedelta(hours=1)
# The whole of one attempt, connection to answer (the Django setting DWS_WEBHOOK_TIMEOUT overrides it).
DEFAULT_TIMEOUT = 10.0
# A claimed delivery is not due again for this long (beyond the attempt's own deadline).
CLAIM_LEASE_MARGIN = timedelta(seconds=60)
MAX_PARALLEL_ENDPOINTS = 16
MAX_ANSWER_BYTES = 0  # a receiver's answer body is not ours to read
EXIT_SECRETS_KEY = 5  # a worker's exit code when DWS_SECRETS_KEY cannot read the stored secrets


@dataclass
class DrainResult:
    delivered: int = 0
    failed_attempts: int = 0
    gave_up: int = 0

    def summary(self) -> str:
        return f"webhooks: {self.delivered} delivered, {self.failed_attempts} failed attempts, {self.gave_up} given up"


@dataclass(frozen=True)
class Sent:
    """What one send came back with: the status (None: no answer) and an error text safe to store."""

    status_code: int | None
    error: str
    duration_ms: int

    @property
    def accepted(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


def attempt_timeout() -> float:
    return float(getattr(settings, "DWS_WEBHOOK_TIMEOUT", DEFAULT_TIMEOUT))


def retry_delay(attempts: int) -> timedelta:
    """30 s, 1 min, 2 min, … capped at an hour: about 35 attempts over the first 24 hours."""
    return min(FIRST_RETRY * (2 ** max(attempts - 1, 0)), MAX_RETRY_DELAY)


def _due(now: datetime) -> QuerySet[WebhookDelivery]:
    earlier_pending = WebhookDelivery.objects.filter(
        endpoint_id=OuterRef("endpoint_id"), order_key=OuterRef("order_key"), event_id__lt=OuterRef("event_id")
    ).exclude(status=DeliveryStatus.DELIVERED)
    return WebhookDelivery.objects.filter(
        status=DeliveryStatus.PENDING, next_attempt_at__lte=now, endpoint__active=True
    ).exclude(Exists(earlier_pending))


def due_deliveries(now: datetime, limit: int, *, skip_endpoints: frozenset[int] = frozenset()) -> list[int]:
    rows = _due(now).exclude(endpoint_id__in=skip_endpoints).order_by("event_id", "id").values_list("id", flat=True)
    return list(rows[:limit])


def _claim_next(endpoint_id: int, now: datetime) -> WebhookDelivery | None:
    """The endpoint's first due delivery, taken for this run alone (None when there is none)."""
    lease_until = now + timedelta(seconds=attempt_timeout()) + CLAIM_LEASE_MARGIN
    for delivery_id in _due(now).filter(endpoint_id=endpoint_id).order_by("event_id", "id").values_list("id")[:5]:
        claimed = WebhookDelivery.objects.filter(
            id=delivery_id[0], status=DeliveryStatus.PENDING, next_attempt_at__lte=now
        ).update(next_attempt_at=lease_until, modified_at=timezone.now())
        if claimed == 1:
            return WebhookDelivery.objects.select_related("event", "endpoint").get(id=delivery_id[0])
    return None


def _signed_send(delivery: WebhookDelivery, timeout: float) -> Sent:
    """The send step (a worker thread): no database, every failure a Sent with its reason."""
    started = time.monotonic()
    try:
        return send(delivery.endpoint.url, delivery.endpoint.secret, delivery.event.payload, timeout=timeout)
    except Exception as exc:  # noqa: BLE001 - a failure of any kind is a failed attempt, recorded
        return Sent(None, redact(f"failed before sending ({type(exc).__name__}: {exc})")[:300], _ms(started))


def _record(delivery: WebhookDelivery, sent: Sent, result: DrainResult, now: datetime | None) -> bool:
    """Write the attempt and what follows from it; True when the delivery is now delivered."""
    at = now or timezone.now()
    WebhookAttempt.objects.create(
        delivery=delivery, attempted_at=at, status_code=sent.status_code, error=sent.error, duration_ms=sent.duration_ms
    )
    delivery.attempts += 1
    where = f"{delivery.event.event} {delivery.event.idempotency_key} to {redact_url(delivery.endpoint.url)}"
    if sent.accepted:
        delivery.status = DeliveryStatus.DELIVERED
        delivery.delivered_at = at
        result.delivered += 1
    elif at - delivery.event.created_at >= RETRY_WINDOW:
        delivery.status = DeliveryStatus.GAVE_UP
        result.gave_up += 1
        logger.error("webhook %s: gave up after %d attempts (%s)", where, delivery.attempts, sent.error)
    else:
        delivery.next_attempt_at = at + retry_delay(delivery.attempts)
        result.failed_attempts += 1
        logger.warning("webhook %s: attempt %d failed (%s)", where, delivery.attempts, sent.error)
    delivery.save(update_fields=["status", "attempts", "next_attempt_at", "delivered_at", "modified_at"])
    return delivery.status == DeliveryStatus.DELIVERED


def webhooks_drain(*, now: datetime | None = None, budget_seconds: float | None = None) -> DrainResult:
    """Send what is due, every endpoint side by side, starting attempts for about `budget_seconds`
    (default: one attempt's deadline, so a run holds its worker for about twice that at most); a later
    run continues. An endpoint that fails once is left for the rest of the run."""
    result = DrainResult()
    timeout = attempt_timeout()
    stop_starting = time.monotonic() + (timeout if budget_seconds is None else budget_seconds)
    endpoints = list(
        _due(now or timezone.now()).order_by("endpoint_id").values_list("endpoint_id", flat=True).distinct()
    )[:MAX_PARALLEL_ENDPOINTS]
    if not endpoints:
        return result
    in_flight: dict[Future[Sent], WebhookDelivery] = {}
    pool = ThreadPoolExecutor(max_workers=len(endpoints), thread_name_prefix="webhook")

    def start(endpoint_id: int) -> None:
        if time.monotonic() >= stop_starting:
            return
        delivery = _claim_next(endpoint_id, now or timezone.now())
        if delivery is not None:
            in_flight[pool.submit(_signed_send, delivery, timeout)] = delivery

    try:
        for endpoint_id in endpoints:
            start(endpoint_id)
        while in_flight:
            done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
            for future in done:
                delivery = in_flight.pop(future)
                if _record(delivery, future.result(), result, now):
                    start(delivery.endpoint_id)  # the endpoint's next one; a failed endpoint rests
    except BaseException as exc:
        # The task's soft time limit (or a shutdown) while sends are in flight: each of them is a failed
        # attempt with its retry moved, not a delivery claimed and forgotten.
        for delivery in in_flight.values():
            _record(delivery, Sent(None, f"interrupted ({type(exc).__name__})", 0), result, now)
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    if result.delivered or result.failed_attempts or result.gave_up:
        logger.info("%s", result.summary())
    return result


def more_due(now: datetime | None = None) -> bool:
    return _due(now or timezone.now()).exists()


def send(url: str, secret: str, payload: dict, *, timeout: float | None = None) -> Sent:
    """POST one signed body within `timeout` seconds in all; what came back, never raising."""
    body = body_bytes(payload)
    headers = {
        "content-type": "application/json",
        "user-agent": "dws-webhooks/1",
        SIGNATURE_HEADER: sign(secret, int(time.time()), body),
    }
    started = time.monotonic()
    try:
        reply = egress.request(
            "POST",
            url,
            body=body,
            headers=headers,
            timeout=attempt_timeout() if timeout is None else timeout,
            max_bytes=MAX_ANSWER_BYTES,
            public_only=True,
            allow_loopback=settings.CONFIG.webhook_allow_loopback,
        )
    except egress.EgressError as exc:
        # Never the URL (it may hold a token): the egress messages name the kind of failure only.
        return Sent(None, str(exc), _ms(started))
    ok = 200 <= reply.status < 300
    return Sent(reply.status, "" if ok else f"HTTP {reply.status}", _ms(started))


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


def webhook_redeliver(*, delivery_ids: list[int]) -> int:
    """An operator's redelivery: the deliveries become pending and due now (their attempts are kept)."""
    return WebhookDelivery.objects.filter(id__in=delivery_ids).update(
        status=DeliveryStatus.PENDING, next_attempt_at=timezone.now(), delivered_at=None, modified_at=timezone.now()
    )


def check_secrets_key(process: str) -> None:
    """At a worker's start: exit naming DWS_SECRETS_KEY when stored webhook secrets cannot be read with it
    (unset, or another key), instead of failing every delivery later."""
    endpoint = WebhookEndpoint.objects.order_by("id").first()
    if endpoint is None:
        return
    try:
        endpoint.secret  # noqa: B018 - decrypting one is the check
    except (SecretsKeyMissing, SecretUnreadable) as exc:
        logger.critical("%s: %s; the webhook secrets cannot be used (see deploy/env.example)", process, exc)
        raise SystemExit(EXIT_SECRETS_KEY) from None
