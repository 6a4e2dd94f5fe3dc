"""Operators register webhook endpoints and redeliver from the admin; secrets never come back out."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from django.utils import timezone

from donations.models import Donation
from donations.webhook_delivery import webhooks_drain
from donations.webhook_models import WebhookDelivery, WebhookEndpoint
from donations.webhooks import webhook_donation_event
from tests.donations.test_webhooks import unconfirmed_donation
from tests.webhook_receiver import webhook_receiver

pytestmark = [pytest.mark.django_db]

SECRET = "whsec-admin-0123456789abcdef"


@pytest.fixture
def operator(client):
    client.force_login(User.objects.create_superuser("alice", "alice@example.org", "pw-not-used"))
    return client


def a_donation() -> Donation:
    return unconfirmed_donation("0x" + "ab" * 32)


def test_an_operator_registers_an_endpoint_and_its_secret_is_never_shown(operator):
    add = reverse("admin:donations_webhookendpoint_add")
    page = operator.post(
        add,
        {
            "url": "https://crm.example/hooks?token=abc123",
            "secret": SECRET,
            "events": ["donation.seen"],
            "active": "on",
        },
        follow=True,
    )
    assert page.status_code == 200
    endpoint = WebhookEndpoint.objects.get()
    assert (endpoint.secret, endpoint.events, endpoint.active) == (SECRET, ["donation.seen"], True)

    listing = operator.get(reverse("admin:donations_webhookendpoint_changelist")).content.decode()
    change_url = reverse("admin:donations_webhookendpoint_change", args=[endpoint.pk])
    edit = operator.get(change_url).content.decode()
    assert "https://crm.example" in listing
    assert SECRET not in listing + edit
    assert "abc123" not in listing

    # an edit with the secret left blank keeps it
    operator.post(change_url, {"url": endpoint.url, "secret": "", "events": ["donation.seen", "donation.confirmed"]})
    endpoint.refresh_from_db()
    assert (endpoint.secret, endpoint.active) == (SECRET, False)


def test_an_endpoint_must_be_http_or_https_and_have_a_secret(operator):
    add = reverse("admin:donations_webhookendpoint_add")
    page = operator.post(add, {"url": "ftp://files.example/x", "secret": "", "events": ["donation.seen"]})
    assert page.status_code == 200  # the form again, with its errors
    assert not WebhookEndpoint.objects.exists()
    assert b"a new endpoint needs a secret" in page.content


def test_the_delivery_page_shows_attempts_and_redeliver_sends_it_again(operator):
    with webhook_receiver(["500"]) as receiver:
        WebhookEndpoint.objects.create(url=receiver.url, secret=SECRET, events=["donation.seen"])
        webhook_donation_event(a_donation(), "donation.seen")
        webhooks_drain()
        webhooks_drain(now=timezone.now() + timedelta(seconds=31))
        delivery = WebhookDelivery.objects.get()
        page = operator.get(reverse("admin:donations_webhookdelivery_change", args=[delivery.pk])).content.decode()
        assert "HTTP 500" in page
        assert SECRET not in page

        operator.post(
            reverse("admin:donations_webhookdelivery_changelist"),
            {"action": "redeliver", "_selected_action": [delivery.pk]},
        )
        webhooks_drain()

    assert [r.answered for r in receiver.requests] == ["500", "200", "200"]
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("delivered", 3)


def test_an_inactive_endpoint_is_sent_nothing_until_it_is_active_again():
    with webhook_receiver() as receiver:
        endpoint = WebhookEndpoint.objects.create(url=receiver.url, secret=SECRET, events=["donation.seen"])
        webhook_donation_event(a_donation(), "donation.seen")
        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(active=False)
        webhooks_drain()
        assert receiver.requests == []

        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(active=True)
        webhooks_drain()

    assert len(receiver.accepted()) == 1
