"""What the crawlers' readers see: `GET /health`'s report (where each crawler is against the chain, the
price feed, reconcile) and the open unexplained inflows (the admin, reconcile, /health).

The provider is asked once (one batched request, a short time-out): the head, the finalized block and
the cursors' blocks (for the lag in seconds). When it does not answer, the chain fields say "unknown"
and the rest of the report still comes from the database.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from crawlers.chain.calls import header_call
from crawlers.chain.clients import make_probe_client
from crawlers.chain.outcomes import Answer, RpcOutcome
from crawlers.chain.rpc import RpcClient
from crawlers.decode.blocks import BlockHeader, header_of
from crawlers.models import FINALIZED, LATEST, Completeness, InflowStatus, ReconcileRun, UnexplainedInflow
from crawlers.record.cursors import cursor_get
from crawlers.runs.old_unconfirmed import MIN_AGE
from crawlers.runs.operator import LABELS
from crawlers.runs.progress import catch_up_status
from crawlers.scan.with_code import read_status
from donations.models import Donation, DonationStats, DonationStatus
from dws_project.chain_settings import chain_settings
from prices.models import ETH, Price, PriceRequest, PriceRequestStatus

UNKNOWN = "unknown"
# A crawler behind its tip whose cursor has not moved for this long looks stuck (the finalized tag
# itself only moves every ~6.4 minutes, so its crawler gets more slack).
STUCK_AFTER = {LATEST: timedelta(minutes=5), FINALIZED: timedelta(minutes=20)}


def _iso(when: datetime | None) -> str | None:
    return when.isoformat() if when else None


def inflows_open() -> QuerySet[UnexplainedInflow]:
    return UnexplainedInflow.objects.filter(status=InflowStatus.OPEN)


def _header(outcome: RpcOutcome) -> BlockHeader | None:
    return header_of(outcome.value) if isinstance(outcome, Answer) else None


def _lag_seconds(tip: BlockHeader, at_cursor: BlockHeader) -> int:
    return int((tip.time - at_cursor.time).total_seconds())


def health_report(*, client: RpcClient | None = None, now: datetime | None = None) -> dict[str, Any]:
    chain = chain_settings(settings.CONFIG)
    client = client or make_probe_client(chain)
    now = now or timezone.now()
    cursors = {label: cursor_get(chain=chain.name, label=label) for label in LABELS}
    calls = [header_call("latest"), header_call("finalized")]
    calls += [header_call(c.value) for c in cursors.values() if c is not None]
    outcomes = client.batch(calls)
    head, finalized = _header(outcomes[0]), _header(outcomes[1])
    cursor_blocks = iter(outcomes[2:])
    tips = {LATEST: head, FINALIZED: finalized}

    crawlers: dict[str, Any] = {}
    degraded = head is None or finalized is None
    for label, cursor in cursors.items():
        if cursor is None:
            crawlers[label] = {"cursor": None, "stuck": UNKNOWN}
            degraded = True
            continue
        at_cursor = _header(next(cursor_blocks))
        tip = tips[label]
        since = now - cursor.modified_at
        entry: dict[str, Any] = {
            "cursor": cursor.value,
            "tip": tip.number if tip else UNKNOWN,
            "lag_blocks": tip.number - cursor.value if tip else UNKNOWN,
            "lag_seconds": _lag_seconds(tip, at_cursor) if tip and at_cursor else UNKNOWN,
            "last_advanced_at": _iso(cursor.modified_at),
            "seconds_since_advanced": int(since.total_seconds()),
            "catch_up": catch_up_status(label),  # null when current; else behind, speed and expected end
        }
        if tip is None:
            entry["stuck"] = UNKNOWN
        else:
            entry["stuck"] = tip.number > cursor.value and since > STUCK_AFTER[label]
            degraded = degraded or entry["stuck"]
        crawlers[label] = entry

    waiting = Donation.objects.filter(status=DonationStatus.UNCONFIRMED, block_time__lt=now - MIN_AGE)
    oldest_waiting = waiting.order_by("block_time").values_list("block_time", flat=True).first()
    latest_price = Price.objects.filter(asset=ETH).order_by("-created_at").values_list("created_at", flat=True).first()
    open_requests = PriceRequest.objects.exclude(status=PriceRequestStatus.SUCCEEDED)
    oldest_request = open_requests.order_by("requested_at").values_list("requested_at", flat=True).first()
    last_run = ReconcileRun.objects.order_by("-finished_at").first()
    inflows = inflows_open()
    oldest_inflow = inflows.order_by("created_at").first()
    degraded = degraded or oldest_inflow is not None
    campaign = DonationStats.objects.get()
    return {
        "campaign": {
            "status": campaign.status,
            "paused_reason": campaign.paused_reason or None,
            "paused_by": campaign.paused_by or None,
            "paused_at": _iso(campaign.paused_at),
        },
        "status": "degraded" if degraded else "ok",
        "chain": {
            "head": head.number if head else UNKNOWN,
            "finalized": finalized.number if finalized else UNKNOWN,
            "provider": client.origin,
        },
        "crawlers": crawlers,
        "old_unconfirmed": {"waiting": waiting.count(), "oldest_block_time": _iso(oldest_waiting)},
        "eth_price": {
            "latest_at": _iso(latest_price),
            "age_seconds": int((now - latest_price).total_seconds()) if latest_price else None,
        },
        "price_requests": {"open": open_requests.count(), "oldest_requested_at": _iso(oldest_request)},
        "completeness": _completeness(),
        # plain | contract | delegated, and how its calls are found (crawlers/scan/with_code.py)
        "donation_address": read_status(chain.name),
        "unexplained_inflows": {
            "open": inflows.count(),
            "oldest_created_at": _iso(oldest_inflow.created_at) if oldest_inflow else None,
            "oldest_block": oldest_inflow.block_number if oldest_inflow else None,
        },
        "reconcile": (
            {
                "finished_at": _iso(last_run.finished_at),
                "ok": last_run.ok,
                "from_block": last_run.from_block,
                "to_block": last_run.to_block,
                "discrepancies": len(last_run.discrepancies),
                "summary": last_run.summary,
            }
            if last_run
            else None
        ),
    }


def _completeness() -> dict[str, Any]:
    """Per crawler: the last block the balance proof closed on, and where proof was impossible."""
    report: dict[str, Any] = {}
    for row in Completeness.objects.order_by("label"):
        entry: dict[str, Any] = {"proven_through": row.proven_through}
        if row.unproven_before is not None:
            entry["unproven"] = f"completeness unproven before block {row.unproven_before}"
        report[row.label] = entry
    return report
