"""With a second provider (DWS_RPC_CHECK_URL) the old-unconfirmed judge fails a row only when the check
provider gives the same evidence: the same block hash and receipt (a revert), or no such transaction
(sustained absence). A check provider that answers otherwise holds the row with a CRITICAL line naming
both answers; one whose finalized block trails the row's block is waited for.

The providers are real anvil nodes; a lying primary is a proxy rewriting receipts to a revert, a diverged
one is a separate anvil (same chain id, its own history) that knows no such transaction."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta

import pytest

from crawlers.runs.fail_agreement import NO_TRACE
from crawlers.runs.old_unconfirmed import crawl_old_unconfirmed
from donations.models import Donation, DonationStats
from tests.chain import Anvil
from tests.configs import configured
from tests.crawlers.runs.test_old_unconfirmed import internal_donation
from tests.crawlers.runs.test_second_provider import critical, recorded_and_skipped_by_the_finalized_crawler
from tests.rpc_proxy import RpcProxy

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]

LATER = timedelta(minutes=31)


def reverted(receipt, _params):
    return {**receipt, "status": "0x0", "logs": []} if isinstance(receipt, dict) else receipt


def use(settings, *, primary: str, check: str) -> None:
    settings.CONFIG = configured(settings.CONFIG, rpc_url=primary, rpc_check_url=check)


def held_naming_both(row, result, caplog, *parts: str) -> None:
    """The row was left unconfirmed with one CRITICAL line naming its block and `parts` of both answers."""
    row.refresh_from_db()
    assert (row.status, row.failed_reason, result.failed) == ("unconfirmed", "", 0)
    (line,) = [line for line in critical(caplog) if "providers disagree" in line]
    assert f"block {row.block_number}" in line
    for part in parts:
        assert part in line
    assert result.untouched["providers disagree"] == 1


@pytest.fixture
def lying(node) -> Iterator[RpcProxy]:
    """A primary provider whose receipts all report a revert."""
    with RpcProxy(node.url) as proxy:
        proxy.arm("eth_getTransactionReceipt", "rewrite", count=None, rewrite=reverted)
        yield proxy


def test_a_revert_only_the_primary_reports_fails_nothing_and_says_critical_naming_both(node, lying, settings, caplog):
    row = recorded_and_skipped_by_the_finalized_crawler(node)
    use(settings, primary=lying.url("/rpc"), check=node.url)

    with caplog.at_level(logging.INFO):
        result = crawl_old_unconfirmed(now=row.block_time + LATER)

    held_naming_both(row, result, caplog, "status 0x0", "status 0x1")


def test_a_revert_both_providers_report_fails_the_row(node, lying, settings, caplog):
    row = recorded_and_skipped_by_the_finalized_crawler(node)
    with RpcProxy(node.url) as also_reverted:
        also_reverted.arm("eth_getTransactionReceipt", "rewrite", count=None, rewrite=reverted)
        use(settings, primary=lying.url("/rpc"), check=also_reverted.url("/check"))

        with caplog.at_level(logging.INFO):
            result = crawl_old_unconfirmed(now=row.block_time + LATER)

    row.refresh_from_db()
    assert (row.status, row.failed_reason, result.failed) == ("failed", "its finalized receipt reports a revert", 1)
    assert critical(caplog) == []
    assert DonationStats.objects.get().tokens == 0


def test_a_check_provider_whose_finalized_block_trails_the_row_is_waited_for(node, lying, settings, caplog):
    row = recorded_and_skipped_by_the_finalized_crawler(node)
    behind = row.block_number - 1
    with RpcProxy(node.url) as lagging:
        lagging.arm("eth_getTransactionReceipt", "rewrite", count=None, rewrite=reverted)
        lagging.arm(
            "eth_getBlockByNumber",
            "rewrite",
            count=None,
            when=lambda params: params[:1] == ["finalized"],
            rewrite=lambda _result, _params: node.block(behind),
        )
        use(settings, primary=lying.url("/rpc"), check=lagging.url("/check"))

        with caplog.at_level(logging.INFO):
            result = crawl_old_unconfirmed(now=row.block_time + LATER)

    row.refresh_from_db()
    assert (row.status, result.failed) == ("unconfirmed", 0)
    assert critical(caplog) == []
    assert result.untouched["check provider not there yet"] == 1


def test_sustained_absence_at_the_primary_alone_fails_nothing(node, settings, caplog):
    row = recorded_and_skipped_by_the_finalized_crawler(node)
    with Anvil() as diverged:  # same chain id, knows no such transaction
        diverged.mine(node.head() + 10)
        use(settings, primary=diverged.url, check=node.url)

        with caplog.at_level(logging.INFO):
            runs = [crawl_old_unconfirmed(now=row.block_time + timedelta(hours=25, minutes=n * 16)) for n in range(4)]

    row.refresh_from_db()
    assert row.absent_count >= 3
    assert (row.status, sum(r.failed for r in runs)) == ("unconfirmed", 0)
    assert any("providers disagree" in line and row.tx_hash in line for line in critical(caplog))
    assert Donation.objects.filter(status="failed").count() == 0


def test_a_transaction_only_the_primary_drops_from_its_block_fails_nothing(node, settings, caplog):
    """The money review's reproduction: a successful 1 ETH donation became `failed: its finalized block was
    fetched and does not carry it` on the primary's word, the check provider agreeing only on the hash."""
    row = recorded_and_skipped_by_the_finalized_crawler(node)

    def dropped(block, _params):
        kept = [t for t in block["transactions"] if (t["hash"] if isinstance(t, dict) else t) != row.tx_hash]
        return {**block, "transactions": kept}

    with RpcProxy(node.url) as lying:
        lying.arm(
            "eth_getBlockByNumber",
            "rewrite",
            count=None,
            when=lambda params: params[:1] == [hex(row.block_number)],
            rewrite=dropped,
        )
        use(settings, primary=lying.url("/rpc"), check=node.url)

        with caplog.at_level(logging.INFO):
            result = crawl_old_unconfirmed(now=row.block_time + LATER)

    held_naming_both(row, result, caplog, row.tx_hash, "lists it")


@pytest.mark.parametrize("tracing", [True, False], ids=["tracing", "without-traces"])
def test_a_failure_resting_on_a_trace_needs_the_check_providers_trace_too(node, settings, tracing):
    """An internal ETH row re-mined where its frame no longer pays us is failed by the trace of its
    transaction: the check provider's own trace must not show the frame either; without one, it waits."""
    row = internal_donation(node, trace_address="1")  # recorded at frame "1"; the transaction pays from "0"
    node.reorg(4, [(node.rpc("eth_getRawTransactionByHash", row.tx_hash), 1)])
    node.mine(3)
    with RpcProxy(node.url) as check:
        if not tracing:
            check.refuse_traces()
        use(settings, primary=node.url, check=check.url("/check"))

        result = crawl_old_unconfirmed(now=row.block_time + LATER)

    row.refresh_from_db()
    if tracing:
        assert (row.status, result.failed) == ("failed", 1)
        assert "call tree no longer pays" in row.failed_reason
    else:
        assert (row.status, result.failed) == ("unconfirmed", 0)
        assert result.untouched[NO_TRACE] == 1
