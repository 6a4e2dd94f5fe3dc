"""Celery shells for the donor-facing jobs."""

from __future__ import annotations

import logging

from celery import shared_task

from donations.export import proof_csv_refresh
from donations.staking import unstake_complete_due
from donations.webhook_delivery import more_due, webhooks_drain
from donations.webhooks import DELIVER_TASK
from dws_project.locks import held_while_database_gone, non_overlapping

logger = logging.getLogger("dws.staking")


@shared_task(name="donations.tasks.complete_unstakes", soft_time_limit=60, time_limit=90)
@held_while_database_gone("complete-unstakes")
@non_overlapping("complete-unstakes", ttl=120)
def complete_unstakes() -> int:
    finished = unstake_complete_due()
    if finished:
        logger.info("completed %d unstaking(s)", finished)
    return finished


# A run starts attempts for one attempt's deadline and waits for the last ones: about twice the deadline
# (10 s by default), well inside these limits. A worker that consumes every queue is held no longer.
@shared_task(name=DELIVER_TASK, soft_time_limit=60, time_limit=90)
@held_while_database_gone("deliver-webhooks")
@non_overlapping("deliver-webhooks", ttl=90)
def deliver_webhooks() -> None:
    """Send what the webhook outbox has due (queued after each change's commit, and by beat every 30 s
    as a safety net). A run that delivered something and left more due queues the next one at once."""
    result = webhooks_drain()
    if result.delivered and more_due():
        deliver_webhooks.apply_async(expires=60, retry=False)


@shared_task(name="donations.refresh_proof_csv", soft_time_limit=120, time_limit=150)
@held_while_database_gone("refresh-proof-csv")
@non_overlapping("refresh-proof-csv", ttl=150)
def refresh_proof_csv() -> int:
    """Build the parts of /proof/donations.csv that changed (donations/export.py); the web serves them."""
    return proof_csv_refresh()
