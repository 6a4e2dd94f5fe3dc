"""Operators register webhook endpoints and redeliver from the admin; secrets never come back out."""

from __future__ import annotations

import dataclasses
import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from donations.models import Donation
from donations.webhook_delivery import webhooks_drain
from donations.webhook_models import WebhookDelivery, WebhookEndpoint
from donations.webhooks import webhook_donation_event
from tests.donations.test_webhooks import unconfirmed_donation
from tests.webhook_receiver import registered_endpoint, webhook_receiver

pytestmark = [pytest.mark.django_db]

SECRET = "whsec-admin-0123456789abcdef"


@pytest.fixture
def operator(client):
    client.force_login(User.objects.create_superuser("alice", "alice@example.org", "pw-not-used"))
    return client


def a_donation() -> Donation:
    return unconfirmed_donation("0x" + "ab" * 32)


# A public address written as a literal: resolving it needs no DNS (the tests' machine has none).
PUBLIC_URL = "https://93.184.215.14/hooks?token=abc123"


def test_an_operator_registers_an_endpoint_and_its_secret_is_never_shown(operator):
    add = reverse("admin:donations_webhookendpoint_add")
    page = operator.post(
        add,
        {
            "url": PUBLIC_URL,
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
    assert "https://93.184.215.14" in listing
    assert SECRET not in listing + edit
    assert "abc123" not in listing

    # an edit with the secret left blank keeps it
    operator.post(change_url, {"url": endpoint.url, "secret": "", "events": ["donation.seen", "donation.confirmed"]})
    endpoint.refresh_from_db()
    assert (endpoint.secret, endpoint.active) == (SECRET, False)


def test_an_endpoint_must_be_http_or_https(operator):
    add = reverse("admin:donations_webhookendpoint_add")
    page = operator.post(add, {"url": "ftp://files.example/x", "secret": "", "events": ["donation.seen"]})
    assert page.status_code == 200  # the form again, with its errors
    assert not WebhookEndpoint.objects.exists()


def test_the_delivery_page_shows_attempts_and_redeliver_sends_it_again(operator):
    with webhook_receiver(["500"]) as receiver:
        registered_endpoint(receiver.url, ["donation.seen"], secret=SECRET)
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
        endpoint = registered_endpoint(receiver.url, ["donation.seen"], secret=SECRET)
        webhook_donation_event(a_donation(), "donation.seen")
        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(active=False)
        webhooks_drain()
        assert receiver.requests == []

        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(active=True)
        webhooks_drain()

    assert len(receiver.accepted()) == 1


def issued_secret(page) -> str:
    found = re.search(r'<code id="webhook-secret"[^>]*>([^<]+)</code>', page.content.decode())
    assert found, "no secret shown"
    return found.group(1)


def test_a_new_endpoint_without_a_secret_gets_one_issued_and_shown_once(operator):
    page = operator.post(
        reverse("admin:donations_webhookendpoint_add"), {"url": PUBLIC_URL, "secret": "", "events": ["donation.seen"]}
    )

    secret = issued_secret(page)
    assert "no-store" in page["Cache-Control"]
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.secret == secret
    again = operator.get(reverse("admin:donations_webhookendpoint_change", args=[endpoint.pk]))
    assert secret not in again.content.decode()


def test_changing_the_url_issues_a_new_secret(operator):
    endpoint = registered_endpoint(PUBLIC_URL, ["donation.seen"], secret=SECRET)
    change = reverse("admin:donations_webhookendpoint_change", args=[endpoint.pk])

    page = operator.post(
        change, {"url": "https://93.184.215.15/hooks", "secret": "", "events": ["donation.seen"], "active": "on"}
    )

    secret = issued_secret(page)
    endpoint.refresh_from_db()
    assert endpoint.url == "https://93.184.215.15/hooks"
    assert endpoint.secret == secret != SECRET  # the new receiver never gets the old receiver's key


def test_rotating_a_secret_in_place(operator):
    endpoint = registered_endpoint(PUBLIC_URL, ["donation.seen"], secret=SECRET)
    change = reverse("admin:donations_webhookendpoint_change", args=[endpoint.pk])

    page = operator.post(
        change, {"url": PUBLIC_URL, "secret": "", "issue_new_secret": "on", "events": ["donation.seen"], "active": "on"}
    )

    endpoint.refresh_from_db()
    assert endpoint.secret == issued_secret(page) != SECRET


def test_secrets_are_stored_encrypted():
    endpoint = registered_endpoint(PUBLIC_URL, ["donation.seen"], secret=SECRET)

    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM webhook_endpoint WHERE id = %s", [endpoint.pk])
        row = " ".join(str(value) for value in cursor.fetchone())
    assert SECRET not in row
    assert WebhookEndpoint.objects.get().secret == SECRET


def test_without_a_secrets_key_no_secret_is_stored(operator, settings):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, secrets_key=None)

    page = operator.post(
        reverse("admin:donations_webhookendpoint_add"),
        {"url": PUBLIC_URL, "secret": SECRET, "events": ["donation.seen"]},
    )

    assert b"DWS_SECRETS_KEY is not set" in page.content
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://127.0.0.1:5432/",
        "http://[::1]:6379/",
        "https://10.0.0.5/hooks",
        "https://[::ffff:192.168.1.1]/hooks",
        "http://localhost:8000/admin/",
    ],
)
def test_an_endpoint_that_is_not_a_public_address_cannot_be_saved(operator, settings, url):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, webhook_allow_loopback=False)

    page = operator.post(reverse("admin:donations_webhookendpoint_add"), {"url": url, "events": ["donation.seen"]})

    assert page.status_code == 200  # the form again
    assert b"a webhook URL must reach a public address" in page.content
    assert not WebhookEndpoint.objects.exists()


def test_redeliver_needs_its_own_permission(client):
    viewer = User.objects.create_user("bob", "bob@example.org", "pw-not-used", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_webhookdelivery"))
    client.force_login(viewer)
    with webhook_receiver(["500"]) as receiver:
        registered_endpoint(receiver.url, ["donation.seen"], secret=SECRET)
        webhook_donation_event(a_donation(), "donation.seen")
        webhooks_drain()
        delivery = WebhookDelivery.objects.get()
        before = delivery.next_attempt_at

        client.post(
            reverse("admin:donations_webhookdelivery_changelist"),
            {"action": "redeliver", "_selected_action": [delivery.pk]},
        )

    delivery.refresh_from_db()
    assert delivery.next_attempt_at == before  # not made due again
    assert len(receiver.requests) == 1
