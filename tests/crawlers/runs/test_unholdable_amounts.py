"""No amount wedges the others (issue 32): a transfer the donation columns cannot hold is set aside for the
operator, and everything beside it and after it is credited as usual, by both crawlers and in reconcile.

* 2^255 units of a configured coin (anyone may mint the test coin; a coin's contract is not ours to
  trust) paid to the donation address in the same block as an ETH and a USDC donation: before, both
  crawlers held on that block for ever ("reading blocks from here raised InvalidOperation"), naming
  neither the transaction nor the asset;
* a log index past donation.log_index's signed 32-bit range (0xffffffe2: some providers number synthetic
  logs near 2^32), written by the proxy: stored as it is.
"""

from __future__ import annotations

import logging
from decimal import Decimal

import pytest

from crawlers.models import CHAIN, FINALIZED, LATEST, UnexplainedInflow
from crawlers.record.cursors import cursor_get
from crawlers.runs.crawl import crawl
from crawlers.runs.reconcile import reconcile
from donations.models import Donation, DonationStats, UserData
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER, multisend
from tests.configs import configured
from tests.rpc_proxy import RpcProxy

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]

USDT = 10**6
HUGE = 2**255


def test_a_transfer_no_column_can_hold_is_an_inflow_for_the_operator_and_the_rest_is_credited(node, caplog):
    first = node.head() + 1
    node.mint(node.coins["usdt"], ACCOUNTS[5], HUGE)
    node.mint(node.coins["usdc"], ACCOUNTS[2], 30 * USDT)
    with node.one_block():
        huge = node.transfer_token(node.coins["usdt"], ACCOUNTS[5], DONATION_ADDRESS, HUGE)
        eth = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
        usdc = node.transfer_token(node.coins["usdc"], ACCOUNTS[2], DONATION_ADDRESS, 30 * USDT)
    block = int(node.receipt(huge)["blockNumber"], 16)
    after = node.send_eth(ACCOUNTS[3], DONATION_ADDRESS, 2 * ETHER)
    node.mine(2)

    with caplog.at_level(logging.WARNING):
        latest = crawl(LATEST)
        assert latest.held is None
        assert latest.inserted == 3
        final = crawl(FINALIZED)

    assert final.held is None
    assert {d.tx_hash: (d.asset, d.amount, d.status) for d in Donation.objects.all()} == {
        eth: ("eth", Decimal("1"), "confirmed"),
        usdc: ("usdc", Decimal("30"), "confirmed"),
        after: ("eth", Decimal("2"), "confirmed"),
    }
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == node.finalized()
    inflow = UnexplainedInflow.objects.get()
    assert (inflow.block_number, inflow.asset, int(inflow.amount_raw), inflow.status) == (block, "usdt", HUGE, "open")
    assert inflow.amount == Decimal(f"{HUGE // USDT}.{HUGE % USDT:06d}")  # exact, in whole coins
    assert huge in inflow.reason
    named = [r.getMessage() for r in caplog.records if huge in r.getMessage() and "usdt" in r.getMessage()]
    assert named, "the transaction and the asset are named in the log"

    report = reconcile(first, node.finalized())
    assert report.discrepancies == report.awaiting_operator  # the inflow waits for the operator: no drift
    assert any(huge in line for line in report.awaiting_operator)
    assert DonationStats.objects.get().status == "open"


def test_a_log_index_past_32_bits_is_stored_as_it_is(node, settings):
    node.mint(node.coins["usdt"], ACCOUNTS[2], 40 * USDT)
    usdt = node.transfer_token(node.coins["usdt"], ACCOUNTS[2], DONATION_ADDRESS, 40 * USDT)
    node.mine(2)

    def synthetic(logs, _params):
        return [log | {"logIndex": "0xffffffe2"} for log in logs] if isinstance(logs, list) else logs

    with RpcProxy(node.url) as provider:
        provider.arm("eth_getLogs", "rewrite", count=None, rewrite=synthetic)
        settings.CONFIG = configured(settings.CONFIG, rpc_url=provider.url("/rpc"))
        assert crawl(LATEST).held is None
        assert crawl(FINALIZED).held is None

    row = Donation.objects.get()
    assert (row.tx_hash, row.log_index, row.amount, row.status) == (usdt, 0xFFFFFFE2, Decimal("40"), "confirmed")


def test_totals_past_the_old_columns_never_wedge_crediting(node):
    """Each donation fits its row, but what they add up to did not fit the totals: user_data.total was
    NUMERIC(12,2) (a donor's second 9.9-billion USDT donation overflowed it) and donation_stats.total
    NUMERIC(14,2) (a hundred such donations): the finalized crawler's block write failed on every run ("numeric
    field overflow"), holding that block and every donation after it, anyone's (found by attack32; this test
    failed so). A coin's contract is not ours to trust: anyone may mint the test coin. The totals are wide
    enough now for any number of donations the columns hold."""
    donor, each, count = ACCOUNTS[6], 9_900_000_000 * USDT, 102  # 102 x 9.9e9 USD: past 10^12
    safe = node.deploy("BatchSafe", ["address"], [donor])
    node.mint(node.coins["usdt"], safe, count * each)
    pay = node.call_data("transfer(address,uint256)", ["address", "uint256"], [DONATION_ADDRESS, each])
    batch = multisend([{"to": node.coins["usdt"], "value": 0, "data": pay}] * count)
    paid = node.send(
        {
            "from": donor,
            "to": safe,
            "data": node.call_data("multiSend(bytes)", ["bytes"], [batch]),
            "gas": hex(8_000_000),
        }
    )
    assert node.receipt(paid)["status"] == "0x1"
    after = node.send_eth(ACCOUNTS[3], DONATION_ADDRESS, ETHER)
    node.mine(2)

    assert crawl(LATEST).held is None
    assert crawl(FINALIZED).held is None

    assert Donation.objects.filter(tx_hash=paid, status="confirmed").count() == count
    assert Donation.objects.get(tx_hash=after).status == "confirmed"
    stats = DonationStats.objects.get()
    assert stats.total == count * Decimal(9_900_000_000) + Donation.objects.get(tx_hash=after).usd_amount
    assert UserData.objects.get(address=safe).total == count * Decimal(9_900_000_000)
