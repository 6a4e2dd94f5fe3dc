"""Webhooks: endpoints operators register, the outbox of events, and each delivery's attempts.

An event row and one delivery row per subscribed endpoint are written in the same database
transaction as the change they describe (so a rolled-back change leaves nothing to send); a Celery
task delivers them afterwards. Imported by donations/models.py so the app's migrations see them.

An endpoint's secret is stored sealed with DWS_SECRETS_KEY (dws_project/secret_box.py); `secret` reads
and writes it in the clear, in memory only.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.db.models.functions import Now

from dws_project import egress
from dws_project.secret_box import seal, unseal
from dws_project.touch import TouchingManager


class WebhookEventType(models.TextChoices):
    DONATION_SEEN = "donation.seen"
    DONATION_CONFIRMED = "donation.confirmed"
    DONATION_FAILED = "donation.failed"
    DONATION_MOVED = "donation.moved"
    CAMPAIGN_STATUS = "campaign.status"
    INFLOW_UNEXPLAINED = "inflow.unexplained"
    REFUND_OWED = "refund.owed"
    REFUND_PAID = "refund.paid"


def validate_webhook_url(value: str) -> None:
    """Only http(s) targets whose host resolves to public addresses only: a file: or gopher: URL, the
    cloud metadata service, this machine's database port or a private network have no business
    receiving our events. The send checks again (a DNS answer can change after the save)."""
    from urllib.parse import urlsplit

    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError("a webhook URL must be http:// or https:// with a host")
    try:
        egress.check_url(value.strip(), allow_loopback=settings.CONFIG.webhook_allow_loopback)
    except egress.EgressError as exc:
        raise ValidationError(f"a webhook URL must reach a public address: {exc}") from None


def validate_event_list(value: object) -> None:
    known = set(WebhookEventType.values)
    if not isinstance(value, list) or not value or any(e not in known for e in value):
        raise ValidationError(f"a non-empty list of events among: {', '.join(sorted(known))}")


class WebhookEndpoint(models.Model):
    url = models.URLField(max_length=500, validators=[validate_webhook_url])
    sealed_secret = models.TextField(help_text="the shared HMAC-SHA256 key, encrypted with DWS_SECRETS_KEY")
    events = models.JSONField(default=list, validators=[validate_event_list], help_text="events subscribed")
    active = models.BooleanField(default=True)
    description = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_default=Now())
    modified_at = models.DateTimeField(auto_now=True, db_default=Now())

    objects = TouchingManager()  # update() moves modified_at too

    class Meta:
        db_table = "webhook_endpoint"

    def __str__(self) -> str:
        from dws_project.redaction import redact_url

        return f"{redact_url(self.url)} ({'active' if self.active else 'inactive'})"

    @property
    def secret(self) -> str:
        """The shared key in the clear (SecretsKeyMissing / SecretUnreadable when it cannot be)."""
        return unseal(self.sealed_secret, settings.CONFIG.secrets_key)

    @secret.setter
    def secret(self, value: str) -> None:
        self.sealed_secret = seal(value, settings.CONFIG.secrets_key)


class WebhookEvent(models.Model):
    """The outbox: one row per event, its body fixed when the change happened."""

    event = models.CharField(max_length=32, choices=WebhookEventType.choices)
    idempotency_key = models.CharField(max_length=200)
    # Deliveries with the same order key (one donation, or the campaign) go out in id order.
    order_key = models.CharField(max_length=200)
    payload = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True, db_default=Now())

    class Meta:
        db_table = "webhook_event"
        constraints = [models.UniqueConstraint(fields=["idempotency_key"], name="webhook_event_idempotency_key")]

    def __str__(self) -> str:
        return f"{self.event} {self.idempotency_key}"


# Redeliver sends an integrator an event again: a permission of its own (WebhookDelivery.Meta).
REDELIVER_PERMISSION = "donations.redeliver_webhookdelivery"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending"
    DELIVERED = "delivered"
    GAVE_UP = "gave-up"


class WebhookDelivery(models.Model):
    event = models.ForeignKey(WebhookEvent, on_delete=models.PROTECT, related_name="deliveries")
    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.PROTECT, related_name="deliveries")
    order_key = models.CharField(max_length=200)  # the event's, copied for the ordering query
    status = models.CharField(max_length=16, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING)
    attempts = models.IntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_default=Now())
    modified_at = models.DateTimeField(auto_now=True, db_default=Now())

    objects = TouchingManager()  # update() moves modified_at too

    class Meta:
        db_table = "webhook_delivery"
        verbose_name_plural = "webhook deliveries"
        permissions = [("redeliver_webhookdelivery", "Can redeliver webhook deliveries")]
        constraints = [
            models.UniqueConstraint(fields=["event", "endpoint"], name="webhook_delivery_event_endpoint"),
            models.CheckConstraint(condition=Q(attempts__gte=0), name="webhook_delivery_attempts_nonnegative"),
        ]
        indexes = [
            models.Index(fields=["status", "next_attempt_at"], name="webhook_delivery_due_idx"),
            models.Index(fields=["endpoint", "order_key"], name="webhook_delivery_order_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.event.event} to endpoint {self.endpoint_id} ({self.status})"


class WebhookAttempt(models.Model):
    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="attempt_log")
    attempted_at = models.DateTimeField()
    status_code = models.IntegerField(null=True, blank=True)
    error = models.CharField(max_length=300, blank=True)
    duration_ms = models.IntegerField()

    class Meta:
        db_table = "webhook_attempt"
        ordering = ("id",)

    def __str__(self) -> str:
        return f"attempt at {self.attempted_at:%Y-%m-%d %H:%M:%S}: {self.status_code or self.error}"
