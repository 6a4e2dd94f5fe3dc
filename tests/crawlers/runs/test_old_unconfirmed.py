"""The old-unconfirmed judge on anvil, behind the fault proxy: when it confirms, fails or leaves a donation.

Donations are aged by passing the judge a later `now` (the run's clock), exactly as if the crawler ran
that much later; the chain itself is real.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.conf import settings
from django.core.management import call_command
from django.utils import timezone

from crawlers.chain.rpc import RpcClient
from crawlers.models import CHAIN, FINALIZED, LATEST
from crawlers.record.cursors import cursor_write
from crawlers.runs.crawl import crawl
from crawlers.runs.old_unconfirmed import BATCH_LIMIT, LOOK_AGAIN_MAX, crawl_old_unconfirmed
from crawlers.scan.traces import internal_eth_transfers
from donations.models import Donation, DonationStats
from donations.services import campaign_pause, campaign_resume, donation_record_unconfirmed
from donations.sightings import Sighting
from prices.models import ETH, Price
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]

LATER = timedelta(minutes=31)  # past the 30 minute threshold, well inside the 24 h grace
MUCH_LATER = timedelta(hours=25)  # past the grace


_runs = {"before": 0}


@pytest.fixture(autouse=True)
def _first_run() -> None:
    _runs["before"] = 0


def judge(after: timedelta = LATER):
    """One run, `after` past now; each later run of a test also comes once the previous run's
    next-look times have passed (at most LOOK_AGAIN_MAX), as the periodic crawler's runs would."""
    now = timezone.now() + after + _runs["before"] * (LOOK_AGAIN_MAX + timedelta(minutes=1))
    _runs["before"] += 1
    return crawl_old_unconfirmed(now=now)


def recorded_but_missed_by_the_finalized_crawler(node, sender=ACCOUNTS[1], wei=ETHER) -> Donation:
    """A donation the latest crawler recorded and the finalized crawler skipped (its cursor was moved)."""
    tx = node.send_eth(sender, DONATION_ADDRESS, wei)
    crawl(LATEST)
    node.mine(3)  # now finalized
    cursor_write(chain=CHAIN, label=FINALIZED, value=node.finalized())
    row = Donation.objects.get(tx_hash=tx)
    assert row.status == "unconfirmed"
    return row


def signed_donation(node, sender=ACCOUNTS[2]) -> str:
    """A signed ETH donation with fixed fees: broadcasting it again gives the same transaction hash."""
    nonce = node.rpc("eth_getTransactionCount", sender, "latest")
    tx = {
        "from": sender,
        "to": DONATION_ADDRESS,
        "value": hex(ETHER),
        "gas": hex(21_000),
        "maxFeePerGas": hex(10**11),
        "maxPriorityFeePerGas": hex(10**9),
        "nonce": nonce,
    }
    return node.rpc("eth_signTransaction", tx)


def vanished_donation(node) -> tuple[Donation, str]:
    """Recorded by the latest crawler from a block that a re-org then dropped, with its transaction."""
    snapshot = node.snapshot()
    raw = signed_donation(node)
    tx = node.rpc("eth_sendRawTransaction", raw)
    node.wait_receipt(tx)
    crawl(LATEST)
    node.revert(snapshot)
    node.mine(3)
    return Donation.objects.get(tx_hash=tx.lower()), raw


def status(row: Donation) -> tuple[str, int]:
    row.refresh_from_db()
    return row.status, row.absent_count


def test_an_old_donation_in_a_finalized_block_is_confirmed_through_the_crediting_path(node, proxy):
    row = recorded_but_missed_by_the_finalized_crawler(node)

    result = judge()

    assert (result.examined, result.confirmed, result.failed) == (1, 1, 0)
    assert status(row) == ("confirmed", 0)
    stats = DonationStats.objects.get()
    assert (stats.total, stats.tokens) == (Decimal("2000.00"), 2_000_000)
    # looked up in batches: one post per kind of request, not one per donation
    assert proxy.requests_for("eth_getTransactionByHash") == 1


def test_a_donation_younger_than_30_minutes_is_not_examined(node):
    recorded_but_missed_by_the_finalized_crawler(node)
    assert crawl_old_unconfirmed().examined == 0
    assert Donation.objects.get().status == "unconfirmed"


def test_a_stable_coin_donation_is_confirmed_with_its_transfer_log(node):
    node.mint(node.coins["usdc"], ACCOUNTS[3], 50 * 10**6)
    tx = node.transfer_token(node.coins["usdc"], ACCOUNTS[3], DONATION_ADDRESS, 50 * 10**6)
    crawl(LATEST)
    node.mine(3)
    cursor_write(chain=CHAIN, label=FINALIZED, value=node.finalized())

    assert judge().confirmed == 1
    row = Donation.objects.get(tx_hash=tx)
    assert (row.status, row.asset, row.usd_amount, row.tokens) == ("confirmed", "usdc", Decimal("50.00"), 50_000)


def test_a_block_not_finalized_yet_leaves_the_donation_untouched(node):
    tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    crawl(LATEST)  # the head block; finalized trails it by two

    result = judge()

    assert result.untouched == {"block not finalized yet": 1}
    assert Donation.objects.get(tx_hash=tx).status == "unconfirmed"


def test_a_transaction_back_in_the_mempool_is_left_and_its_absence_count_reset(node):
    row, raw = vanished_donation(node)
    judge()
    judge()
    assert status(row) == ("unconfirmed", 2)

    node.set_automine(False)  # the same signed transaction is broadcast again and waits in the mempool
    node.rpc("eth_sendRawTransaction", raw)

    result = judge(MUCH_LATER)

    assert result.untouched == {"in the mempool": 1}
    assert status(row) == ("unconfirmed", 0)


def test_a_vanished_transaction_fails_only_after_3_absent_runs_past_the_24h_grace(node):
    row, _ = vanished_donation(node)

    for runs in (1, 2, 3, 4):  # younger than 24 h: counted, never failed
        result = judge(LATER)
        assert status(row) == ("unconfirmed", runs)
    assert result.untouched == {"absent, block younger than 24 h": 1}

    row.absent_count = 0
    row.save()
    assert judge(MUCH_LATER).failed == 0
    assert judge(MUCH_LATER).untouched == {"absent, not yet on 3 consecutive runs": 1}
    assert status(row) == ("unconfirmed", 2)
    result = judge(MUCH_LATER)
    assert result.failed == 1
    assert status(row) == ("failed", 3)
    assert Donation.objects.filter(id=row.id).exists()  # kept, never deleted


def test_a_single_provider_null_counts_once_and_a_sighting_resets_it(node, proxy):
    row = recorded_but_missed_by_the_finalized_crawler(node)
    proxy.arm("eth_getTransactionByHash", "null", count=2)

    judge(MUCH_LATER)
    judge(MUCH_LATER)
    assert status(row) == ("unconfirmed", 2)

    result = judge(MUCH_LATER)  # the node answers again: the money arrived
    assert result.confirmed == 1
    assert status(row) == ("confirmed", 0)


@pytest.mark.parametrize(
    "fault",
    [
        {"kind": "error", "code": -32000, "message": "header not found"},
        {"kind": "status", "status": 429, "retry_after": 1},
        {"kind": "status", "status": 503},
        {"kind": "drop"},
    ],
    ids=["error-object", "http-429", "http-503", "dropped-connection"],
)
def test_no_answer_for_the_transaction_leaves_it_untouched_and_uncounted(node, proxy, fault):
    row, _ = vanished_donation(node)
    proxy.arm("eth_getTransactionByHash", count=None, **fault)

    for _ in range(4):
        judge(MUCH_LATER)

    assert status(row) == ("unconfirmed", 0)


def test_a_time_out_leaves_the_donation_untouched(node, proxy, settings):
    settings.CRAWLER_RPC_READ_TIMEOUT = 0.5
    row, _ = vanished_donation(node)
    proxy.arm("eth_getTransactionByHash", "hang", count=None, seconds=1.5)

    result = judge(MUCH_LATER)

    assert result.untouched == {"no answer for the transaction (timeout)": 1}
    assert status(row) == ("unconfirmed", 0)


def test_a_finalized_block_the_provider_will_not_give_leaves_the_donation_untouched(node, proxy):
    row = recorded_but_missed_by_the_finalized_crawler(node)
    wanted = hex(row.block_number)
    proxy.arm("eth_getBlockByNumber", "null", count=None, when=lambda params: params[0] == wanted)

    result = judge(MUCH_LATER)

    assert result.untouched == {"finalized block not fetchable (null)": 1}
    assert status(row) == ("unconfirmed", 0)


def test_a_fetched_finalized_block_without_the_transaction_fails_it_and_recomputes_the_campaign(node, proxy):
    kept = recorded_but_missed_by_the_finalized_crawler(node, sender=ACCOUNTS[3])
    call_command("crawl", "finalized", "--single-block", str(kept.block_number))  # one confirmed donation
    row = recorded_but_missed_by_the_finalized_crawler(node)
    wanted = hex(row.block_number)

    def without_the_tx(block, params):
        return {**block, "transactions": [t for t in block["transactions"] if t["hash"].lower() != row.tx_hash]}

    proxy.arm("eth_getBlockByNumber", "rewrite", count=None, rewrite=without_the_tx, when=lambda p: p[0] == wanted)

    result = judge()

    assert result.failed == 1
    assert status(row) == ("failed", 0)
    stats = DonationStats.objects.get()
    assert (stats.total, stats.tokens, stats.status) == (Decimal("2000.00"), 2_000_000, "open")


def test_a_receipt_reporting_a_revert_fails_the_donation(node, proxy):
    row = recorded_but_missed_by_the_finalized_crawler(node)
    proxy.arm("eth_getTransactionReceipt", "rewrite", count=None, rewrite=lambda r, p: {**r, "status": "0x0"})

    assert judge().failed == 1
    assert status(row)[0] == "failed"


def test_a_receipt_the_provider_will_not_give_leaves_the_donation_untouched(node, proxy):
    row = recorded_but_missed_by_the_finalized_crawler(node)
    proxy.arm("eth_getTransactionReceipt", "null", count=None)

    assert judge().untouched == {"no usable receipt": 1}
    assert status(row) == ("unconfirmed", 0)


def test_a_transaction_re_mined_in_another_block_is_confirmed_there_by_the_finalized_path(node):
    row, raw = vanished_donation(node)
    original_block = row.block_hash
    tx = node.rpc("eth_sendRawTransaction", raw)  # the same transaction, mined again in a later block
    node.wait_receipt(tx)
    node.mine(3)
    assert tx.lower() == row.tx_hash

    result = judge()

    assert result.recrawled_blocks == 1
    row.refresh_from_db()
    assert (row.status, row.absent_count) == ("confirmed", 0)
    assert row.block_hash != original_block


def test_while_paused_it_confirms_nothing_and_after_resume_it_credits_the_backlog(node, settings):
    row = recorded_but_missed_by_the_finalized_crawler(node)
    campaign_pause(operator="tester")

    result = judge()
    assert (result.confirmed, result.held_paused) == (0, 1)
    assert status(row) == ("unconfirmed", 0)
    assert DonationStats.objects.get().tokens == 0

    assert campaign_resume(operator="tester", tiers=settings.CONFIG.sale_tiers) == "open"
    # The very next run credits it: a row held only by the pause is not pushed back.
    assert crawl_old_unconfirmed(now=timezone.now() + LATER).confirmed == 1
    assert status(row)[0] == "confirmed"


def absent_rows(count: int, *, now) -> None:
    """`count` unconfirmed ETH rows of transactions the chain never saw, two hours old and older (the
    higher n, the older), in block 1."""
    Donation.objects.bulk_create(
        Donation(
            tx_hash=f"0x{n:064x}",
            log_index=None,
            address=ACCOUNTS[4],
            asset="eth",
            amount=Decimal("0.01"),
            usd_amount=Decimal("20"),
            price=Decimal("0.001"),
            tokens=20_000,
            block_number=1,
            block_hash="0x" + "ab" * 32,
            block_time=now - timedelta(hours=2, seconds=n),
        )
        for n in range(count)
    )


def test_a_run_takes_at_most_500_donations_oldest_first(node, proxy):
    node.mine(3)  # block 1, where the rows claim to be, must be finalized whatever ran before
    now = timezone.now()
    absent_rows(BATCH_LIMIT + 1, now=now)

    result = crawl_old_unconfirmed(now=now)

    assert result.examined == BATCH_LIMIT
    assert result.untouched == {"absent, block younger than 24 h": BATCH_LIMIT}
    newest = Donation.objects.get(tx_hash=f"0x{0:064x}")
    assert newest.absent_count == 0  # left for the next run
    assert Donation.objects.filter(absent_count=1).count() == BATCH_LIMIT
    assert proxy.requests_for("eth_getTransactionByHash") == BATCH_LIMIT
    assert len([s for s in proxy.seen if "eth_getTransactionByHash" in s.methods]) == 3  # posts of <= 200


def test_the_command_runs_the_judge_once(node, capsys):
    call_command("crawl", "old-unconfirmed", "--once")
    assert "crawl old-unconfirmed on eth: 0 examined" in capsys.readouterr().out


def test_a_batch_full_of_unresolvable_rows_no_longer_starves_a_resolvable_one(node, proxy):
    resolvable = recorded_but_missed_by_the_finalized_crawler(node)
    now = timezone.now()
    absent_rows(BATCH_LIMIT, now=now)  # older than it, and absent from the chain: none can resolve for a day

    first = judge()
    assert (first.examined, first.confirmed) == (BATCH_LIMIT, 0)
    assert status(resolvable) == ("unconfirmed", 0)

    second = judge()

    assert second.confirmed == 1
    assert status(resolvable) == ("confirmed", 0)


# --- ETH from an internal call: proven by the receipt and a trace of the transaction ------------------


def internal_donation(node, wallet_owner=ACCOUNTS[1], trace_address: str | None = None) -> Donation:
    """ETH forwarded to us by an EthForwarder wallet, recorded as the crawl records an internal transfer
    (its block's traces), left unconfirmed and finalized since."""
    wallet = node.deploy("EthForwarder", sender=wallet_owner)
    node.send_eth(wallet_owner, wallet, 2 * ETHER)
    data = node.call_data("forward(address,uint256)", ["address", "uint256"], [DONATION_ADDRESS, ETHER])
    tx = node.send({"from": wallet_owner, "to": wallet, "data": data, "gas": hex(200_000)})
    receipt = node.receipt(tx)
    number, block_hash = int(receipt["blockNumber"], 16), receipt["blockHash"]
    client = RpcClient(node.url)
    (transfer,) = internal_eth_transfers(
        client, settings.CONFIG.first_chain, block_number=number, block_hash=block_hash
    )
    if trace_address is not None:
        transfer = dataclasses.replace(transfer, trace_address=trace_address)
    block_time = datetime.fromtimestamp(int(node.block(number)["timestamp"], 16), tz=UTC)
    sighting = Sighting(chain="eth", transfer=transfer, block_time=block_time, eth_price=Decimal("2000"))
    row, _ = donation_record_unconfirmed(sighting=sighting, tiers=settings.CONFIG.sale_tiers)
    node.mine(3)
    assert (row.address, row.trace_address) == (wallet, trace_address or "0")
    return row


def test_an_internal_eth_row_is_confirmed_by_its_receipt_and_its_trace(node, proxy):
    row = internal_donation(node)

    result = judge()

    assert result.confirmed == 1
    assert status(row) == ("confirmed", 0)
    assert proxy.requests_for("debug_traceTransaction") == 1


@pytest.mark.parametrize("fault", [{"kind": "error", "code": -32601, "message": "Method not found"}, {"kind": "null"}])
def test_an_internal_eth_row_without_a_trace_is_left_never_failed(node, proxy, fault):
    row = internal_donation(node)
    for method in ("debug_traceTransaction", "trace_transaction"):
        proxy.arm(method, count=None, **fault)

    result = judge(MUCH_LATER)

    assert result.failed == 0
    assert status(row) == ("unconfirmed", 0)
    assert sum(result.untouched.values()) == 1
    assert next(iter(result.untouched)).startswith("internal ETH")

    proxy.disarm()
    assert judge(MUCH_LATER).confirmed == 1


def test_an_internal_eth_row_whose_frame_the_trace_does_not_show_is_not_confirmed(node, proxy):
    row = internal_donation(node, trace_address="1")

    result = judge(MUCH_LATER)

    assert result.untouched == {"internal ETH, the trace does not show the frame": 1}
    assert status(row) == ("unconfirmed", 0)


def test_a_coin_transfer_re_mined_at_another_log_index_is_confirmed_as_the_same_row(node):
    donor, bystander = ACCOUNTS[2], ACCOUNTS[3]
    usdt = node.coins["usdt"]
    node.mint(usdt, donor, 100 * 10**6)
    node.mint(usdt, bystander, 100 * 10**6)
    snapshot = node.snapshot()
    tx = node.transfer_token(usdt, donor, DONATION_ADDRESS, 40 * 10**6)
    raw = node.rpc("eth_getRawTransactionByHash", tx)
    crawl(LATEST)
    row = Donation.objects.get(tx_hash=tx)
    node.revert(snapshot)  # its block is dropped; later the same transaction is mined after another Transfer
    with node.one_block():
        first = node.token_tx(usdt, bystander, "transfer(address,uint256)", ["address", "uint256"], [ACCOUNTS[4], 1])
        node.send({**first, "maxFeePerGas": hex(10**12), "maxPriorityFeePerGas": hex(10**11)})  # mined first
        node.rpc("eth_sendRawTransaction", raw)
    node.mine(3)
    new_index = int(node.receipt(tx)["logs"][0]["logIndex"], 16)
    assert new_index != row.log_index

    result = judge()

    assert result.recrawled_blocks == 1
    (only,) = Donation.objects.filter(tx_hash=tx)
    assert (only.id, only.status, only.log_index, only.usd_amount) == (row.id, "confirmed", new_index, Decimal("40.00"))


def test_a_donation_failed_by_absence_then_found_in_a_finalized_block_is_recorded_from_that_block(node):
    row, raw = vanished_donation(node)
    for _ in range(3):
        judge(MUCH_LATER)
    assert status(row) == ("failed", 3)
    old = (row.block_number, row.block_hash, row.eth_price, row.usd_amount, row.tokens)
    assert old[2:] == (Decimal("2000"), Decimal("2000.00"), 2_000_000)

    # The ETH price of the minutes ahead moves; the same signed transaction is mined again elsewhere.
    Price.objects.filter(asset=ETH).delete()
    now = timezone.now().replace(second=0, microsecond=0)
    Price.objects.bulk_create(
        Price(asset=ETH, price=Decimal("2500"), created_at=now + timedelta(minutes=m), sources={"test": True})
        for m in range(-30, 31)
    )
    tx = node.rpc("eth_sendRawTransaction", raw)
    receipt = node.wait_receipt(tx)
    node.mine(3)
    block = node.rpc("eth_getBlockByNumber", receipt["blockNumber"], False)

    result = crawl(FINALIZED)

    row.refresh_from_db()
    assert result.confirmed == 1
    assert (row.status, row.block_number, row.block_hash) == (
        "confirmed",
        int(receipt["blockNumber"], 16),
        receipt["blockHash"].lower(),
    )
    assert row.block_time.timestamp() == int(block["timestamp"], 16)
    assert (row.eth_price, row.usd_amount, row.price, row.tokens) == (
        Decimal("2500"),
        Decimal("2500.00"),
        Decimal("0.001"),
        2_500_000,
    )
    assert (row.block_number, row.block_hash) != old[:2]
    stats = DonationStats.objects.get()
    assert (stats.total, stats.tokens) == (Decimal("2500.00"), 2_500_000)
