"""Webhook events: written to the outbox with the change, signed when they are sent.

Call the `webhook_*` recorders inside the transaction that makes the change: the event row and its
deliveries commit or roll back with it. Nothing here talks to the network; delivery is in
donations/webhook_delivery.py, run by Celery after the commit.

Signature (the payment processors' scheme): header `dws-signature: t=<unix seconds>,v1=<hex>` where
hex = HMAC-SHA256(endpoint secret, f"{t}.{body}"), body being the exact bytes sent.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from donations.webhook_models import WebhookDelivery, WebhookEndpoint, WebhookEvent, WebhookEventType
from donations.wire import (
    RECORDING_TIMES,
    campaign_public,
    donation_public,
    donation_values,
    inflow_public,
    refund_public,
)
from dws_project.chain_settings import UnknownChain

logger = logging.getLogger("dws.webhooks")

SIGNATURE_HEADER = "dws-signature"


def _chain_id(chain: str | None = None) -> int | None:
    """The chain id of `chain` (the first chain when None); None for a chain no longer configured."""
    try:
        return (settings.CONFIG.chain(chain) if chain else settings.CONFIG.first_chain).chain_id
    except UnknownChain:
        return None


def _chain_key(chain: str | None = None) -> str:
    """What an event's idempotency key starts with: the chain id (a chain no longer configured: its name)."""
    chain_id = _chain_id(chain)
    return str(chain_id) if chain_id is not None else str(chain)


# Inside one write (a block), the endpoints are read once, not once per event (webhook_endpoints_once).
_endpoints_scope: ContextVar[dict[str, list[WebhookEndpoint]] | None] = ContextVar("webhook_endpoints", default=None)


@contextmanager
def webhook_endpoints_once() -> Iterator[None]:
    """Within this block of code (one transaction), the active endpoints are read at the first event."""
    token = _endpoints_scope.set({})
    try:
        yield
    finally:
        _endpoints_scope.reset(token)


def webhook_endpoints_read() -> None:
    """Within `webhook_endpoints_once`: read the active endpoints now, so that the events written later in the
    block (under the campaign lock) do not wait for that read."""
    _active_endpoints()


def _active_endpoints() -> list[WebhookEndpoint]:
    scope = _endpoints_scope.get()
    if scope is not None and "active" in scope:
        return scope["active"]
    endpoints = list(WebhookEndpoint.objects.filter(active=True).order_by("id"))
    if scope is not None:
        scope["active"] = endpoints
    return endpoints


def webhook_event_record(
    *, event: str, idempotency_key: str, order_key: str, data: Mapping[str, Any]
) -> WebhookEvent | None:
    """Put one event in the outbox for every active endpoint subscribed to it; call inside the change's
    transaction. The same idempotency key is recorded once (a replayed change emits nothing new).

    Returns the event row, or None when nobody subscribes or the key was already recorded.
    """
    if event not in WebhookEventType.values:
        raise ValueError(f"unknown webhook event {event!r}")
    endpoints = [e for e in _active_endpoints() if event in e.events]
    if not endpoints:
        return None
    now = timezone.now()
    payload = {"id": idempotency_key, "event": event, "created": now.isoformat(), "data": dict(data)}
    try:
        with transaction.atomic():  # a savepoint: a duplicate key must not spoil the caller's transaction
            row = WebhookEvent.objects.create(
                event=event, idempotency_key=idempotency_key, order_key=order_key, payload=payload
            )
    except IntegrityError:
        return None
    WebhookDelivery.objects.bulk_create(
        WebhookDelivery(event=row, endpoint=endpoint, order_key=order_key, next_attempt_at=now)
        for endpoint in endpoints
    )
    transaction.on_commit(_kick_delivery)
    return row


DELIVER_TASK = "donations.deliver_webhooks"  # donations/tasks.py; named, so this module imports no task


def _kick_delivery() -> None:
    """Ask a worker to drain the outbox now; the beat entry catches up if the broker is unreachable."""
    try:
        # No waiting on a broker after a commit; routed to the webhooks queue by CELERY_TASK_ROUTES.
        current_app.send_task(DELIVER_TASK, expires=60, retry=False)
    except Exception as exc:  # noqa: BLE001 - never let a broker hiccup reach a crawler
        logger.warning("webhooks: could not queue a delivery run (%s); the periodic run will send them", exc)


def donation_data(donation: Any) -> dict[str, Any]:
    """A donation as integrators see it: the API's shape (donations.wire), plus where it sits on chain.

    Not our own recording times (`seen_at`, `confirmed_at`): an event re-emitted after a restore carries the
    same id and must carry the same content, and the body's `created` already says when it was written."""
    public = donation_public(donation_values(donation))
    return {k: v for k, v in public.items() if k not in RECORDING_TIMES} | {
        "chain_id": _chain_id(donation.chain),
        "log_index": donation.log_index,
        "trace_address": getattr(donation, "trace_address", None),
        "address": donation.address,
        "block_hash": donation.block_hash,
        "block_time": donation.block_time.isoformat() if donation.block_time else None,
    }


def _position(donation: Any) -> str:
    """Log index for a coin, trace position for internal ETH, `tx` for a plain ETH transfer."""
    if donation.log_index is not None:
        return f"log{donation.log_index}"
    trace = getattr(donation, "trace_address", None)
    if trace:
        return "trace" + "-".join(str(i) for i in trace) if isinstance(trace, list | tuple) else f"trace{trace}"
    return "tx"


def webhook_donation_event(donation: Any, event: str, **extra: Any) -> WebhookEvent | None:
    """`donation.seen|confirmed|failed|moved` for one donation row, in its order."""
    subject = f"{_chain_key(donation.chain)}:{donation.tx_hash}:{_position(donation)}"
    key = f"{subject}:{event}"
    if event == WebhookEventType.DONATION_MOVED:
        key += f":{donation.block_hash}"  # a donation may move more than once
    data = donation_data(donation) | extra
    # Ordered by the row, not its position: a re-org may move a coin donation to another log index.
    return webhook_event_record(event=event, idempotency_key=key, order_key=f"donation:{donation.pk}", data=data)


def webhook_campaign_status(stats: Any, change: str, *, chain: str | None = None) -> WebhookEvent | None:
    """`campaign.status` with change open|closed|paused|resumed and the campaign (one across every chain) as
    it now stands; `chain` is the chain whose donations or drift made the change, null for an operator's."""
    data = {
        "change": change,
        "chain": chain,
        **campaign_public(status=stats.status, total=stats.total, tokens=stats.tokens),
    }
    key = f"{_chain_key()}:campaign:{change}:{uuid.uuid4().hex}"
    return webhook_event_record(
        event=WebhookEventType.CAMPAIGN_STATUS, idempotency_key=key, order_key="campaign", data=data
    )


def webhook_inflow_unexplained(inflow: Any) -> WebhookEvent | None:
    """`inflow.unexplained`: for the code that records an unexplained inflow, inside its transaction. The
    inflow's public shape (donations.wire.inflow_public, as /proof.json lists it) without our recording time."""
    shape = {k: v for k, v in inflow_public(inflow).items() if k != "recorded_at"}
    data = {"chain": inflow.chain, "chain_id": _chain_id(inflow.chain), "id": inflow.pk, **shape}
    key = f"{_chain_key(inflow.chain)}:inflow:{inflow.pk}:{WebhookEventType.INFLOW_UNEXPLAINED}"
    return webhook_event_record(
        event=WebhookEventType.INFLOW_UNEXPLAINED, idempotency_key=key, order_key=f"inflow:{inflow.pk}", data=data
    )


def webhook_refund_event(refund: Any, event: str) -> WebhookEvent | None:
    """`refund.owed` when a refund register row is made, `refund.paid` when the crawler sees it paid: for the
    code that makes the change, inside its transaction. Each once per row."""
    data = {"chain_id": _chain_id(refund.chain), **refund_public(refund)}
    key = f"{_chain_key(refund.chain)}:refund:{refund.pk}:{event}"
    return webhook_event_record(event=event, idempotency_key=key, order_key=f"refund:{refund.pk}", data=data)


# --- signing ---------------------------------------------------------------------------------------


def body_bytes(payload: Mapping[str, Any]) -> bytes:
    return json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The `dws-signature` header value for `body` sent at `timestamp`."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def verify(secret: str, header: str, body: bytes, *, now: int, tolerance: int = 300) -> bool:
    """What a receiver does (the recipe in docs/webhooks.md): parse, check the window, compare in constant time."""
    try:
        fields = dict(part.split("=", 1) for part in header.split(","))
        timestamp = int(fields["t"])
    except (KeyError, ValueError):
        return False
    if abs(now - timestamp) > tolerance:
        return False
    expected = sign(secret, timestamp, body).split("v1=", 1)[1]
    return hmac.compare_digest(expected, fields.get("v1", ""))
