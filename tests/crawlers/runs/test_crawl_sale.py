"""The sale's rules as the crawlers apply them: tiers, closing, pause/resume, prices, re-crawls, reverts."""

from __future__ import annotations

import dataclasses
import logging
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client

from crawlers.models import CHAIN, FINALIZED, LATEST
from crawlers.record.cursors import cursor_get
from crawlers.runs.crawl import crawl
from donations.models import Donation, DonationStats, UserData
from dws_project.config_values import SaleTier
from prices.models import ETH, TOKEN, Price, PriceRequest
from prices.services import price_record
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER
from tests.configs import configured
from tests.invariants import assert_ledger_invariants
from tests.rpc_proxy import RpcProxy

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]

# 1 ETH = 2000 USD = 2,000,000 tokens in tier 1; the cap is 5,000,000 tokens.
SMALL_SALE = (SaleTier(3_000_000, Decimal("0.001")), SaleTier(5_000_000, Decimal("0.002")))


def use_tiers(settings, tiers) -> None:
    settings.CONFIG = dataclasses.replace(settings.CONFIG, sale_tiers=tuple(tiers))


def finalize(node) -> None:
    node.mine(2)


def by_tx() -> dict[str, Donation]:
    return {d.tx_hash: d for d in Donation.objects.all()}


def test_a_donation_keeps_the_tier_it_was_recorded_at_and_a_closed_sale_confirms_at_zero_tokens(node, settings):
    use_tiers(settings, SMALL_SALE)
    first = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, 2 * ETHER)  # 4,000,000 tokens at tier 1
    second = node.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER)  # recorded at tier 1 too: 2,000,000
    third = node.send_eth(ACCOUNTS[3], DONATION_ADDRESS, ETHER)

    crawl(LATEST)
    shown = {tx: (d.price, d.tokens) for tx, d in by_tx().items()}
    assert shown == {
        first: (Decimal("0.001"), 4_000_000),
        second: (Decimal("0.001"), 2_000_000),
        third: (Decimal("0.001"), 2_000_000),
    }

    finalize(node)
    crawl(FINALIZED)

    rows = by_tx()
    assert {tx: (d.status, d.price, d.tokens) for tx, d in rows.items()} == {
        first: ("confirmed", Decimal("0.001"), 4_000_000),
        # Priced once, when recorded: confirmation does not move it to tier 2, and it crosses the cap whole.
        second: ("confirmed", Decimal("0.001"), 2_000_000),
        third: ("confirmed", Decimal("0.001"), 0),  # closed at confirmation: recorded, refundable, 0 tokens
    }
    stats = DonationStats.objects.get()
    assert (stats.tokens, stats.total, stats.status) == (6_000_000, Decimal("8000.00"), "closed")
    assert list(Price.objects.filter(asset=TOKEN).order_by("created_at").values_list("price", flat=True)) == [
        Decimal("0.002")
    ]

    # A donation arriving while closed is still inserted by the latest crawler at its real token count
    # (the last tier's price: the sale may reopen before it is confirmed).
    late = node.send_eth(ACCOUNTS[4], DONATION_ADDRESS, ETHER)
    crawl(LATEST)
    assert (by_tx()[late].price, by_tx()[late].tokens) == (Decimal("0.002"), 1_000_000)
    assert_ledger_invariants()

    # Raising the cap reopens the sale: the late donation confirms with what it showed; the settled one keeps 0.
    use_tiers(settings, (*SMALL_SALE, SaleTier(10_000_000, Decimal("0.004"))))
    finalize(node)
    crawl(FINALIZED)
    rows = by_tx()
    assert (rows[late].status, rows[late].tokens) == ("confirmed", 1_000_000)
    assert rows[third].tokens == 0
    assert DonationStats.objects.get().status == "open"
    assert_ledger_invariants()


def test_the_stored_status_is_never_read_back(node, settings):
    use_tiers(settings, SMALL_SALE)
    DonationStats.objects.update(status="closed")  # stale: nothing is confirmed
    tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    finalize(node)
    crawl(LATEST)
    crawl(FINALIZED)
    assert (by_tx()[tx].status, by_tx()[tx].tokens) == ("confirmed", 2_000_000)
    assert DonationStats.objects.get().status == "open"
    assert_ledger_invariants()


def sql(statement: str, params=()) -> None:
    with connection.cursor() as cursor:
        cursor.execute(statement, params)


PAUSE = "UPDATE donation_stats SET status='paused'"
RESUME = (
    "UPDATE donation_stats SET status = (CASE WHEN tokens >= %s THEN 'closed' ELSE 'open' END)"
    "::donation_stats_status_enum WHERE status='paused'"
)


def test_pause_holds_confirmation_while_cursors_advance_and_resume_credits_through_the_same_path(node, settings):
    use_tiers(settings, SMALL_SALE)
    before = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    finalize(node)
    crawl(LATEST)
    crawl(FINALIZED)
    assert by_tx()[before].status == "confirmed"

    sql(PAUSE)
    during = node.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER)
    finalize(node)
    crawl(LATEST)
    result = crawl(FINALIZED)

    rows = by_tx()
    assert result.held is None
    assert cursor_get(chain=CHAIN, label=FINALIZED).value == node.finalized()  # no backlog builds up
    assert (rows[during].status, rows[during].tokens) == ("unconfirmed", 2_000_000)
    stats = DonationStats.objects.get()
    assert (stats.status, stats.tokens) == ("paused", 2_000_000)  # frozen, and never un-paused by a crawler
    # A pause cannot un-credit: re-crawling the confirmed donation's block keeps it confirmed.
    call_command("crawl", "finalized", "--single-block", str(rows[before].block_number))
    assert by_tx()[before].status == "confirmed"
    assert_ledger_invariants()

    sql(RESUME, [SMALL_SALE[-1].token_limit])
    assert DonationStats.objects.get().status == "open"
    call_command("crawl", "finalized", "--single-block", str(rows[during].block_number))

    rows = by_tx()
    assert (rows[during].status, rows[during].tokens) == ("confirmed", 2_000_000)
    assert DonationStats.objects.get().tokens == 4_000_000
    assert_ledger_invariants()


def test_a_block_without_an_eth_price_holds_the_cursor_and_files_one_price_request(node, caplog):
    later = datetime.now(tz=UTC).replace(second=0, microsecond=0) + timedelta(hours=3)
    node.set_next_block_timestamp(int(later.timestamp()) + 20)
    tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    block = int(node.receipt(tx)["blockNumber"], 16)
    node.mine(1)

    with caplog.at_level(logging.WARNING, logger="dws.crawlers"):
        first, second = crawl(LATEST), crawl(LATEST)

    assert cursor_get(chain=CHAIN, label=LATEST).value == block - 1
    assert f"block: {block} -- no ETH price" in first.held
    assert second.held == first.held
    assert not Donation.objects.exists()
    assert list(PriceRequest.objects.values_list("asset", "requested_at", "status")) == [(ETH, later, "new")]
    assert f"block: {block} -- no ETH price" in caplog.text

    # The price service answers the request: the next run records the donation at that price.
    Price.objects.create(asset=ETH, price=Decimal("2500"), created_at=later + timedelta(minutes=1))
    result = crawl(LATEST)
    assert result.held is None
    assert Donation.objects.get().usd_amount == Decimal("2500.00")
    assert cursor_get(chain=CHAIN, label=LATEST).value == node.head()
    assert_ledger_invariants()


def test_a_minute_one_exchange_alone_quoted_credits_nothing_until_a_second_agrees(node, caplog):
    """Issue 21 (medium 10): one venue's kline is on record, flagged; the block waits with a reason an
    operator can read, and is written at the cross-checked price once a second venue completes that row."""
    later = datetime.now(tz=UTC).replace(second=0, microsecond=0) + timedelta(hours=3)
    node.set_next_block_timestamp(int(later.timestamp()) + 20)
    tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    block = int(node.receipt(tx)["blockNumber"], 16)
    node.mine(1)
    one_venue = {"used": [{"venue": "bitfinex", "quote": "9999"}], "single_venue": True}
    row = Price.objects.create(asset=ETH, price=Decimal("9999"), created_at=later, sources=one_venue, single_venue=True)

    with caplog.at_level(logging.WARNING, logger="dws.crawlers"):
        held = crawl(LATEST)

    assert cursor_get(chain=CHAIN, label=LATEST).value == block - 1
    assert held.held == (
        f"block: {block} -- the ETH price near {later:%Y-%m-%d %H:%M} UTC is quoted by one exchange only "
        "(bitfinex); waiting for a second to agree; a price request is filed"
    )
    assert "quoted by one exchange only" in caplog.text
    assert not Donation.objects.exists()
    assert PriceRequest.objects.filter(asset=ETH, requested_at=later).exists()

    # A second venue agrees within the gate: the same row is completed with the cross-checked price.
    both = {"used": [{"venue": "bitfinex", "quote": "2499"}, {"venue": "kraken", "quote": "2501"}]}
    price_record(asset=ETH, created_at=later, price=Decimal("2500"), sources=both, single_venue=False)
    result = crawl(LATEST)

    assert result.held is None
    assert Price.objects.get(asset=ETH, created_at=later).pk == row.pk
    assert Donation.objects.get().usd_amount == Decimal("2500.00")
    assert_ledger_invariants()


def test_recrawling_a_confirmed_block_changes_nothing(node):
    donor = ACCOUNTS[1]
    node.mint(node.coins["usdt"], donor, 100 * 10**6)
    with node.one_block():
        node.send_eth(donor, DONATION_ADDRESS, ETHER)
        node.transfer_token(node.coins["usdt"], donor, DONATION_ADDRESS, 100 * 10**6)
    block = node.head()
    finalize(node)
    crawl(LATEST)
    crawl(FINALIZED)
    snapshot = list(Donation.objects.order_by("id").values())
    stats = DonationStats.objects.values().get()
    users = list(UserData.objects.order_by("id").values())
    cursors = {label: cursor_get(chain=CHAIN, label=label).value for label in (LATEST, FINALIZED)}

    call_command("crawl", "finalized", "--single-block", str(block))
    call_command("crawl", "latest", "--single-block", str(block))
    crawl(FINALIZED)

    assert list(Donation.objects.order_by("id").values()) == snapshot
    assert DonationStats.objects.values().get() == stats
    assert list(UserData.objects.order_by("id").values()) == users
    assert {label: cursor_get(chain=CHAIN, label=label).value for label in (LATEST, FINALIZED)} == cursors
    assert_ledger_invariants()


def test_a_finalized_receipt_reporting_revert_fails_a_confirmed_donation_and_reopens_the_sale(node, settings):
    use_tiers(settings, SMALL_SALE)
    honest = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, 2 * ETHER)
    node.set_code(DONATION_ADDRESS, "0x60006000fd")
    reverted = node.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER, gas=60_000)
    node.set_code(DONATION_ADDRESS, "0x")
    reverted_block = int(node.receipt(reverted)["blockNumber"], 16)
    finalize(node)

    # A lying provider reports the reverted transfer as successful (and the balances to match, so the
    # balance proof cannot see through it): it is credited and closes the sale.
    def richer(balance: str, params: list) -> str:
        at = params[1]
        return hex(int(balance, 16) + ETHER) if isinstance(at, str) and int(at, 16) >= reverted_block else balance

    with RpcProxy(node.url) as proxy:
        proxy.arm(
            "eth_getTransactionReceipt",
            "rewrite",
            count=None,
            rewrite=lambda receipt, params: {**receipt, "status": "0x1"} if params[0] == reverted else receipt,
        )
        proxy.arm("eth_getBalance", "rewrite", count=None, rewrite=richer)
        settings.CONFIG = configured(settings.CONFIG, rpc_url=proxy.url())
        crawl(FINALIZED)
    assert by_tx()[reverted].status == "confirmed"
    assert DonationStats.objects.get().status == "closed"

    # The honest node's finalized receipt says it reverted: the row fails and the sale reopens.
    settings.CONFIG = configured(settings.CONFIG, rpc_url=node.url)
    call_command("crawl", "finalized", "--single-block", str(reverted_block))

    rows = by_tx()
    assert rows[reverted].status == "failed"
    assert rows[honest].status == "confirmed"
    stats = DonationStats.objects.get()
    assert (stats.tokens, stats.status) == (4_000_000, "open")
    assert UserData.objects.get(address=ACCOUNTS[2]).tokens == 0  # zeroed, not deleted
    assert_ledger_invariants()


def test_user_data_shows_the_same_tokens_before_and_after_confirmation_while_the_sale_is_open(node, settings):
    # Tier 1 ends at 3M: the donations recorded before any is confirmed are all priced at tier 1, those
    # recorded after the first confirmations at tier 2; none is re-priced when it is confirmed.
    use_tiers(settings, (*SMALL_SALE, SaleTier(100_000_000, Decimal("0.004"))))
    donors = ACCOUNTS[1:5]

    def shown() -> dict[str, tuple[str, str]]:
        client = Client()
        seen = {}
        for donor in donors:
            for entry in client.get(f"/user/data/{donor}").json()["donations"]:
                seen[entry["tx_hash"]] = (entry["status"], entry["tokens"])
        return seen

    sent = [node.send_eth(donor, DONATION_ADDRESS, ETHER) for donor in donors[:2]]
    crawl(LATEST)
    before = shown()
    finalize(node)
    crawl(FINALIZED)  # 4M confirmed: tier 2 from here on
    sent += [node.send_eth(donor, DONATION_ADDRESS, ETHER // 3) for donor in donors[2:]]
    crawl(LATEST)
    before |= {tx: seen for tx, seen in shown().items() if tx in sent[2:]}
    assert {tx: state for tx, (state, _) in before.items()} == {tx: "unconfirmed" for tx in sent}
    finalize(node)
    crawl(FINALIZED)
    after = shown()

    assert {tx: state for tx, (state, _) in after.items()} == {tx: "confirmed" for tx in sent}
    assert {tx: tokens for tx, (_, tokens) in after.items()} == {tx: tokens for tx, (_, tokens) in before.items()}
    # 1/3 ETH at 2000 USD and tier 2's 0.002: ceiling(666.666666... / 0.002) on the stored 0.33333333 ETH
    assert before[sent[2]][1] == "333334"
    assert DonationStats.objects.get().status == "open"
    assert_ledger_invariants()
