"""Celery shells for the affiliate jobs."""

from __future__ import annotations

import logging

from celery import shared_task

from affiliates.services import affiliate_donations_resolve
from affiliates.signing import used_signatures_purge
from dws_project.locks import non_overlapping

logger = logging.getLogger("dws.affiliates")


@shared_task(name="affiliates.tasks.resolve_affiliate_donations", soft_time_limit=50, time_limit=60)
@non_overlapping("resolve-affiliate-donations", ttl=90)
def resolve_affiliate_donations() -> int:
    settled = affiliate_donations_resolve()
    if settled:
        logger.info("settled %d affiliate donation claim(s)", settled)
    return settled


@shared_task(name="affiliates.purge_used_signatures", soft_time_limit=50, time_limit=60)
@non_overlapping("purge-used-signatures", ttl=90)
def purge_used_signatures() -> int:
    """Drop the used signed messages whose window has passed (they would be refused as stale anyway)."""
    return used_signatures_purge()
