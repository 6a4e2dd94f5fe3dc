"""The published proof (issue #23): the finalized crawler stores each span it proved, with the donation
address's balances at both ends and what left it, and /proof.json adds what our records say arrived, so
that for every asset closing - opening = credited + unexplained + uncredited - left, exactly."""

from __future__ import annotations

import itertools

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from crawlers.models import LastBlock, ProofRange
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]

USDT = 10**6


def crawl_finalized() -> None:
    call_command("crawl", "finalized", "--once")


def proof(**params) -> dict:
    answer = Client().get("/proof.json", params)
    assert answer.status_code == 200, answer.content
    return answer.json()["chains"][0]


def balance(node, asset: str, block: int) -> int:
    if asset == "eth":
        return int(node.rpc("eth_getBalance", DONATION_ADDRESS, hex(block)), 16)
    data = node.call_data("balanceOf(address)", ["address"], [DONATION_ADDRESS])
    return int(node.rpc("eth_call", {"to": node.coins[asset], "data": data}, hex(block)), 16)


def nonce(node, block: int) -> int:
    return int(node.rpc("eth_getTransactionCount", DONATION_ADDRESS, hex(block)), 16)


def figures(found: dict) -> dict[str, dict]:
    return {a["asset"]: a for a in found["assets"]}


def assert_closes(found: dict) -> None:
    for asset, f in figures(found).items():
        change = int(f["closing"]) - int(f["opening"])
        assert change == int(f["credited"]) + int(f["unexplained"]) + int(f["uncredited"]) - int(f["left"]), asset
        assert int(f["uncredited"]) >= 0, asset


@pytest.fixture(params=[True, False], ids=["sparse", "full-scan"])
def scan_mode(request, settings) -> bool:
    """Both ways the finalized crawler reads a range: the sparse path and every block in full."""
    settings.CRAWLER_SPARSE = request.param
    return request.param


def assert_contiguous(ranges: list[dict]) -> None:
    assert all(b["first_block"] == a["last_block"] + 1 for a, b in itertools.pairwise(ranges))


@pytest.mark.usefixtures("scan_mode")
def test_each_proven_range_carries_the_chain_balances_at_its_edges_and_what_left_and_closes_exactly(node):
    donor, payee = ACCOUNTS[1], ACCOUNTS[5]
    start = node.head() + 1
    node.mint(node.coins["usdt"], donor, 1000 * USDT)
    node.transfer_token(node.coins["usdt"], donor, DONATION_ADDRESS, 300 * USDT)
    node.send_eth(donor, DONATION_ADDRESS, 2 * ETHER + 123)  # 123 wei below the 8-decimal column: uncredited
    node.send_eth(donor, DONATION_ADDRESS, 1)  # dust: arrives, never a donation
    paid_out = node.send_eth(DONATION_ADDRESS, payee, ETHER // 2)
    node.transfer_token(node.coins["usdt"], DONATION_ADDRESS, payee, 120 * USDT)
    node.mine(3)

    crawl_finalized()

    chain = proof()
    final = node.finalized()
    assert chain["proven_through"] == final
    assert chain["first_block"] == start
    ranges = chain["ranges"]
    assert ranges[0]["first_block"] == start
    assert ranges[-1]["last_block"] == final
    assert_contiguous(ranges)
    for found in ranges:
        assert found["status"] == "proven"
        assert found["last_block_hash"] == node.block(found["last_block"])["hash"]
        assert found["nonce"] == {
            "opening": str(nonce(node, found["first_block"] - 1)),
            "closing": str(nonce(node, found["last_block"])),
        }
        for asset, f in figures(found).items():
            assert f["opening"] == str(balance(node, asset, found["first_block"] - 1)), asset
            assert f["closing"] == str(balance(node, asset, found["last_block"])), asset
        assert_closes(found)
    eth = [figures(r)["eth"] for r in ranges]
    usdt = [figures(r)["usdt"] for r in ranges]
    receipt = node.receipt(paid_out)
    fees_out = ETHER // 2 + int(receipt["gasUsed"], 16) * int(receipt["effectiveGasPrice"], 16)
    assert sum(int(f["credited"]) for f in eth) == 2 * ETHER
    assert sum(int(f["uncredited"]) for f in eth) == 124
    assert sum(int(f["left"]) for f in eth) > fees_out  # and the usdt transfer's fee
    assert sum(int(f["credited"]) for f in usdt) == 300 * USDT
    assert sum(int(f["left"]) for f in usdt) == 120 * USDT
    assert sum(f["donations"] for f in eth + usdt) == 2


def test_a_quiet_stretch_extends_the_range_before_it_instead_of_adding_rows(node):
    node.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER)
    node.mine(3)
    crawl_finalized()
    before = proof()["ranges"]

    node.mine(40)
    crawl_finalized()
    node.mine(25)
    crawl_finalized()

    after = proof()["ranges"]
    assert len(after) == len(before)
    assert after[-1]["first_block"] == before[-1]["first_block"]
    assert after[-1]["last_block"] == node.finalized()
    assert figures(after[-1]) == figures(before[-1])  # nothing moved: the same balances and figures
    assert ProofRange.objects.count() == len(after)


@pytest.mark.usefixtures("scan_mode")
def test_a_run_that_stops_inside_a_range_publishes_exactly_the_blocks_its_cursor_passed(node):
    from datetime import timedelta

    from django.utils import timezone

    from prices.models import Price

    first = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    node.mine(1)
    # The next donation's minute has no ETH price yet: the finalized crawler waits for it there.
    node.set_next_block_timestamp(int((timezone.now() + timedelta(hours=3)).timestamp()))
    late = node.send_eth(ACCOUNTS[3], DONATION_ADDRESS, 2 * ETHER)
    node.mine(3)
    late_block = int(node.receipt(late)["blockNumber"], 16)

    with pytest.raises(CommandError, match="no ETH price"):
        crawl_finalized()

    cursor = LastBlock.objects.get(label="finalized").value
    assert cursor < late_block
    published = proof()["ranges"]
    assert published[-1]["last_block"] == cursor
    assert published[-1]["last_block_hash"] == node.block(cursor)["hash"]
    assert figures(published[-1])["eth"]["closing"] == str(balance(node, "eth", cursor))
    assert sum(int(figures(r)["eth"]["credited"]) for r in published) == ETHER
    for found in published:
        assert_closes(found)

    minute = timezone.now() + timedelta(hours=3)
    Price.objects.bulk_create(
        Price(asset="eth", price=2000, created_at=(minute + timedelta(minutes=m)).replace(second=0, microsecond=0))
        for m in range(-3, 4)
    )
    crawl_finalized()

    published = proof()["ranges"]
    assert published[-1]["last_block"] == node.finalized()
    assert published[-2]["last_block"] == cursor  # the stopped run's row stands; the next one starts after it
    assert sum(int(figures(r)["eth"]["credited"]) for r in published) == 3 * ETHER
    for found in published:
        assert found["assets"][0]["opening"] == str(balance(node, "eth", found["first_block"] - 1))
        assert_closes(found)
    assert first


def test_blocks_the_provider_keeps_no_state_for_are_published_as_unproven_and_the_rest_as_proven(node, proxy, settings):
    start = settings.CONFIG.first_chain.start_block
    node.mint(node.coins["usdt"], ACCOUNTS[1], 100 * USDT)
    node.transfer_token(node.coins["usdt"], ACCOUNTS[1], DONATION_ADDRESS, 40 * USDT)
    node.mine(300)
    node.transfer_token(node.coins["usdt"], ACCOUNTS[1], DONATION_ADDRESS, 60 * USDT)
    node.mine(2)
    pruned_below = node.head() - 128

    def pruned(params: list) -> bool:
        at = params[-1]
        return isinstance(at, str) and at.startswith("0x") and int(at, 16) < pruned_below

    for method in ("eth_getBalance", "eth_getTransactionCount", "eth_call"):
        proxy.arm(
            method, "error", count=None, message="missing trie node 2cf5 (path ) state is not available", when=pruned
        )

    # The first refusal of an old balance holds once: the words alone never decide (crawlers/scan/history.py).
    with pytest.raises(CommandError, match=r"the balance at block \d+ was refused"):
        crawl_finalized()
    crawl_finalized()

    chain = proof()
    ranges = chain["ranges"]
    assert_contiguous(ranges)
    assert (ranges[0]["first_block"], ranges[-1]["last_block"]) == (start, node.finalized())
    (unproven,) = chain["unproven"]  # adjacent ranges without proof, for the same reason: one row
    assert unproven["first_block"] == start
    assert pruned_below - 50 <= unproven["last_block"] < pruned_below + 50
    assert "no historical state" in unproven["reason"]
    assert ranges[0]["status"] == "unproven"
    assert {a["opening"] for a in ranges[0]["assets"]} == {None}
    assert figures(ranges[0])["usdt"]["credited"] == str(40 * USDT)  # what was credited is still shown
    assert all(r["status"] == "proven" for r in ranges[1:])
    assert chain["proven_through"] == node.finalized()
    for found in ranges[1:]:
        assert_closes(found)


def test_a_cursor_set_back_proves_those_blocks_again_without_a_second_row_for_any_of_them(node):
    node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    node.mine(10)
    crawl_finalized()
    before = proof()["ranges"]
    call_command("set_cursor", "finalized", str(before[-1]["last_block"] - 6))
    node.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER)
    node.mine(3)

    crawl_finalized()

    after = proof()["ranges"]
    assert_contiguous(after)
    assert after[: len(before) - 1] == before[:-1]
    assert after[-1]["last_block"] == node.finalized()
    assert sum(int(figures(r)["eth"]["credited"]) for r in after) == 2 * ETHER
    for found in after:
        assert_closes(found)
        assert figures(found)["eth"]["closing"] == str(balance(node, "eth", found["last_block"]))
