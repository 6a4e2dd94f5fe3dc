"""An unexplained inflow from the operator's side: /health, `reconcile` exit 1, and the admin's two ways to close it.

The inflow is made the way production makes one: ETH forwarded to the donation address by a contract
(an internal call), crawled through a provider that refuses every trace method.
"""

from __future__ import annotations

import logging
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from crawlers.models import FINALIZED, LATEST, UnexplainedInflow
from crawlers.runs.crawl import crawl
from donations.models import Donation, DonationStats
from donations.webhook_models import WebhookEvent
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER
from tests.manual import has_heading, pointed_section
from tests.webhook_receiver import registered_endpoint

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]


@pytest.fixture
def operator(client):
    user = User.objects.create_superuser("alice", "alice@example.org", "pw-not-used")
    client.force_login(user)
    return client


@pytest.fixture
def forwarded(node, proxy) -> dict:
    """3 ETH paid to us by the EthRelay contract, crawled to finality while the provider refuses traces."""
    first = node.head() + 1
    relay = node.deploy("EthRelay")
    data = node.call_data("relay(address)", ["address"], [DONATION_ADDRESS])
    tx = node.send({"from": ACCOUNTS[4], "to": relay, "value": hex(3 * ETHER), "data": data})
    node.mine(2)
    proxy.refuse_traces()
    crawl(LATEST)
    crawl(FINALIZED)
    proxy.disarm()
    return {"tx": tx, "relay": relay, "from": first, "to": node.finalized(), "inflow": UnexplainedInflow.objects.get()}


def reconcile(forwarded) -> tuple[str, int]:
    out = StringIO()
    try:
        call_command(
            "reconcile", "--from-block", str(forwarded["from"]), "--to-block", str(forwarded["to"]), stdout=out
        )
    except CommandError as exc:
        return out.getvalue() + str(exc), 1
    return out.getvalue(), 0


def test_an_open_inflow_shows_on_health_and_makes_reconcile_exit_1(client, forwarded):
    inflow = forwarded["inflow"]
    cache.delete("dws:health-report")

    body = client.get("/health").json()

    assert body["unexplained_inflows"] == {
        "open": 1,
        "oldest_created_at": inflow.created_at.isoformat(),
        "oldest_block": inflow.block_number,
        "oldest_chain": "eth",
    }
    assert body["status"] == "degraded"
    output, status = reconcile(forwarded)
    assert status == 1
    assert f"block {inflow.block_number}: unexplained inflow {inflow.pk} of 3.000000000000000000 eth is open" in output


def test_not_a_donation_needs_a_reason_closes_the_inflow_and_is_logged_with_the_operator(
    operator, forwarded, proxy, caplog
):
    inflow = forwarded["inflow"]
    listing = operator.get(reverse("admin:crawlers_unexplainedinflow_changelist")).content.decode()
    assert "credit this transaction" in listing
    assert "not a donation" in listing
    url = reverse("admin:crawlers_unexplainedinflow_dismiss", args=[inflow.pk])

    refused = operator.post(url, {"reason": "  "})
    assert refused.status_code == 200
    assert "This field is required." in refused.content.decode()
    with caplog.at_level(logging.WARNING):
        done = operator.post(url, {"reason": "our own refund from the exchange"})

    assert done.status_code == 302
    inflow.refresh_from_db()
    assert (inflow.status, inflow.reason, inflow.operator) == (
        "dismissed",
        "our own refund from the exchange",
        "alice (admin)",
    )
    assert (
        f"unexplained inflow {inflow.pk} (block {inflow.block_number} of eth, 3.000000000000000000 eth) marked not a "
        in (caplog.text)
    )
    assert "by alice (admin): our own refund from the exchange" in caplog.text
    assert not Donation.objects.exists()
    proxy.refuse_traces()  # still no traces: the block's identity does not close, but an operator closed it
    output, status = reconcile(forwarded)
    assert status == 0, output
    assert "(dismissed by an operator)" in output


def test_credit_refuses_a_transaction_the_detection_does_not_find_in_that_block(operator, forwarded, node):
    inflow = forwarded["inflow"]
    other = node.send_eth(ACCOUNTS[1], ACCOUNTS[2], ETHER)

    page = operator.post(reverse("admin:crawlers_unexplainedinflow_credit", args=[inflow.pk]), {"tx_hash": other})

    assert page.status_code == 200
    assert f"no new eth donation of transaction {other} found in block {inflow.block_number}: it is not seen by" in (
        page.content.decode()
    )
    inflow.refresh_from_db()
    assert inflow.status == "open"
    assert not Donation.objects.filter(tx_hash=other).exists()


def test_credit_this_transaction_credits_it_through_the_traces_and_reconcile_then_exits_0(
    operator, forwarded, proxy, caplog
):
    """Needs call traces (crawlers/scan/traces.py, from the traces work of issue #10): anvil answers
    debug_traceBlockByNumber once the proxy stops refusing it."""
    inflow = forwarded["inflow"]
    proxy.refuse_traces()
    assert reconcile(forwarded)[1] == 1  # the open inflow (not drift: the sale is not frozen for it)
    assert DonationStats.objects.get().status == "open"
    proxy.disarm()  # the provider answers traces again

    with caplog.at_level(logging.WARNING):
        page = operator.post(
            reverse("admin:crawlers_unexplainedinflow_credit", args=[inflow.pk]), {"tx_hash": forwarded["tx"]}
        )

    assert page.status_code == 302, page.content.decode()
    inflow.refresh_from_db()
    assert (inflow.status, inflow.tx_hash, inflow.operator) == ("credited", forwarded["tx"], "alice (admin)")
    donation = Donation.objects.get()
    assert (donation.tx_hash, donation.address, donation.asset, donation.status) == (
        forwarded["tx"],
        forwarded["relay"],
        "eth",
        "confirmed",
    )
    assert f"credited by alice (admin) as transaction {forwarded['tx']}" in caplog.text
    # The audit line carries the amount check: what was credited, and what of the inflow is left open.
    assert f"3.0000000000 eth credited, {inflow.amount - donation.amount} eth left open" in caplog.text
    output, status = reconcile(forwarded)
    assert status == 0, output


def test_the_error_line_points_at_the_runbook(forwarded, caplog):
    recorded = caplog.get_records("setup")  # the inflow was recorded while the fixture crawled
    line = next(r.getMessage() for r in recorded if r.getMessage().startswith("unexplained inflow:"))
    assert pointed_section(line) == ("docs/operating.md", "an unexplained inflow")
    assert has_heading(*pointed_section(line))


def test_credit_refuses_a_donation_already_recorded_in_that_block(operator, node, proxy):
    relay = node.deploy("EthRelay")
    data = node.call_data("relay(address)", ["address"], [DONATION_ADDRESS])
    with node.one_block():
        direct = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
        node.send({"from": ACCOUNTS[4], "to": relay, "value": hex(2 * ETHER), "data": data})
    node.mine(2)
    proxy.refuse_traces()
    crawl(FINALIZED)
    inflow = UnexplainedInflow.objects.get()
    assert inflow.amount_raw == 2 * ETHER

    page = operator.post(reverse("admin:crawlers_unexplainedinflow_credit", args=[inflow.pk]), {"tx_hash": direct})

    assert "was already recorded, so it cannot explain this inflow" in page.content.decode()
    inflow.refresh_from_db()
    assert inflow.status == "open"
    assert Donation.objects.get().tx_hash == direct


def test_reconcile_judges_by_the_balances_not_by_the_crawlers_records(forwarded, proxy):
    """Without its inflow row (as if the crawler had never noticed), the block is still drift: reconcile
    reads the address's balances itself."""
    inflow = forwarded["inflow"]
    UnexplainedInflow.objects.filter(pk=inflow.pk).delete()  # tampering, to see reconcile notice
    proxy.refuse_traces()  # and no call traces: only the balances can tell

    output, status = reconcile(forwarded)

    assert status == 1
    assert (
        f"block {inflow.block_number}: {3 * ETHER} raw units of eth arrived that no transfer explains, and no "
        "unexplained inflow is recorded for it"
    ) in output


def test_recording_an_inflow_queues_the_inflow_unexplained_webhook(node, proxy):
    registered_endpoint("https://crm.example/hooks", ["inflow.unexplained"], secret="s" * 32)
    relay = node.deploy("EthRelay")
    data = node.call_data("relay(address)", ["address"], [DONATION_ADDRESS])
    node.send({"from": ACCOUNTS[4], "to": relay, "value": hex(ETHER // 2), "data": data})
    node.mine(2)
    proxy.refuse_traces()

    crawl(FINALIZED)
    crawl(FINALIZED)  # recorded once, announced once

    inflow = UnexplainedInflow.objects.get()
    (event,) = WebhookEvent.objects.filter(event="inflow.unexplained")
    assert event.payload["data"] == {
        "chain": "eth",
        "chain_id": 31337,
        "id": inflow.pk,
        "asset": "eth",
        "amount": "0.5",  # as /proof.json lists it: no trailing zeros, never an exponent
        "amount_raw": str(ETHER // 2),
        "block_number": inflow.block_number,
        "block_hash": inflow.block_hash,
    }
