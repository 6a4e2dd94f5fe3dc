"""Celery shells for the donor-facing jobs."""

from __future__ import annotations

import logging

from celery import shared_task

from donations.staking import unstake_complete_due
from dws_project.locks import non_overlapping

logger = logging.getLogger("dws.staking")


@shared_task(soft_time_limit=60, time_limit=90)
@non_overlapping("complete-unstakes", ttl=120)
def complete_unstakes() -> int:
    finished = unstake_complete_due()
    if finished:
        logger.info("completed %d unstaking(s)", finished)
    return finished


@shared_task(name="donations.deliver_webhooks", soft_time_limit=240, time_limit=300)
def deliver_webhooks() -> None:
    """Drain the webhook outbox (queued after each change's commit, and by beat as a safety net)."""
    from donations.webhook_delivery import webhooks_drain

    @non_overlapping("deliver-webhooks", ttl=120)
    def guarded() -> None:
        webhooks_drain()

    guarded()
