"""Webhook delivery against receivers that misbehave: one hard deadline per attempt, every failure
recorded, endpoints independent of each other, nothing sent from inside a transaction, and only to public
addresses (issue 21, medium 5 and 6)."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import psycopg2
import pytest
from django.conf import settings as django_settings
from django.db import connection
from django.utils import timezone

from donations.models import Donation, DonationStats
from donations.webhook_delivery import webhooks_drain
from donations.webhook_models import DeliveryStatus, WebhookAttempt, WebhookDelivery, WebhookEndpoint
from donations.webhooks import webhook_donation_event
from tests.donations.test_webhooks import unconfirmed_donation
from tests.webhook_receiver import Received, registered_endpoint, webhook_receiver

pytestmark = [pytest.mark.django_db]

SECRET = "whsec-delivery-0123456789abcdef"


def endpoint(url: str, events: tuple[str, ...] = ("donation.seen",)) -> WebhookEndpoint:
    return registered_endpoint(url, list(events), secret=SECRET)


def donation(n: int) -> Donation:
    return unconfirmed_donation("0x" + f"{n:02x}" * 32)


def attempts(point: WebhookEndpoint) -> list[tuple[int | None, str]]:
    rows = WebhookAttempt.objects.filter(delivery__endpoint=point).order_by("id")
    return [(a.status_code, a.error) for a in rows]


def test_a_receiver_dripping_its_answer_is_cut_at_the_attempt_deadline(settings):
    settings.DWS_WEBHOOK_TIMEOUT = 1.0
    with webhook_receiver(["drip"]) as receiver:
        receiver.drip_seconds = 0.5  # the whole answer would take 20 s, every byte inside a per-read time-out
        point = endpoint(receiver.url)
        webhook_donation_event(donation(1), "donation.seen")

        result = webhooks_drain()

    assert (result.delivered, result.failed_attempts) == (0, 1)
    assert attempts(point) == [(None, "time-out")]
    attempt = WebhookAttempt.objects.get()
    assert attempt.duration_ms < 10_000  # cut at its deadline, nowhere near the 20 s of the drip
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == DeliveryStatus.PENDING
    assert delivery.next_attempt_at > timezone.now() + timedelta(seconds=20)  # its retry moved


def test_a_slow_endpoint_never_holds_up_another(settings):
    settings.DWS_WEBHOOK_TIMEOUT = 3.0
    with webhook_receiver(["hold"]) as slow, webhook_receiver() as fast:
        slow.hold_seconds = 10.0

        def release_slow_after_three(_: Received) -> None:
            if len(fast.requests) == 3:
                slow.release.set()

        fast.on_request = release_slow_after_three
        slow_point, fast_point = endpoint(slow.url), endpoint(fast.url)
        for n in range(3):
            webhook_donation_event(donation(10 + n), "donation.seen")

        result = webhooks_drain()

    # The slow receiver answered only once the fast one had all three: they were served side by side.
    # One after the other, the slow one's attempt would have run out at its deadline before any was sent.
    assert len(fast.accepted()) == 3
    assert attempts(slow_point) == [(200, "")] * 3
    assert attempts(fast_point) == [(200, "")] * 3
    assert result.delivered == 6


@pytest.mark.django_db(transaction=True)
def test_the_send_happens_outside_any_transaction():
    """While the receiver holds the request, another session can lock the delivery row at once: nothing
    (no row lock, no open transaction) is held across the network call."""
    DonationStats.objects.get_or_create()  # an earlier transactional test's flush removes the migration's row
    db = django_settings.DATABASES["default"]
    seen_while_sending: list[str] = []

    def look_from_another_session(_: Received) -> None:
        other = psycopg2.connect(
            dbname=db["NAME"], user=db["USER"], password=db["PASSWORD"], host=db["HOST"], port=db["PORT"] or 5432
        )
        try:
            with other.cursor() as cursor:
                cursor.execute("SET lock_timeout = '200ms'")
                try:
                    cursor.execute("SELECT id FROM webhook_delivery FOR UPDATE NOWAIT")
                    seen_while_sending.append("unlocked")
                except psycopg2.errors.LockNotAvailable:
                    seen_while_sending.append("locked")
                cursor.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE pid = %s AND state LIKE 'idle in transaction%%'",
                    [drain_backend_pid],
                )
                seen_while_sending.append("in transaction" if cursor.fetchone()[0] else "no transaction")
        finally:
            other.close()

    with webhook_receiver() as receiver:
        receiver.on_request = look_from_another_session
        endpoint(receiver.url)
        webhook_donation_event(donation(20), "donation.seen")
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            drain_backend_pid = cursor.fetchone()[0]

        result = webhooks_drain()

    assert result.delivered == 1
    assert seen_while_sending == ["unlocked", "no transaction"]


def test_a_secret_that_does_not_decrypt_is_a_failed_attempt_with_its_retry_moved(settings):
    with webhook_receiver() as receiver:
        point = endpoint(receiver.url)
        webhook_donation_event(donation(30), "donation.seen")
        # The deployment's key was changed without re-sealing the secrets.
        other_key = "qUOZGNSodj3Efd4cDUCd1bzF3g5YBvBC3sqBnZpNfK8="
        settings.CONFIG = dataclasses.replace(settings.CONFIG, secrets_key=(other_key,))

        result = webhooks_drain()

    assert receiver.requests == []
    assert result.failed_attempts == 1
    ((status, error),) = attempts(point)
    assert status is None
    assert "SecretUnreadable" in error
    assert SECRET not in error
    assert WebhookDelivery.objects.get().next_attempt_at > timezone.now()


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:{port}/hooks",
        "http://localhost:{port}/hooks",  # a name: resolved at send time, and it resolves to loopback
        "http://[::ffff:127.0.0.1]:{port}/hooks",
    ],
)
def test_a_send_to_an_address_that_is_not_public_is_refused_and_never_connects(settings, url):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, webhook_allow_loopback=False)
    with webhook_receiver() as receiver:
        port = receiver.url.split(":")[2].split("/")[0]
        # Saved before the rule (or while the name still resolved elsewhere): the send checks again.
        point = registered_endpoint(url.format(port=port), ["donation.seen"], secret=SECRET)
        webhook_donation_event(donation(40), "donation.seen")

        result = webhooks_drain()

    assert receiver.requests == []
    assert result.failed_attempts == 1
    ((status, error),) = attempts(point)
    assert status is None
    assert error == "refused: 127.0.0.1 is not a public address"


def test_delivery_runs_on_a_queue_of_its_own():
    from dws_project.celery import app

    route = app.amqp.router.route({}, "donations.deliver_webhooks")
    assert route["queue"].name == django_settings.WEBHOOKS_QUEUE == "webhooks"
    crawler_route = app.amqp.router.route({}, "crawlers.crawl_latest")
    assert crawler_route["queue"].name != route["queue"].name


@pytest.mark.parametrize("key", [None, ("qUOZGNSodj3Efd4cDUCd1bzF3g5YBvBC3sqBnZpNfK8=",)], ids=["unset", "another key"])
def test_a_worker_will_not_start_when_the_stored_secrets_cannot_be_read(settings, caplog, key):
    from donations.webhook_delivery import EXIT_SECRETS_KEY, check_secrets_key

    endpoint("http://127.0.0.1:9/hooks")
    settings.CONFIG = dataclasses.replace(settings.CONFIG, secrets_key=key)

    with pytest.raises(SystemExit) as stopped:
        check_secrets_key("celery worker")

    assert stopped.value.code == EXIT_SECRETS_KEY
    assert "DWS_SECRETS_KEY" in caplog.text
    assert SECRET not in caplog.text


def test_rotate_secrets_moves_every_secret_to_the_first_key(settings):
    from django.core.management import call_command

    old_key = settings.CONFIG.secrets_key[0]
    new_key = "qUOZGNSodj3Efd4cDUCd1bzF3g5YBvBC3sqBnZpNfK8="
    point = endpoint("http://127.0.0.1:9/hooks")
    settings.CONFIG = dataclasses.replace(settings.CONFIG, secrets_key=(new_key, old_key))

    call_command("rotate_secrets")

    settings.CONFIG = dataclasses.replace(settings.CONFIG, secrets_key=(new_key,))  # the old key dropped
    point.refresh_from_db()
    assert point.secret == SECRET
