"""Checkpoints (seed 004): after a finalized run that confirmed or failed anything, the ledger
invariants are checked for what the run changed -- the campaign row against the confirmed donations,
and each donor whose rows sit in the run's blocks against theirs -- under the campaign lock, so no
crediting write interleaves. Drift found here freezes the sale exactly as `reconcile`'s does
(crawlers/runs/drift.py) and is stored as a reconcile run (trigger "checkpoint") for the admin and
/health; a clean checkpoint writes nothing. The full check (every donor, the chain) stays the daily
reconcile's.

Cost: the donors' part reads only the run's blocks' rows and those donors' rows (indexed by block
number and address); the campaign's part is one SUM over the confirmed donations.
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from crawlers.models import ReconcileRun
from crawlers.runs.drift import freeze_on_drift
from donations.ledger import ledger_discrepancies
from donations.models import Donation
from donations.services import stats_lock

logger = logging.getLogger("dws.crawlers")

CHECKPOINT = "checkpoint"


def ledger_checkpoint(*, chain: str, first: int, last: int) -> list[str]:
    """Check the ledger for what a finalized run of `chain` wrote in blocks first..last; the drift found
    (frozen on)."""
    started = timezone.now()
    with transaction.atomic():
        stats_lock()
        donors = set(
            Donation.objects.filter(chain=chain, block_number__range=(first, last)).values_list("address", flat=True)
        )
        drift = ledger_discrepancies(donors=donors)
    if not drift:
        logger.debug("checkpoint %s blocks %d..%d: ledger holds for %d donor(s)", chain, first, last, len(donors))
        return drift
    summary = f"checkpoint {chain} blocks {first}..{last}: {len(drift)} ledger discrepancy(ies)"
    ReconcileRun.objects.create(
        chain=chain,
        trigger=CHECKPOINT,
        from_block=first,
        to_block=last,
        started_at=started,
        ok=False,
        transfers=0,
        discrepancies=drift,
        summary=summary,
    )
    logger.error("%s", summary)
    freeze_on_drift(chain=chain, from_block=first, to_block=last, drift=drift)
    return drift
