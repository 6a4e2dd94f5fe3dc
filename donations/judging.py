"""The old-unconfirmed crawler's writes (crawlers/runs/old_unconfirmed.py): confirm rows it found in finalized
blocks, fail rows it proved gone, count absences and schedule the next look.

The same crediting rule and deltas as the crawlers' block writes (donations/services.py). Every write here
takes the lock on its rows' chains' donation rows first (dws_project/locks.py `chain_donations_lock`, the
lock the finalized crawler's block write takes before its rows, and the campaign row only after them),
then the campaign lock, then the rows: never the campaign row while a finalized block of the same chain
holds rows and waits for it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from donations.models import Donation, DonationStatus
from donations.rules import sale_state
from donations.services import DonationOutcome, donation_confirm, stats_lock
from donations.totals import Deltas, stats_save
from donations.webhooks import webhook_donation_event
from dws_project.config_values import SaleTier
from dws_project.locks import chain_donations_lock

logger = logging.getLogger("dws.donations")


def _rows_lock(donation_ids: Sequence[int]) -> None:
    """The donation rows lock of every chain these rows are on, before the campaign lock."""
    chains = Donation.objects.filter(id__in=donation_ids).order_by().values_list("chain", flat=True).distinct()
    chain_donations_lock(*chains)


@transaction.atomic
def donations_confirm(*, donation_ids: Sequence[int], tiers: Sequence[SaleTier]) -> dict[int, str]:
    """Confirm recorded donations (the old-unconfirmed crawler's path, issue #4), oldest first.

    The caller has positive evidence that each one is in a finalized block. Same rule, same lock and
    same deltas as the finalized crawler; returns each donation's outcome (a failed row is left out:
    only the finalized path records it anew from the block that proves it).
    """
    _rows_lock(donation_ids)
    stats = stats_lock()
    rows = list(
        Donation.objects.select_for_update()
        .filter(id__in=donation_ids)
        .exclude(status=DonationStatus.FAILED)
        .order_by("block_number", "id")
    )
    before = sale_state(stats.tokens, tiers)
    outcomes = {row.id: donation_confirm(stats=stats, donation=row, tiers=tiers) for row in rows}
    deltas = Deltas()
    for row in rows:
        if outcomes[row.id] == DonationOutcome.CONFIRMED:
            deltas.add(row, +1)
    if deltas.by_address:
        stats_save(stats=stats, tiers=tiers, before=before)
        deltas.apply()
    return outcomes


@transaction.atomic
def donations_fail_unconfirmed(*, donation_ids: Sequence[int], reason: str, tiers: Sequence[SaleTier]) -> list[int]:
    """The old-unconfirmed judge's failure: unconfirmed rows only (a confirmed one is never touched here).

    Under the campaign lock like every crediting write; the rows are kept, only their status changes.
    No total moves: unconfirmed rows were never in them.
    """
    _rows_lock(donation_ids)
    stats_lock()
    rows = list(
        Donation.objects.select_for_update()
        .filter(id__in=donation_ids, status=DonationStatus.UNCONFIRMED)
        .order_by("block_number", "id")
    )
    for row in rows:
        logger.warning("donation %s (%s, id %d) unconfirmed -> failed: %s", row.tx_hash, row.asset, row.id, reason)
        row.status = DonationStatus.FAILED
        row.failed_reason = reason
        row.save(update_fields=["status", "failed_reason", "modified_at"])
        webhook_donation_event(
            row, "donation.failed", reason="reverted" if "revert" in reason else "dropped", detail=reason
        )
    return [row.id for row in rows]


def donations_absence_record(*, absent_ids: Sequence[int], seen_ids: Sequence[int]) -> None:
    """One old-unconfirmed run's observations: +1 for every transaction found neither on chain nor in the
    mempool, back to 0 for every one seen anywhere. Unconfirmed rows only.

    Under the campaign lock like every other write to donation rows, so it never interleaves its row
    locks with a crawler's (which could deadlock).
    """
    with transaction.atomic():
        _rows_lock([*absent_ids, *seen_ids])
        stats_lock()
        if absent_ids:
            Donation.objects.filter(id__in=absent_ids, status=DonationStatus.UNCONFIRMED).update(
                absent_count=F("absent_count") + 1, modified_at=timezone.now()
            )
        if seen_ids:
            Donation.objects.filter(id__in=seen_ids, absent_count__gt=0).update(
                absent_count=0, modified_at=timezone.now()
            )


_LOOK_LATER = """
UPDATE donation
SET next_look_at = %(now)s + CASE
        WHEN absent_count > 0
        THEN GREATEST(LEAST((%(now)s - block_time) / 8, %(max)s, block_time + %(grace)s - %(now)s), %(min)s)
        ELSE LEAST(GREATEST((%(now)s - block_time) / 8, %(min)s), %(max)s)
    END,
    modified_at = now()
WHERE id = ANY(%(ids)s) AND status = 'unconfirmed'
"""


def donations_look_later(
    *,
    donation_ids: Sequence[int],
    now: datetime,
    min_delay: timedelta,
    max_delay: timedelta,
    absence_grace: timedelta,
) -> None:
    """Give the still-unconfirmed rows among `donation_ids` a next-look time: an eighth of their age from
    `now`, within [min_delay, max_delay] (the old-unconfirmed crawler's back-off). A row found absent
    (absent_count > 0) is looked at again by the end of its `absence_grace` and, past it, at the next run
    (`min_delay`): the back-off of rows merely waiting never stretches seed 000's "3 consecutive runs".
    Under the campaign lock like every other write to donation rows."""
    if not donation_ids:
        return
    with transaction.atomic():
        _rows_lock(donation_ids)
        stats_lock()
        # psycopg2 sends a timedelta as an interval; django-stubs' parameter type leaves timedelta out.
        params: dict[str, Any] = {
            "now": now,
            "min": min_delay,
            "max": max_delay,
            "grace": absence_grace,
            "ids": sorted(donation_ids),
        }
        with connection.cursor() as cursor:
            cursor.execute(_LOOK_LATER, params)
