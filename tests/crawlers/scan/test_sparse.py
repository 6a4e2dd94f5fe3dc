"""Sparse ranges: the crawlers skip what the balances prove empty, and find exactly what the full scan finds."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import transaction

from crawlers.models import CHAIN, FINALIZED, LATEST, UnexplainedInflow
from crawlers.record.cursors import cursor_get
from crawlers.runs.crawl import crawl
from donations.models import Donation
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER
from tests.configs import configured

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]

USDT = 10**6
OWNER = ACCOUNTS[1]


class _Undo(Exception):
    pass


def crawled(settings, *, sparse: bool) -> tuple[set, tuple, tuple, set]:
    """Both crawlers from the start block to their tips; the rows, cursors and inflows they leave, then
    undone."""
    settings.CRAWLER_SPARSE = sparse
    seen: dict[str, Any] = {}
    try:
        with transaction.atomic():
            latest, final = crawl(LATEST), crawl(FINALIZED)
            assert latest.held is None
            assert final.held is None
            seen["rows"] = {
                (d.tx_hash, d.log_index, d.trace_address, d.asset, d.amount, d.block_number, d.block_hash, d.status)
                for d in Donation.objects.all()
            }
            seen["cursors"] = tuple(
                (c.value, c.block_hash)
                for c in (cursor_get(chain=CHAIN, label=LATEST), cursor_get(chain=CHAIN, label=FINALIZED))
            )
            seen["tips"] = (latest.tip, final.tip)
            seen["inflows"] = {
                (i.block_number, i.block_hash, i.asset, int(i.amount_raw)) for i in UnexplainedInflow.objects.all()
            }
            raise _Undo
    except _Undo:
        pass
    return seen["rows"], seen["cursors"], seen["tips"], seen["inflows"]


def test_the_sparse_path_records_exactly_what_the_full_scan_records(node, proxy, settings):
    usdt, payee = node.coins["usdt"], ACCOUNTS[6]
    forwarder = node.deploy("EthForwarder", sender=OWNER)
    node.send_eth(OWNER, forwarder, 5 * ETHER)
    node.mint(usdt, ACCOUNTS[2], 1000 * USDT)
    node.mine(40)
    node.send_eth(ACCOUNTS[3], DONATION_ADDRESS, ETHER // 4)  # an ETH donation
    node.mine(70)
    node.transfer_token(usdt, ACCOUNTS[2], DONATION_ADDRESS, 120 * USDT)  # a coin donation
    node.send_eth(ACCOUNTS[4], payee, ETHER)  # unrelated
    node.mine(90)
    node.send_eth(DONATION_ADDRESS, payee, ETHER // 10)  # out of the donation address: credited to nobody
    node.transfer_token(usdt, DONATION_ADDRESS, payee, 20 * USDT)
    node.mine(30)
    data = node.call_data("forward(address,uint256)", ["address", "uint256"], [DONATION_ADDRESS, ETHER // 2])
    node.send({"from": OWNER, "to": forwarder, "data": data, "gas": hex(500_000)})  # internal ETH donation
    node.mine(150)
    node.send_eth(ACCOUNTS[5], DONATION_ADDRESS, 2 * ETHER)
    node.mine(5)

    sparse = crawled(settings, sparse=True)
    sparse_reads = proxy.requests_for("eth_getBlockByNumber")
    full = crawled(settings, sparse=False)
    full_reads = proxy.requests_for("eth_getBlockByNumber") - sparse_reads

    assert sparse == full
    rows = sparse[0]
    assert len(rows) == 4
    assert {r[3] for r in rows} == {"eth", "usdt"}
    assert all(r[7] == "confirmed" for r in rows)
    assert sparse[1][1][0] == node.finalized()
    assert sparse_reads < full_reads // 5, (sparse_reads, full_reads)  # the sparse path did skip


def test_a_quiet_range_costs_a_few_round_trips(node, proxy, settings):
    settings.CONFIG = configured(settings.CONFIG, start_block=node.head() + 1)
    node.mine(502)  # 500 finalized blocks (finalized trails the head by two)

    result = crawl(FINALIZED)

    assert result.held is None
    assert result.blocks == 500
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == node.finalized()
    assert len(proxy.seen) <= 3, [s.methods[:3] for s in proxy.seen]
    assert proxy.requests_for("eth_getBlockByNumber") <= 3  # the tip and two headers: no block bodies


def test_the_per_run_cap_counts_a_skipped_block_as_a_fortieth_of_one_read(node, settings):
    start = node.head() + 1
    settings.CONFIG = configured(settings.CONFIG, start_block=start)
    node.mine(502)

    first = crawl(FINALIZED, max_blocks=10)

    assert first.held is None
    assert first.blocks == 400
    assert first.more_to_do
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == start + 399
    assert crawl(FINALIZED).cursor == node.finalized()


def test_an_address_with_code_is_scanned_in_full(node, proxy, settings):
    node.set_code(DONATION_ADDRESS, "0x00")  # a smart account: its nonce proves nothing
    node.send_eth(ACCOUNTS[3], DONATION_ADDRESS, ETHER)
    node.mine(60)

    result = crawl(FINALIZED)

    assert result.held is None
    assert Donation.objects.get().status == "confirmed"
    bodies = sum(1 for s in proxy.seen for m in s.methods if m == "eth_getBlockByNumber")
    assert bodies >= 60  # every block read


def test_a_coin_burnt_without_a_log_inside_a_net_zero_range_gets_the_same_verdict_on_both_paths(node, proxy, settings):
    usdt = node.coins["usdt"]
    node.mint(usdt, ACCOUNTS[2], 100 * USDT)
    node.mine(60)
    donation = node.transfer_token(usdt, ACCOUNTS[2], DONATION_ADDRESS, 40 * USDT)
    node.mine(30)
    assert node.token_balance(usdt, DONATION_ADDRESS) == 40 * USDT
    # USDT's destroyBlackFunds: the balance is back where the range started, and no Transfer log says so.
    data = node.call_data("destroyBlackFunds(address)", ["address"], [DONATION_ADDRESS])
    burn = node.send({"from": ACCOUNTS[7], "to": usdt, "data": data, "gas": hex(200_000)})
    node.mine(60)

    sparse = crawled(settings, sparse=True)
    full = crawled(settings, sparse=False)

    assert sparse == full
    rows, cursors, _, inflows = sparse
    assert {(r[0], r[3], r[4], r[7]) for r in rows} == {(donation, "usdt", 40, "confirmed")}
    burnt = node.block(int(node.receipt(burn)["blockNumber"], 16))
    assert inflows == {(int(burnt["number"], 16), burnt["hash"], "usdt", -40 * USDT)}
    assert cursors[1][0] == node.finalized()
