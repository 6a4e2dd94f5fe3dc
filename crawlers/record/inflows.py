"""Unexplained inflows: value at the donation address that no transfer we can see explains.

Recorded by the finalized crawler's balance proof (never dropped, never a wedge: the cursor moves on),
surfaced on /health, in an ERROR line, in the admin and by `reconcile` (exit 1 while one is open), and
closed by an operator: "credit this transaction" re-examines a transaction of that block through the
crawler's own detection and crediting path; "not a donation" needs a reason. Both log the operator.
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from crawlers.chain.rpc import RpcClient
from crawlers.decode.transfers import BlockHeader
from crawlers.models import FINALIZED, InflowStatus, UnexplainedInflow
from donations.webhooks import webhook_inflow_unexplained
from dws_project.config import Config

logger = logging.getLogger("dws.crawlers")


class InflowRefused(Exception):
    """The operator's action cannot be taken; the message says why."""


def inflow_record(config: Config, *, block: BlockHeader, asset: str, raw: int) -> UnexplainedInflow:
    """Record (once per block hash and asset) what the balance proof could not explain; logs an ERROR and
    queues the `inflow.unexplained` webhook. Called inside the finalized block's transaction."""
    from crawlers.scan.proof import display_amount

    inflow, created = UnexplainedInflow.objects.get_or_create(
        block_hash=block.hash,
        asset=asset,
        defaults={"block_number": block.number, "amount_raw": raw, "amount": display_amount(config, asset, raw)},
    )
    if created:
        # Integrators hear of it in the same transaction (the outbox), like any donation event.
        webhook_inflow_unexplained(
            inflow_id=inflow.pk,
            asset=asset,
            amount=str(inflow.amount),
            block_number=block.number,
            block_hash=block.hash,
            amount_raw=str(raw),
        )
        logger.error(
            "unexplained inflow: %s %s (%d raw units) reached the donation address in block %d (%s) and no "
            'transfer we can see explains it; see docs/operating.md, "an unexplained inflow"',
            inflow.amount,
            asset,
            raw,
            block.number,
            block.hash,
        )
    return inflow


def inflows_open():
    return UnexplainedInflow.objects.filter(status=InflowStatus.OPEN)


def inflow_dismiss(*, inflow_id: int, reason: str, operator: str) -> UnexplainedInflow:
    """ "Not a donation": closed with the operator's reason (a withdrawal, a refund to ourselves, ...)."""
    if not reason.strip():
        raise InflowRefused("a reason is required")
    with transaction.atomic():
        inflow = UnexplainedInflow.objects.select_for_update().get(pk=inflow_id)
        if inflow.status != InflowStatus.OPEN:
            raise InflowRefused(f"this inflow is already {inflow.status}")
        inflow.status, inflow.reason = InflowStatus.DISMISSED, reason.strip()
        inflow.operator, inflow.resolved_at = operator, timezone.now()
        inflow.save()
    logger.warning(
        "unexplained inflow %d (block %d, %s %s) marked not a donation by %s: %s",
        inflow.pk,
        inflow.block_number,
        inflow.amount,
        inflow.asset,
        operator,
        inflow.reason,
    )
    return inflow


def inflow_credit(
    *, inflow_id: int, tx_hash: str, operator: str, config: Config | None = None, client: RpcClient | None = None
) -> UnexplainedInflow:
    """ "Credit this transaction": the inflow's block is crawled again by the finalized crawler's single-block
    path (top-level transactions, call traces, logs: the same detection and crediting), and the inflow
    closes once that transaction is recorded there as a donation of the inflow's asset."""
    from crawlers.runs.crawl import crawl_single_block
    from donations.models import Donation

    tx_hash = tx_hash.strip().lower()
    inflow = UnexplainedInflow.objects.get(pk=inflow_id)
    if inflow.status != InflowStatus.OPEN:
        raise InflowRefused(f"this inflow is already {inflow.status}")
    if len(tx_hash) != 66 or not tx_hash.startswith("0x"):
        raise InflowRefused("a transaction hash is 0x followed by 64 hex digits")
    rows = Donation.objects.filter(tx_hash=tx_hash, block_hash=inflow.block_hash, asset=inflow.asset)
    # A donation recorded before is already in the balance identity: it cannot be what is unexplained.
    known = set(rows.values_list("id", flat=True))
    result = crawl_single_block(FINALIZED, inflow.block_number, config=config, client=client)
    if result.held:
        raise InflowRefused(f"block {inflow.block_number} could not be re-examined now: {result.held}")
    rows = rows.exclude(id__in=known)
    if not rows.exists():
        why = "was already recorded, so it cannot explain this inflow" if known else "is not seen by the detection"
        raise InflowRefused(
            f"no new {inflow.asset} donation of transaction {tx_hash} found in block {inflow.block_number}: "
            f"it {why} (transactions, call traces, logs)"
        )
    with transaction.atomic():
        locked = UnexplainedInflow.objects.select_for_update().get(pk=inflow_id)
        if locked.status != InflowStatus.OPEN:
            raise InflowRefused(f"this inflow is already {locked.status}")
        locked.status, locked.tx_hash = InflowStatus.CREDITED, tx_hash
        locked.operator, locked.resolved_at = operator, timezone.now()
        locked.save()
    logger.warning(
        "unexplained inflow %d (block %d, %s %s) credited by %s as transaction %s (%s)",
        locked.pk,
        locked.block_number,
        locked.amount,
        locked.asset,
        operator,
        tx_hash,
        ", ".join(f"donation id {r.id}: {r.amount} from {r.address}, {r.status}" for r in rows),
    )
    return locked
