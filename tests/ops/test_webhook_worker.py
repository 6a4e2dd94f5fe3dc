"""A real worker on the webhooks queue: the task's soft time limit, met while a receiver holds the
request, is a recorded failed attempt whose retry moved, not a delivery left first in line unrecorded."""

from __future__ import annotations

import time

import pytest
from celery import current_app
from django.utils import timezone
from kombu import Queue

from donations.webhook_models import DeliveryStatus, WebhookAttempt, WebhookDelivery
from donations.webhooks import DELIVER_TASK, webhook_donation_event
from dws_project.redis_client import get_redis
from tests.donations.test_webhooks import unconfirmed_donation
from tests.ops.processes import process_environment, worker
from tests.webhook_receiver import registered_endpoint, webhook_receiver

pytestmark = [pytest.mark.django_db(transaction=True)]


def test_the_soft_time_limit_during_a_send_is_recorded_and_moves_the_retry(tmp_path):
    get_redis().delete("dws:lock:deliver-webhooks")
    env = process_environment(TEST_WEBHOOK_TIMEOUT="30", DWS_HEARTBEAT_DIR=str(tmp_path / "heartbeat"))
    with webhook_receiver(["hold"]) as receiver:
        receiver.hold_seconds = 25.0  # longer than the soft limit, shorter than the attempt's deadline
        registered_endpoint(receiver.url, ["donation.seen"], secret="whsec-worker-0123456789ab")
        webhook_donation_event(unconfirmed_donation("0x" + "77" * 32), "donation.seen")
        with current_app.connection_for_write() as broker:
            Queue("webhooks", channel=broker.default_channel).purge()  # the commit's own kick: this test sends its run
        running = worker("webhooks", "webhooks", env, tmp_path)
        try:
            current_app.send_task(DELIVER_TASK, soft_time_limit=2, time_limit=20)
            deadline = time.monotonic() + 60
            while not WebhookAttempt.objects.exists():
                assert time.monotonic() < deadline, f"no attempt recorded:\n{running.text()[-3000:]}"
                time.sleep(0.2)
        finally:
            running.stop()

    attempt = WebhookAttempt.objects.get()
    assert (attempt.status_code, attempt.error) == (None, "interrupted (SoftTimeLimitExceeded)")
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts) == (DeliveryStatus.PENDING, 1)
    assert delivery.next_attempt_at > timezone.now()  # no longer first in line
    assert len(receiver.requests) == 1
