"""A second provider (DWS_RPC_CHECK_URL): confirmation needs both to agree; a lagging one is waited for;
the latest crawler falls over to it; reconcile asks it.

The providers are real anvil nodes, one of them behind the fault proxy: the check provider in front of
the same chain agrees; a separate anvil (same chain id, its own history) is a diverged node; a proxy
rewriting answers is a lying one.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta

import pytest

from crawlers.chain.calls import address_topic
from crawlers.models import CHAIN, FINALIZED, LATEST
from crawlers.record.cursors import cursor_get, cursor_write
from crawlers.runs.crawl import crawl, crawl_single_block
from crawlers.runs.old_unconfirmed import crawl_old_unconfirmed
from crawlers.runs.reconcile import reconcile
from donations.models import Donation, DonationStats
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER, Anvil
from tests.configs import configured
from tests.invariants import assert_ledger_invariants
from tests.rpc_proxy import RpcProxy

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]

USDT = 10**6


@pytest.fixture
def check(node) -> Iterator[RpcProxy]:
    """A second provider on the same chain (its own endpoint, counted apart)."""
    with RpcProxy(node.url) as running:
        yield running


def use(settings, *, primary: str | None = None, check: str | None = None) -> None:
    changes = {"rpc_check_url": check} | ({"rpc_url": primary} if primary else {})
    settings.CONFIG = configured(settings.CONFIG, **changes)


def critical(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.CRITICAL]


def donate_eth_and_usdt(node) -> tuple[str, str]:
    node.mint(node.coins["usdt"], ACCOUNTS[2], 100 * USDT)
    with node.one_block():
        eth = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
        usdt = node.transfer_token(node.coins["usdt"], ACCOUNTS[2], DONATION_ADDRESS, 40 * USDT)
    node.mine(2)  # finalized
    return eth, usdt


def test_both_providers_agreeing_confirm_and_the_check_costs_one_batch_per_range(node, check, settings, caplog):
    use(settings, check=check.url("/check"))
    eth, usdt = donate_eth_and_usdt(node)

    with caplog.at_level(logging.INFO):
        result = crawl(FINALIZED)

    assert result.held is None
    assert result.confirmed == 2
    assert {d.tx_hash: d.status for d in Donation.objects.all()} == {eth: "confirmed", usdt: "confirmed"}
    assert_ledger_invariants()
    # One request for the tips, one batch for the range: the block's header (the range closes on it), the
    # donation address's balances (ETH, nonce, two coins) before the range, before and after the block, its
    # code at both edges of the range, two receipts, the ETH transaction.
    assert len(check.seen) == 2
    balances = ["eth_getBalance", "eth_getTransactionCount", "eth_call", "eth_call"] * 3
    assert sorted(check.seen[1].methods) == sorted(
        ["eth_getBlockByNumber", *balances, "eth_getCode", "eth_getCode"]
        + ["eth_getTransactionReceipt"] * 2
        + ["eth_getTransactionByHash"]
    )
    assert critical(caplog) == []


def test_a_diverged_check_provider_holds_the_chain_with_a_critical_line_naming_both_hashes(node, settings, caplog):
    with Anvil() as diverged:  # chain id 31337 too: only the blocks differ
        diverged.mine(node.head() + 10)
        use(settings, check=diverged.url)
        node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
        node.mine(2)
        block = node.head() - 2
        ours, theirs = node.block(block)["hash"], diverged.block(block)["hash"]

        with caplog.at_level(logging.INFO):
            held = crawl(FINALIZED)
            latest = crawl(LATEST)

    assert held.held is not None
    assert f"providers disagree on block {block}: block hash: ours says {ours}, the check provider says {theirs}" in (
        held.held
    )
    assert any(ours in line and theirs in line for line in critical(caplog))
    assert cursor_get(chain=CHAIN, label=FINALIZED).value < block
    assert latest.inserted == 1  # the donor still sees it pending
    assert Donation.objects.get().status == "unconfirmed"
    assert DonationStats.objects.get().tokens == 0


def test_a_primary_lying_about_a_coin_donor_is_caught_by_the_check_provider(node, settings, caplog):
    impostor = ACCOUNTS[5]

    def reattributed(logs, _params):
        return [{**log, "topics": [log["topics"][0], address_topic(impostor), log["topics"][2]]} for log in logs]

    with RpcProxy(node.url) as lying:
        lying.arm("eth_getLogs", "rewrite", count=None, rewrite=reattributed)
        use(settings, primary=lying.url("/rpc"), check=node.url)
        donate_eth_and_usdt(node)

        with caplog.at_level(logging.INFO):
            held = crawl(FINALIZED)

    assert held.held is not None
    assert "usdt transfer" in held.held
    assert impostor in held.held
    assert ACCOUNTS[2] in held.held
    assert any("providers disagree" in line for line in critical(caplog))
    assert not Donation.objects.filter(status="confirmed").exists()


def test_a_check_provider_whose_finalized_block_lags_is_waited_for_not_a_disagreement(node, check, settings, caplog):
    use(settings, check=check.url("/check"))
    donate_eth_and_usdt(node)
    behind = node.head() - 4  # before the donation's block
    lag = check.arm(
        "eth_getBlockByNumber",
        "rewrite",
        count=None,
        when=lambda params: params[:1] == ["finalized"],
        rewrite=lambda _result, _params: node.block(behind),
    )

    with caplog.at_level(logging.INFO):
        waiting = crawl(FINALIZED)

    assert waiting.confirmed == 0
    assert not Donation.objects.exists()
    assert critical(caplog) == []
    assert lag.used >= 1
    check.disarm()
    assert crawl(FINALIZED).confirmed == 2
    assert_ledger_invariants()


def test_the_latest_crawler_reads_from_the_check_provider_when_ours_fails(node, settings, caplog):
    with RpcProxy(node.url) as down:
        down.arm("*", "status", count=None, status=503, retry_after=None)
        use(settings, primary=down.url("/rpc"), check=node.url)
        tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)

        with caplog.at_level(logging.INFO):
            latest = crawl(LATEST)
            finalized = crawl(FINALIZED)

    assert latest.held is None
    assert latest.inserted == 1
    assert Donation.objects.get().tx_hash == tx
    assert Donation.objects.get().status == "unconfirmed"
    assert any("reading from the check provider" in r.getMessage() for r in caplog.records)
    assert finalized.held is not None  # confirming needs both: the finalized crawler does not fall over


def test_reconcile_reads_from_the_check_provider(node, check, settings):
    with RpcProxy(node.url) as primary:
        use(settings, primary=primary.url("/rpc"), check=check.url("/check"))
        donate_eth_and_usdt(node)
        assert crawl(FINALIZED).confirmed == 2
        asked_primary, asked_check = len(primary.seen), len(check.seen)

        report = reconcile(0, node.finalized())

    assert report.ok, report.discrepancies
    assert len(primary.seen) == asked_primary
    assert len(check.seen) > asked_check


@pytest.fixture
def diverged(node) -> Iterator[Anvil]:
    with Anvil() as other:  # chain id 31337 too: only the blocks differ
        other.mine(node.head() + 20)
        yield other


def recorded_and_skipped_by_the_finalized_crawler(node) -> Donation:
    """A donation the latest crawler recorded and the finalized crawler skipped (its cursor moved past)."""
    node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    crawl(LATEST)
    node.mine(3)
    cursor_write(chain=CHAIN, label=FINALIZED, value=node.finalized())
    return Donation.objects.get()


def test_the_single_block_re_crawl_asks_the_check_provider_too(node, diverged, settings, caplog):
    use(settings, check=diverged.url)
    node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    node.mine(2)

    with caplog.at_level(logging.INFO):
        held = crawl_single_block(FINALIZED, node.head() - 2)

    assert "providers disagree" in (held.held or "")
    assert not Donation.objects.filter(status="confirmed").exists()


@pytest.mark.parametrize("agreeing", [True, False], ids=["agreeing", "diverged"])
def test_the_old_unconfirmed_judge_confirms_only_with_the_check_providers_agreement(node, diverged, settings, agreeing):
    row = recorded_and_skipped_by_the_finalized_crawler(node)
    use(settings, check=node.url if agreeing else diverged.url)
    if agreeing:
        settings.CONFIG = configured(settings.CONFIG, rpc_url=node.url + "/")  # two endpoints

    crawl_old_unconfirmed(now=row.block_time + timedelta(minutes=31))

    row.refresh_from_db()
    assert row.status == ("confirmed" if agreeing else "unconfirmed")


def test_the_reconcile_at_a_workers_start_reads_from_the_check_provider_too(node, check, settings):
    from crawlers.runs.reconcile_start import reconcile_at_start

    with RpcProxy(node.url) as primary:
        use(settings, primary=primary.url("/rpc"), check=check.url("/check"))
        donate_eth_and_usdt(node)
        assert crawl(FINALIZED).confirmed == 2
        asked_primary, asked_check = len(primary.seen), len(check.seen)

        report = reconcile_at_start()

    assert report is not None
    assert report.ok, report.discrepancies
    assert len(primary.seen) == asked_primary
    assert len(check.seen) > asked_check
