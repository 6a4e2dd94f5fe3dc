"""The webhook pages of the admin: endpoints (URL, secret, events) and the delivery log with Redeliver.

A secret is write-only. The server issues one (shown once, on the page that follows the save) for a new
endpoint left without one, whenever the URL changes (a new receiver must not inherit the old one's key)
and when the operator asks for a new one; an operator may also type one. It is stored sealed with
DWS_SECRETS_KEY and never rendered again, logged or put in a message (messages travel in a cookie).
Redeliver needs its own permission: it sends an integrator an event again.
"""

from __future__ import annotations

import logging
import secrets
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from donations.webhook_delivery import webhook_redeliver
from donations.webhook_models import (
    REDELIVER_PERMISSION,
    WebhookAttempt,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEventType,
)
from donations.webhooks import body_bytes
from dws_project.admin_base import ReadOnlyAdmin
from dws_project.redaction import redact_url

logger = logging.getLogger("dws.admin")

MIN_SECRET_LENGTH = 16


def issue_secret() -> str:
    """A fresh shared key: 32 random bytes, URL-safe text (43 characters)."""
    return "whsec_" + secrets.token_urlsafe(32)


class WebhookEndpointForm(forms.ModelForm):
    url = forms.URLField(max_length=500, assume_scheme="https")
    secret = forms.CharField(
        widget=forms.PasswordInput(render_value=False),
        required=False,
        help_text="the shared HMAC key: leave blank and one is issued (and shown once) for a new endpoint or a "
        "new URL; on an edit, blank keeps the current one",
    )
    issue_new_secret = forms.BooleanField(
        required=False, help_text="replace the secret with a new one, shown once after saving (rotation)"
    )
    events = forms.MultipleChoiceField(choices=WebhookEventType.choices, widget=forms.CheckboxSelectMultiple)

    class Meta:
        model = WebhookEndpoint
        fields = ("url", "events", "active", "description")

    issued_secret: str | None = None

    def clean_secret(self) -> str:
        secret = self.cleaned_data.get("secret") or ""
        if secret and len(secret) < MIN_SECRET_LENGTH:
            raise forms.ValidationError(f"use at least {MIN_SECRET_LENGTH} characters")
        return secret

    def clean(self) -> dict[str, Any] | None:
        cleaned = super().clean()
        if not settings.CONFIG.secrets_key:
            raise forms.ValidationError("DWS_SECRETS_KEY is not set: a webhook secret cannot be stored")
        return cleaned

    def save(self, commit: bool = True) -> WebhookEndpoint:
        endpoint = super().save(commit=False)
        typed = self.cleaned_data.get("secret") or ""
        url_changed = self.instance.pk is not None and "url" in self.changed_data
        if typed:
            endpoint.secret = typed
        elif self.instance.pk is None or url_changed or self.cleaned_data.get("issue_new_secret"):
            self.issued_secret = issue_secret()
            endpoint.secret = self.issued_secret
        if commit:
            endpoint.save()
        return endpoint


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(admin.ModelAdmin):
    form = WebhookEndpointForm
    list_display = ("id", "shown_url", "events", "active", "description", "modified_at")
    list_filter = ("active",)
    fields = ("url", "secret", "issue_new_secret", "events", "active", "description")

    @admin.display(description="URL (scheme and host)")
    def shown_url(self, obj: WebhookEndpoint) -> str:
        return redact_url(obj.url)

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False  # deliveries refer to it: deactivate instead

    def save_model(self, request: HttpRequest, obj: WebhookEndpoint, form: WebhookEndpointForm, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if form.issued_secret is not None:
            # Carried on this request to response_add/response_change (the admin instance is shared by
            # every request); HttpRequest declares no such attribute.
            request._dws_issued_secret = form.issued_secret  # type: ignore[attr-defined]
            logger.warning(
                "admin: %s issued a new secret for webhook endpoint %s (%s)",
                request.user.get_username(),
                obj.pk,
                redact_url(obj.url),
            )

    def response_add(
        self, request: HttpRequest, obj: WebhookEndpoint, post_url_continue: str | None = None
    ) -> HttpResponse:
        return self._show_issued_secret(request, obj) or super().response_add(request, obj, post_url_continue)

    def response_change(self, request: HttpRequest, obj: WebhookEndpoint) -> HttpResponse:
        return self._show_issued_secret(request, obj) or super().response_change(request, obj)

    def _show_issued_secret(self, request: HttpRequest, obj: WebhookEndpoint) -> HttpResponse | None:
        """The one page that shows a new secret: rendered straight into this response, never stored."""
        secret = getattr(request, "_dws_issued_secret", None)
        if secret is None:
            return None
        context = {
            **self.admin_site.each_context(request),
            "title": "Webhook secret issued",
            "endpoint": obj,
            "shown_url": redact_url(obj.url),
            "secret": secret,
            "opts": self.model._meta,
        }
        response = TemplateResponse(request, "admin/donations/webhook_secret_issued.html", context)
        response["Cache-Control"] = "no-store"
        return response


class WebhookAttemptInline(admin.TabularInline):
    model = WebhookAttempt
    fields = ("attempted_at", "status_code", "error", "duration_ms")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyAdmin):
    list_display = ("id", "event_name", "idempotency_key", "endpoint", "status", "attempts", "next_attempt_at")
    list_filter = ("status", "event__event")
    search_fields = ("event__idempotency_key",)
    readonly_fields = ("event", "endpoint", "status", "attempts", "next_attempt_at", "delivered_at", "body")
    exclude = ("order_key",)
    inlines = (WebhookAttemptInline,)
    actions = ["redeliver"]

    @admin.display(description="event")
    def event_name(self, obj: WebhookDelivery) -> str:
        return obj.event.event

    @admin.display(description="idempotency key")
    def idempotency_key(self, obj: WebhookDelivery) -> str:
        return obj.event.idempotency_key

    @admin.display(description="body")
    def body(self, obj: WebhookDelivery) -> str:
        return body_bytes(obj.event.payload).decode()

    def has_redeliver_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(REDELIVER_PERMISSION)

    @admin.action(description="Redeliver: send again now (attempts are kept)", permissions=["redeliver"])
    def redeliver(self, request: HttpRequest, queryset: QuerySet[WebhookDelivery]) -> None:
        count = webhook_redeliver(delivery_ids=list(queryset.values_list("id", flat=True)))
        logger.warning("admin: %s redelivered %d webhook deliveries", request.user.get_username(), count)
        self.message_user(request, f"{count} deliveries queued again.", messages.SUCCESS)
