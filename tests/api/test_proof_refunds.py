"""/proof.json and /proof list the refunds paid in each range (the refund register's paid rows): each with what
a verifier needs to find its transfer on its own node (transaction, Transfer log or call frame, recipient,
token, raw amount); for ETH and the coins part of the range's `left`."""

from __future__ import annotations

from decimal import Decimal

import pytest

from donations.refund_models import Refund
from tests.api.test_proof_api import ETH, publish

pytestmark = pytest.mark.django_db

DONOR = "0x" + "d0" * 20
USDT = "0x" + "11" * 20


def paid(block: int, asset: str, amount: str, *, log: int | None = None, path: str = "", reason: str = "sale-closed"):
    return Refund.objects.create(
        chain="eth",
        donor=DONOR,
        asset=asset,
        contract=USDT if asset == "usdt" else "",
        decimals=6 if asset == "usdt" else 18,
        amount=Decimal(amount),
        reason=reason,
        source_tx_hash="0x" + "5c" * 32,
        status="paid",
        paid_tx_hash="0x" + format(block, "064x"),
        paid_log_index=log,
        paid_trace_address=path,
        paid_block_number=block,
    )


def test_each_range_lists_the_refunds_paid_in_its_blocks(api):
    publish(100, 110, received=2 * ETH, left=ETH)
    publish(111, 120, received=5)  # something moved: a range of its own
    paid(105, "eth", "1", path="0.1")
    paid(115, "usdt", "2.5", log=4, reason="stray-coin")
    Refund.objects.create(  # owed: not on the proof until it is paid
        chain="eth", donor=DONOR, asset="eth", decimals=18, amount=Decimal(3), reason="sale-closed"
    )

    first, second = api.get("/proof.json").json()["chains"][0]["ranges"]

    assert first["refunds"] == [
        {
            "tx_hash": "0x" + format(105, "064x"),
            "log_index": None,
            "trace_address": "0.1",
            "block_number": 105,
            "recipient": DONOR,
            "asset": "eth",
            "contract": None,
            "decimals": 18,
            "amount_raw": str(ETH),
            "reason": "sale-closed",
            "source_tx_hash": "0x" + "5c" * 32,
        }
    ]
    assert first["assets"][0]["left"] == str(ETH)  # the refund is what left
    assert [(r["asset"], r["log_index"], r["amount_raw"], r["contract"]) for r in second["refunds"]] == [
        ("usdt", 4, "2500000", USDT)
    ]

    page = api.get("/proof").content.decode()
    assert "Refunds paid in these ranges" in page
    assert f"<td><code>{DONOR}</code></td><td>1 ETH</td>" in page
    assert f"<td><code>{DONOR}</code></td><td>2.5 USDT</td>" in page
