"""What the crawlers' readers see: `GET /health`'s report (where each crawler is against the chain, the
price feed, reconcile) and the open unexplained inflows (the admin, reconcile, /health).

Each chain's provider is asked once (one batched request, a short time-out, every chain's at the same
time): the head, the finalized block and the cursors' blocks (for the lag in seconds). When one does not
answer, that chain's fields say "unknown" and the rest of the report still comes from the database.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from crawlers.chain.calls import header_call
from crawlers.chain.clients import make_probe_client
from crawlers.chain.outcomes import Answer, RpcOutcome
from crawlers.chain.rpc import RpcClient
from crawlers.decode.blocks import BlockHeader, header_of
from crawlers.models import (
    FINALIZED,
    LATEST,
    Completeness,
    InflowStatus,
    LastBlock,
    ReconcileRun,
    UnexplainedInflow,
)
from crawlers.record.cursors import cursor_get
from crawlers.runs.address_code import refused_chains
from crawlers.runs.check_status import check_status
from crawlers.runs.old_unconfirmed import MIN_AGE
from crawlers.runs.operator import LABELS
from crawlers.runs.progress import STUCK, catch_up_status, crawler_state
from crawlers.runs.reconcile_day import DAILY
from crawlers.scan.with_code import read_status
from donations.ledger import ledger_snapshot
from donations.models import Donation, DonationStats, DonationStatus
from donations.refund_selectors import refunds_report
from dws_project.chain_settings import ChainSettings
from prices.models import ETH, Price, PriceRequest, PriceRequestStatus

UNKNOWN = "unknown"


def _iso(when: datetime | None) -> str | None:
    return when.isoformat() if when else None


def inflows_open() -> QuerySet[UnexplainedInflow]:
    return UnexplainedInflow.objects.filter(status=InflowStatus.OPEN)


def _header(outcome: RpcOutcome) -> BlockHeader | None:
    return header_of(outcome.value) if isinstance(outcome, Answer) else None


def _lag_seconds(tip: BlockHeader, at_cursor: BlockHeader) -> int:
    return int((tip.time - at_cursor.time).total_seconds())


@ledger_snapshot()  # the campaign, cursors, inflows and reconcile runs as of one moment
def health_report(*, client: RpcClient | None = None, now: datetime | None = None) -> dict[str, Any]:
    """The report: the campaign, the price feed and, for every chain, its crawlers against its provider
    (`chains`, in DWS_CHAINS order; the first chain's figures also at the top level, as before several
    chains). `client` stands in for the first chain's provider. The providers are asked in parallel, so
    one that hangs costs the report one time-out, whatever the number of chains."""
    config = settings.CONFIG
    now = now or timezone.now()
    cursors = {c.name: {label: cursor_get(chain=c.name, label=label) for label in LABELS} for c in config.chains}
    clients = {c.name: make_probe_client(c) for c in config.chains}
    if client is not None:
        clients[config.first_chain.name] = client
    with ThreadPoolExecutor(max_workers=len(config.chains)) as pool:  # RPC only: no database in the threads
        asked = {c.name: pool.submit(_ask_provider, clients[c.name], cursors[c.name]) for c in config.chains}
        answers = {name: future.result() for name, future in asked.items()}
    refused = refused_chains()
    chains = {
        c.name: _chain_health(c, clients[c.name], cursors[c.name], answers[c.name], refused.get(c.name), now)
        for c in config.chains
    }
    first = chains[config.first_chain.name]
    degraded = any(entry["degraded"] for entry in chains.values())

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
        "chain": {k: first["chain"][k] for k in ("head", "finalized", "provider")},
        "crawlers": first["crawlers"],
        "chains": {name: {k: v for k, v in entry.items() if k != "degraded"} for name, entry in chains.items()},
        "old_unconfirmed": {"waiting": waiting.count(), "oldest_block_time": _iso(oldest_waiting)},
        "eth_price": {
            "latest_at": _iso(latest_price),
            "age_seconds": int((now - latest_price).total_seconds()) if latest_price else None,
        },
        "price_requests": {"open": open_requests.count(), "oldest_requested_at": _iso(oldest_request)},
        "completeness": first["completeness"],
        # plain | contract | delegated, how it is read (a Safe: by its events) and how its calls are found
        # (crawlers/scan/with_code.py)
        "donation_address": first["donation_address"],
        "unexplained_inflows": {
            "open": inflows.count(),
            "oldest_created_at": _iso(oldest_inflow.created_at) if oldest_inflow else None,
            "oldest_block": oldest_inflow.block_number if oldest_inflow else None,
            "oldest_chain": oldest_inflow.chain if oldest_inflow else None,
        },
        "reconcile": _reconcile_entry(last_run),
        # the refund register: owed per chain and asset, overdue past DWS_REFUND_ALERT_DAYS (docs/operating.md)
        "refunds": refunds_report(now=now, alert_days=config.refund_alert_days),
    }


def _ask_provider(client: RpcClient, cursors: dict[str, LastBlock | None]) -> list[RpcOutcome]:
    """One batch: the head, the finalized block, and the cursors' blocks (for the lag in seconds)."""
    calls = [header_call("latest"), header_call("finalized")]
    calls += [header_call(c.value) for c in cursors.values() if c is not None]
    return client.batch(calls)


def _chain_health(
    chain: ChainSettings,
    client: RpcClient,
    cursors: dict[str, LastBlock | None],
    outcomes: list[RpcOutcome],
    refused: str | None,
    now: datetime,
) -> dict[str, Any]:
    head, finalized = _header(outcomes[0]), _header(outcomes[1])
    cursor_blocks = iter(outcomes[2:])
    tips = {LATEST: head, FINALIZED: finalized}
    crawlers: dict[str, Any] = {}
    degraded = head is None or finalized is None or refused is not None
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
            "catch_up": catch_up_status(chain.name, label),  # null when current; else behind, speed, expected end
        }
        if tip is None:
            entry["state"] = entry["stuck"] = UNKNOWN
        else:
            # following | catching up | stuck: the one rule the metrics and the alert use too
            entry["state"] = crawler_state(label, cursor=cursor.value, tip=tip.number, since_moved=since)
            entry["stuck"] = entry["state"] == STUCK
            degraded = degraded or entry["stuck"]
        crawlers[label] = entry
    open_here = inflows_open().filter(chain=chain.name)
    return {
        "chain": {
            "name": chain.name,
            "chain_id": chain.chain_id,
            "head": head.number if head else UNKNOWN,
            "finalized": finalized.number if finalized else UNKNOWN,
            "provider": client.origin,
        },
        "refused": refused,  # why the chain takes no donations now (crawlers/runs/address_code.py), or null
        "crawlers": crawlers,
        "completeness": _completeness(chain.name),
        "donation_address": read_status(chain.name),
        "unexplained_inflows_open": open_here.count(),
        "reconcile": _reconcile_entry(ReconcileRun.objects.filter(chain=chain.name).order_by("-finished_at").first()),
        "daily_reconcile": _daily_reconcile(chain.name),
        # the second provider (DWS_RPC_CHECK_URL): agreeing, lagging, waiting or disagreeing, and since when
        "check_provider": check_status(chain),
        "degraded": degraded,
    }


def _reconcile_entry(run: ReconcileRun | None) -> dict[str, Any] | None:
    if run is None:
        return None
    return {
        "chain": run.chain,
        "finished_at": _iso(run.finished_at),
        "ok": run.ok,
        "from_block": run.from_block,
        "to_block": run.to_block,
        "discrepancies": len(run.discrepancies),
        "summary": run.summary,
    }


def _daily_reconcile(chain: str) -> dict[str, Any] | None:
    """The chain's last daily reconcile (its `to_block`: through which block, and when) with the day it was
    covering (the blocks of its last 24 hours: crawlers/runs/reconcile_day.py) and whether it reached its end."""
    run = ReconcileRun.objects.filter(chain=chain, trigger=DAILY).order_by("-finished_at", "-id").first()
    entry = _reconcile_entry(run)
    if run is None or entry is None:
        return None
    day = {"day_first_block": run.day_first_block, "day_last_block": run.day_last_block}
    return entry | day | {"day_covered": run.day_last_block is not None and run.to_block >= run.day_last_block}


def _completeness(chain: str) -> dict[str, Any]:
    """Per crawler of `chain`: the last block the balance proof closed on, and where proof was impossible."""
    report: dict[str, Any] = {}
    for row in Completeness.objects.filter(chain=chain).order_by("label"):
        entry: dict[str, Any] = {"proven_through": row.proven_through}
        if row.unproven_before is not None:
            entry["unproven"] = f"completeness unproven before block {row.unproven_before}"
        report[row.label] = entry
    return report
