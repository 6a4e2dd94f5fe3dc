"""A provider without traces beside a check provider with them (found by the chain fuzzer, issue 32): the
latest crawler, falling over to the check provider while ours gave no evidence, records an internal ETH
donation unconfirmed; the finalized crawler's provider cannot trace it and records its block's unexplained
inflow. reconcile (which reads the check provider, and so sees the donation) must call that row the open
inflow's money, waiting for the operator: before, it was "unconfirmed, not confirmed", drift, and the sale
froze."""

from __future__ import annotations

import pytest

from crawlers.models import FINALIZED, LATEST, UnexplainedInflow
from crawlers.runs.crawl import crawl
from crawlers.runs.reconcile import reconcile
from donations.models import Donation, DonationStats
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER
from tests.configs import configured
from tests.rpc_proxy import RpcProxy

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]


def test_an_internal_donation_only_the_check_provider_can_trace_waits_for_the_operator(node, settings):
    first = node.head() + 1
    relay = node.deploy("EthRelay")
    data = node.call_data("relay(address)", ["address"], [DONATION_ADDRESS])
    relayed = node.send({"from": ACCOUNTS[3], "to": relay, "value": hex(ETHER), "data": data, "gas": hex(200_000)})
    node.mine(2)
    with RpcProxy(node.url) as primary, RpcProxy(node.url) as check:
        primary.refuse_traces()
        settings.CONFIG = configured(settings.CONFIG, rpc_url=primary.url("/rpc"), rpc_check_url=check.url("/check"))
        primary.arm("eth_chainId", "drop")  # ours gives no evidence for one run: the latest crawler asks the check
        assert crawl(LATEST).held is None
        assert Donation.objects.get().tx_hash == relayed
        assert crawl(FINALIZED).held is None

        report = reconcile(first, node.finalized())

    assert Donation.objects.get().status == "unconfirmed"
    assert UnexplainedInflow.objects.get().status == "open"
    assert report.discrepancies == report.awaiting_operator
    assert any(relayed in line and "held by open unexplained inflow" in line for line in report.awaiting_operator)
    assert DonationStats.objects.get().status == "open"
