"""The refund register watched: /health and the metrics give what is owed per chain and asset, and a refund
owed past DWS_REFUND_ALERT_DAYS is overdue (the DwsRefundOverdue alert fires on it)."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
import yaml
from django.core.cache import cache
from django.utils import timezone

from donations.refund_models import Refund, UnmatchedPayout
from dws_project.metrics_collectors import DATABASE_CACHE_KEY

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config")]

DONOR = "0x" + "d0" * 20
ALERTS = Path(__file__).resolve().parents[2] / "deploy" / "prometheus" / "alerts.yml"


def owed(asset: str, amount: str, *, days_ago: int = 0, tx: str = "01") -> Refund:
    row = Refund.objects.create(
        chain="eth",
        donor=DONOR,
        asset=asset,
        contract="" if asset == "eth" else "0x" + "11" * 20,
        decimals=18 if asset == "eth" else 6,
        amount=Decimal(amount),
        reason="stray-coin",
        source_tx_hash="0x" + tx * 32,
        source_log_index=0,
    )
    Refund.objects.filter(pk=row.pk).update(created_at=timezone.now() - timedelta(days=days_ago))
    return row


def test_health_and_the_metrics_give_the_owed_totals_and_the_overdue_rows(client, settings):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, refund_alert_days=14)
    old = owed("eth", "1.5", days_ago=20)
    owed("eth", "0.25", tx="02")
    owed("usdt", "7", tx="03")
    paid = owed("usdt", "100", tx="04")
    Refund.objects.filter(pk=paid.pk).update(status="paid", paid_tx_hash="0x" + "ee" * 32, paid_block_number=3)
    UnmatchedPayout.objects.create(
        chain="eth", tx_hash="0x" + "ab" * 32, block_number=3, recipient=DONOR, asset="eth", amount=Decimal(2)
    )
    cache.delete("dws:health-report")
    cache.delete(DATABASE_CACHE_KEY)

    refunds = client.get("/health").json()["refunds"]

    assert refunds["owed"] == [
        {
            "chain": "eth",
            "asset": "eth",
            "amount": "1.75",
            "rows": 2,
            "oldest_created_at": Refund.objects.get(pk=old.pk).created_at.isoformat().replace("+00:00", "Z"),
        },
        {
            "chain": "eth",
            "asset": "usdt",
            "amount": "7",
            "rows": 1,
            "oldest_created_at": refunds["owed"][1]["oldest_created_at"],
        },
    ]
    assert (refunds["overdue"], refunds["alert_days"], refunds["unmatched_payouts_open"]) == (1, 14, 1)

    scraped = client.get("/metrics", REMOTE_ADDR="127.0.0.1").content.decode()
    assert 'dws_refunds_owed{asset="eth",chain="eth"} 1.75' in scraped
    assert 'dws_refunds_owed{asset="usdt",chain="eth"} 7.0' in scraped
    assert 'dws_refunds_owed_rows{asset="eth",chain="eth"} 2.0' in scraped
    assert 'dws_refunds_overdue{asset="eth",chain="eth"} 1.0' in scraped
    assert 'dws_refunds_overdue{asset="usdt",chain="eth"} 0.0' in scraped


def test_an_overdue_refund_is_an_alert():
    rules = yaml.safe_load(ALERTS.read_text())["groups"][0]["rules"]
    (overdue,) = [r for r in rules if "dws_refunds_overdue" in r["expr"]]
    assert overdue["expr"] == "max by (chain, asset) (dws_refunds_overdue) > 0"
    assert overdue["annotations"]["runbook"] == 'docs/operating.md, "refunds"'
