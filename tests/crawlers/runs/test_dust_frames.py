"""Issue #19 item 10: internal frames below the ETH column's scale (1e-8 ETH) are dust.

Three frames of 9e9 wei each (tests/contracts/EthForwarder.sol, `forwardMany`) once opened a 2.7e10-wei
unexplained inflow: anyone kept `reconcile` exiting 1 and /health degraded for the price of gas. Dust closes
the identity, like a top-level transfer of a few wei, and is neither credited nor an inflow.
"""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.cache import cache
from django.core.management import call_command

from crawlers.models import FINALIZED, LATEST, UnexplainedInflow
from crawlers.runs.crawl import crawl
from donations.models import Donation
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]

OWNER = ACCOUNTS[1]
DUST_WEI = 9 * 10**9  # below 1e10 wei, the 8-decimal column's unit


def test_three_sub_scale_frames_open_no_inflow_and_leave_reconcile_and_health_clean(node, client):
    first = node.head() + 1
    wallet = node.deploy("EthForwarder", sender=OWNER)
    node.send_eth(OWNER, wallet, ETHER)
    data = node.call_data(
        "forwardMany(address,uint256[])", ["address", "uint256[]"], [DONATION_ADDRESS, [DUST_WEI] * 3]
    )
    tx = node.send({"from": OWNER, "to": wallet, "data": data, "gas": hex(500_000)})
    assert node.receipt(tx)["status"] == "0x1"

    assert crawl(LATEST).held is None
    node.mine(2)
    assert crawl(FINALIZED).held is None

    assert not Donation.objects.exists()
    assert not UnexplainedInflow.objects.exists()
    out = StringIO()
    call_command("reconcile", "--from-block", str(first), "--to-block", str(node.finalized()), stdout=out)
    assert "no drift" in out.getvalue()
    cache.delete("dws:health-report")
    body = client.get("/health").json()
    assert body["unexplained_inflows"]["open"] == 0
    assert body["status"] != "degraded", body
