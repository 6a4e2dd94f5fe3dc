"""Unexplained inflows: value at the donation address that no transfer we can see explains.

Recorded with the finalized block whose balance proof could not explain it (never dropped, never a
wedge: the cursor moves on), surfaced on /health, in an ERROR line, in the admin and by `reconcile`
(exit 1 while one is open), and closed by an operator (crawlers/runs/operator.py): "credit this
transaction" once the crawler's own detection found it, "not a donation" with a reason. Both log the
operator. The table has no chain column yet (multi-chain adds it); `chain` is taken already.
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from crawlers.decode.balances import display_amount
from crawlers.decode.blocks import BlockHeader
from crawlers.models import InflowStatus, UnexplainedInflow
from donations.webhooks import webhook_inflow_unexplained
from dws_project.chain_settings import ChainSettings

logger = logging.getLogger("dws.crawlers")


class InflowRefused(Exception):
    """The operator's action cannot be taken; the message says why."""


def inflow_record(chain: ChainSettings, *, block: BlockHeader, asset: str, raw: int) -> UnexplainedInflow:
    """Record (once per block hash and asset) what the balance proof could not explain; logs an ERROR and
    queues the `inflow.unexplained` webhook. Called inside the finalized block's transaction."""
    inflow, created = UnexplainedInflow.objects.get_or_create(
        block_hash=block.hash,
        asset=asset,
        defaults={"block_number": block.number, "amount_raw": raw, "amount": display_amount(chain, asset, raw)},
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
        if raw < 0:  # a coin burnt at the donation address without a Transfer log (USDT's destroyBlackFunds)
            logger.error(
                "unexplained outflow: %s %s (%d raw units) left the donation address in block %d (%s) with no "
                'transfer we can see (a coin burnt without a log); see docs/operating.md, "an unexplained inflow"',
                -inflow.amount,
                asset,
                -raw,
                block.number,
                block.hash,
            )
            return inflow
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


def inflow_mark_credited(*, inflow_id: int, tx_hash: str, operator: str) -> UnexplainedInflow:
    """Close an open inflow as paid by `tx_hash` (the caller has found that transaction's donation)."""
    with transaction.atomic():
        inflow = UnexplainedInflow.objects.select_for_update().get(pk=inflow_id)
        if inflow.status != InflowStatus.OPEN:
            raise InflowRefused(f"this inflow is already {inflow.status}")
        inflow.status, inflow.tx_hash = InflowStatus.CREDITED, tx_hash
        inflow.operator, inflow.resolved_at = operator, timezone.now()
        inflow.save()
    return inflow
