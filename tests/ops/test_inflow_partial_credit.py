"""Issue #19 item 7: an inflow closes only for what is proven.

8 ETH reach the donation address in one transaction (tests/contracts/SplitPayer.sol): 3 by a call, 5 by
SELFDESTRUCT. Crawled while the provider refused traces, the whole 8 ETH is one unexplained inflow. "Credit
this transaction" credits the 3 ETH the detection finds and leaves the inflow open for the other 5; "not a
donation" then closes those 5, with the reason.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from crawlers.models import FINALIZED, LATEST, UnexplainedInflow
from crawlers.runs.crawl import crawl
from donations.models import Donation
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]


@pytest.fixture
def operator(client):
    client.force_login(User.objects.create_superuser("alice", "alice@example.org", "pw-not-used"))
    return client


def test_credit_this_transaction_credits_what_is_found_and_leaves_the_rest_open(operator, node, proxy):
    payer = node.deploy("SplitPayer")
    node.send_eth(ACCOUNTS[4], payer, 8 * ETHER)
    data = node.call_data("payThenDestroy(address,uint256)", ["address", "uint256"], [DONATION_ADDRESS, 3 * ETHER])
    tx = node.send({"from": ACCOUNTS[4], "to": payer, "data": data, "gas": hex(300_000)})
    assert node.receipt(tx)["status"] == "0x1"
    node.mine(2)
    proxy.refuse_traces()
    crawl(LATEST)
    crawl(FINALIZED)
    proxy.disarm()
    inflow = UnexplainedInflow.objects.get()
    assert (inflow.asset, inflow.amount) == ("eth", Decimal(8))

    credited = operator.post(reverse("admin:crawlers_unexplainedinflow_credit", args=[inflow.pk]), {"tx_hash": tx})

    assert credited.status_code == 302
    assert list(Donation.objects.values_list("tx_hash", "address", "amount", "status")) == [
        (tx, payer, Decimal(3), "confirmed")
    ]
    inflow.refresh_from_db()
    assert (inflow.status, inflow.amount, inflow.amount_raw) == ("open", Decimal(5), 5 * ETHER)
    assert f"3 eth credited as transaction {tx} by alice (admin)" in inflow.reason
    listing = operator.get(reverse("admin:crawlers_unexplainedinflow_changelist")).content.decode()
    assert "credit this transaction" in listing

    dismissed = operator.post(
        reverse("admin:crawlers_unexplainedinflow_dismiss", args=[inflow.pk]), {"reason": "the payer's self-destruct"}
    )

    assert dismissed.status_code == 302
    inflow.refresh_from_db()
    assert (inflow.status, inflow.amount) == ("dismissed", Decimal(5))
    assert inflow.reason.endswith("the payer's self-destruct")
    assert Donation.objects.count() == 1
