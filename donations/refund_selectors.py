"""Reads of the refund register for the operators' surfaces: what is owed per chain and asset (/health, the
metrics), and how much of it is overdue (owed for longer than DWS_REFUND_ALERT_DAYS: the alert)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import Count, Min, Q, Sum

from donations.refund_models import PayoutStatus, Refund, RefundStatus, UnmatchedPayout
from donations.refund_values import amount_text
from dws_project.wire import utc_text


@dataclass(frozen=True)
class OwedTotal:
    chain: str
    asset: str
    amount: Decimal  # in the asset's own units
    rows: int
    oldest: datetime
    overdue: int  # rows owed for longer than the alert age


def refunds_owed(*, now: datetime, alert_days: int) -> list[OwedTotal]:
    """Per chain and asset, what the register owes now."""
    late = now - timedelta(days=alert_days)
    rows = (
        Refund.objects.filter(status=RefundStatus.OWED)
        .values("chain", "asset")
        .annotate(
            total=Sum("amount"),
            n=Count("id"),
            oldest=Min("created_at"),
            late=Count("id", filter=Q(created_at__lt=late)),
        )
        .order_by("chain", "asset")
    )
    return [OwedTotal(r["chain"], r["asset"], r["total"], r["n"], r["oldest"], r["late"]) for r in rows]


def refunds_report(*, now: datetime, alert_days: int) -> dict[str, Any]:
    """/health's `refunds`: the owed totals, how many rows are overdue, and the unmatched payouts waiting."""
    owed = refunds_owed(now=now, alert_days=alert_days)
    return {
        "owed": [
            {
                "chain": o.chain,
                "asset": o.asset,
                "amount": amount_text(o.amount),
                "rows": o.rows,
                "oldest_created_at": utc_text(o.oldest),
            }
            for o in owed
        ],
        "overdue": sum(o.overdue for o in owed),
        "alert_days": alert_days,
        "unmatched_payouts_open": UnmatchedPayout.objects.filter(status=PayoutStatus.OPEN).count(),
    }
