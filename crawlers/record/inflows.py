"""Unexplained inflows: value at the donation address that no transfer we can see explains.

Recorded with the finalized block whose balance proof could not explain it (never dropped, never a
wedge: the cursor moves on), surfaced on /health, in an ERROR line, in the admin and by `reconcile`
(exit 1 while one is open), and closed by an operator (crawlers/runs/operator.py): "credit this
transaction" for what the crawler's own detection finds in it (the rest stays open, with its new
amount), "not a donation, keep" or "not a donation, refund" (owed back to the sender the operator names, in
the refund register) for what remains, with a reason. Both log the operator. Each is its chain's:
one per chain, block hash and asset.
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from crawlers.decode.balances import display_amount
from crawlers.decode.blocks import BlockHeader
from crawlers.models import InflowStatus, UnexplainedInflow
from donations.refund_models import Refund
from donations.refunds import RefundRefused, refund_owe_inflow
from donations.webhooks import webhook_inflow_unexplained
from dws_project.chain_settings import ChainSettings

logger = logging.getLogger("dws.crawlers")


class InflowRefused(Exception):
    """The operator's action cannot be taken; the message says why."""


def inflow_record(
    chain: ChainSettings, *, block: BlockHeader, asset: str, raw: int, why: str = ""
) -> UnexplainedInflow:
    """Record (once per block hash and asset) what the balance proof could not explain, and `why` where the
    scan could say more (kept as the inflow's reason, which the operator's own note follows); logs an
    ERROR and queues the `inflow.unexplained` webhook. Called inside the finalized block's transaction."""
    inflow, created = UnexplainedInflow.objects.get_or_create(
        chain=chain.name,
        block_hash=block.hash,
        asset=asset,
        defaults={
            "block_number": block.number,
            "amount_raw": raw,
            "amount": display_amount(chain, asset, raw),
            "reason": why,
        },
    )
    if created:
        # Integrators hear of it in the same transaction (the outbox), like any donation event.
        webhook_inflow_unexplained(inflow)
        if raw < 0:  # a coin burnt at the donation address without a Transfer log (USDT's destroyBlackFunds)
            logger.error(
                "unexplained outflow: %s %s (%d raw units) left the donation address in block %d of %s (%s) with no "
                'transfer we can see (a coin burnt without a log); see docs/operating.md, "an unexplained inflow"',
                -inflow.amount,
                asset,
                -raw,
                block.number,
                chain.name,
                block.hash,
            )
            return inflow
        logger.error(
            "unexplained inflow: %s %s (%d raw units) reached the donation address in block %d of %s (%s) and no "
            'transfer we can see explains it%s; see docs/operating.md, "an unexplained inflow"',
            inflow.amount,
            asset,
            raw,
            block.number,
            chain.name,
            block.hash,
            f" ({why})" if why else "",
        )
    return inflow


def inflow_dismiss(*, inflow_id: int, reason: str, operator: str) -> UnexplainedInflow:
    """ "Not a donation": what remains of the inflow is closed with the operator's reason (a withdrawal, a
    refund to ourselves, ...), after any earlier partial credit noted in it."""
    if not reason.strip():
        raise InflowRefused("a reason is required")
    with transaction.atomic():
        inflow = UnexplainedInflow.objects.select_for_update().get(pk=inflow_id)
        if inflow.status != InflowStatus.OPEN:
            raise InflowRefused(f"this inflow is already {inflow.status}")
        inflow.status, inflow.reason = InflowStatus.DISMISSED, _noted(inflow.reason, reason.strip())
        inflow.operator, inflow.resolved_at = operator, timezone.now()
        inflow.save()
    logger.warning(
        "unexplained inflow %d (block %d of %s, %s %s) marked not a donation by %s: %s",
        inflow.pk,
        inflow.block_number,
        inflow.chain,
        inflow.amount,
        inflow.asset,
        operator,
        inflow.reason,
    )
    return inflow


def inflow_refund(*, inflow_id: int, donor: str, tx_hash: str, reason: str, operator: str) -> Refund:
    """ "Not a donation, refund": what remains of the inflow is closed as not a donation and owed back to
    `donor` (the sender the operator identified; `tx_hash` the transaction that brought it, when known), in one
    transaction: the refund register's row (donations/refunds.py) and the inflow's closing."""
    if not reason.strip():
        raise InflowRefused("a reason is required")
    with transaction.atomic():
        inflow = UnexplainedInflow.objects.select_for_update().get(pk=inflow_id)
        if inflow.status != InflowStatus.OPEN:
            raise InflowRefused(f"this inflow is already {inflow.status}")
        try:
            refund = refund_owe_inflow(
                inflow_id=inflow.pk,
                chain=inflow.chain,
                asset=inflow.asset,
                amount=inflow.amount,
                donor=donor,
                tx_hash=tx_hash,
                block_number=inflow.block_number,
                operator=operator,
            )
        except RefundRefused as exc:
            raise InflowRefused(str(exc)) from None
        note = f"not a donation, refund {refund.pk} owed to {refund.donor}: {reason.strip()}"
        inflow.status, inflow.reason = InflowStatus.DISMISSED, _noted(inflow.reason, note)
        inflow.operator, inflow.resolved_at = operator, timezone.now()
        if refund.source_tx_hash and not inflow.tx_hash:
            inflow.tx_hash = refund.source_tx_hash
        inflow.save()
    logger.warning(
        "unexplained inflow %d (block %d of %s, %s %s) marked not a donation, refund, by %s: %s",
        inflow.pk,
        inflow.block_number,
        inflow.chain,
        inflow.amount,
        inflow.asset,
        operator,
        note,
    )
    return refund


def inflow_mark_credited(
    chain: ChainSettings, *, inflow_id: int, tx_hash: str, operator: str, credited_raw: int, tolerance: int
) -> UnexplainedInflow:
    """An open inflow, `credited_raw` of which the caller has found credited as `tx_hash`: closed as credited
    when that covers it (short of at most `tolerance`, the column's rounding), else left open with what
    remains as its amount and the credit noted in its reason."""
    with transaction.atomic():
        inflow = UnexplainedInflow.objects.select_for_update().get(pk=inflow_id)
        if inflow.status != InflowStatus.OPEN:
            raise InflowRefused(f"this inflow is already {inflow.status}")
        remaining = int(inflow.amount_raw) - credited_raw
        credited = display_amount(chain, inflow.asset, credited_raw).normalize()
        note = f"{credited:f} {inflow.asset} credited as transaction {tx_hash} by {operator}"
        if remaining <= tolerance:
            inflow.status, inflow.tx_hash = InflowStatus.CREDITED, tx_hash
            inflow.operator, inflow.resolved_at = operator, timezone.now()
        else:
            inflow.amount_raw = remaining
            inflow.amount = display_amount(chain, inflow.asset, remaining)
        inflow.reason = _noted(inflow.reason, note)
        inflow.save()
    return inflow


def _noted(reason: str, note: str) -> str:
    return f"{reason}; {note}" if reason else note
