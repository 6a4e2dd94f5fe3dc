"""The chaos matrix: each scenario on the real stack, then `Stack.verify()` (nothing lost, nothing twice,
invariants, reconcile clean). The "Chaos matrix" table in docs/development.md lists what each one proves."""

from __future__ import annotations

import random
import time
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from crawlers.models import CHAIN, FINALIZED, LATEST, UnexplainedInflow
from crawlers.record.cursors import cursor_get
from crawlers.runs.old_unconfirmed import crawl_old_unconfirmed
from crawlers.runs.operator import inflow_credit
from crawlers.tasks import crawl_latest
from donations.models import Donation, DonationStats
from donations.services import campaign_pause, campaign_resume
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER
from tests.chaos.conftest import SMALL_SALE, USDT

# Committed data (the workers are other processes); pytest-django runs these after the ordinary tests.
pytestmark = [pytest.mark.django_db(transaction=True)]


def some_donations(stack, rounds: int = 2) -> None:
    for n in range(rounds):
        stack.donate_eth(ACCOUNTS[1 + n % 4], ETHER // (2 + n))
        stack.donate_token("usdt" if n % 2 else "usdc", ACCOUNTS[5 + n % 3], (10 + n) * USDT)


def injected_and_settled(stack, *methods: str):
    """Until the faults armed on `methods` were all served and the stack caught up despite them (faults
    on other methods are served when a crawler happens to ask: the judge only asks for stragglers)."""

    def done() -> bool:
        served = all(f.used == f.count for f in stack.proxy.faults if f.method in methods)
        return served and stack.settled()

    return done


def test_provider_nulls_for_transactions_receipts_and_blocks(stack_factory):
    stack = stack_factory()
    stack.proxy.arm("eth_getTransactionReceipt", "null", count=6)
    stack.proxy.arm("eth_getBlockByNumber", "null", count=6)
    stack.proxy.arm("eth_getTransactionByHash", "null", count=6)
    some_donations(stack)
    stack.drive(injected_and_settled(stack, "eth_getTransactionReceipt", "eth_getBlockByNumber"), timeout=60)
    some_donations(stack, rounds=1)

    stack.verify()
    assert not Donation.objects.filter(status="failed").exists()


def test_provider_error_objects(stack_factory):
    stack = stack_factory()
    for method in ("eth_getLogs", "eth_getBlockByNumber", "eth_getTransactionReceipt", "eth_getTransactionByHash"):
        stack.proxy.arm(method, "error", count=4, code=-32000, message="header not found")
    some_donations(stack)
    stack.drive(injected_and_settled(stack, "eth_getLogs", "eth_getBlockByNumber", "eth_getTransactionReceipt"))

    stack.verify()
    assert not Donation.objects.filter(status="failed").exists()


def test_429_bursts_make_every_worker_back_off_and_fail_nothing(stack_factory):
    stack = stack_factory()
    some_donations(stack)
    burst = stack.proxy.arm("*", "status", count=3, status=429, retry_after=2)
    stack.drive(lambda: burst.used == burst.count, timeout=60, copies=2)

    stack.verify()
    assert not Donation.objects.filter(status="failed").exists()
    # After each 429, no worker asked the provider anything until the shared window had passed
    # (requests already on their way when it was answered are allowed a moment).
    for refused_at in burst.used_at:
        during = [s for s in stack.proxy.seen if refused_at + 0.5 < s.at < refused_at + 1.5]
        assert during == [], f"requests inside the back-off window: {during}"
    assert "every worker backs off" in stack.worker_logs()


def test_time_outs_and_dropped_connections(stack_factory):
    stack = stack_factory()
    stack.proxy.arm("eth_getTransactionReceipt", "hang", count=3, seconds=1.5)  # past the 1 s read time-out
    stack.proxy.arm("eth_getBlockByNumber", "drop", count=4)
    stack.proxy.arm("eth_getLogs", "drop", count=2)
    some_donations(stack)
    stack.drive(injected_and_settled(stack, "eth_getTransactionReceipt", "eth_getBlockByNumber", "eth_getLogs"))

    stack.verify()
    assert not Donation.objects.filter(status="failed").exists()


def test_reorgs_of_depth_1_to_5_at_random_points_with_random_re_mining(stack_factory, chaos_seed):
    """About 20 s: five re-orgs, each waited through by the deployed worker processes until every donation
    is settled again."""
    rng = random.Random(chaos_seed)
    stack = stack_factory()
    anvil = stack.anvil
    reorgs: list[tuple[int, int]] = []
    for _ in range(6):
        for _ in range(rng.randint(1, 3)):
            donor = rng.choice(ACCOUNTS[1:9])
            if rng.random() < 0.6:
                stack.donate_eth(donor, ETHER // rng.randint(2, 20))
            else:
                stack.donate_token(rng.choice(["usdt", "usdc"]), donor, rng.randint(1, 50) * USDT)
        anvil.mine(rng.randint(0, 2))
        stack.beat(rng.randint(1, 3))  # the crawlers run between chain moves
        time.sleep(rng.random())
        depth = rng.randint(1, 5)
        remined = [
            ({"from": rng.choice(ACCOUNTS[1:9]), "to": DONATION_ADDRESS, "value": hex(ETHER // rng.randint(2, 9))}, o)
            for o in range(depth)
            if rng.random() < 0.5
        ]
        anvil.reorg(depth, remined)
        reorgs.append((depth, len(remined)))
        deadline = time.monotonic() + rng.random() * 2
        stack.drive(lambda deadline=deadline: time.monotonic() > deadline, timeout=10, mine=rng.random() < 0.5)

    orphaned = [tx for tx in stack.sent if anvil.receipt(tx) is None]
    print(f"re-orgs (depth, re-mined donations): {reorgs}; {len(orphaned)} of {len(stack.sent)} sent orphaned")
    stack.verify()  # orphaned donations are never confirmed, re-mined ones are, exactly once
    assert not Donation.objects.filter(tx_hash__in=orphaned, status="confirmed").exists()


def test_a_worker_killed_with_sigkill_mid_block_is_restarted_and_nothing_is_lost(stack_factory):
    stack = stack_factory(workers=1)
    some_donations(stack)
    anvil_head = stack.anvil.head()
    stuck = stack.proxy.arm("eth_getTransactionReceipt", "hang", count=1, seconds=8)
    stack.drive(lambda: stuck.used == 1, timeout=30, tasks=(crawl_latest,), mine=False)
    (worker,) = stack.workers
    worker.kill()  # mid-block: it has the block and is waiting for its receipts
    assert worker.process.returncode == -9
    assert cursor_get(chain=CHAIN, label=LATEST) is None or cursor_get(chain=CHAIN, label=LATEST).value < anvil_head

    stack.proxy.disarm()
    stack.start_workers(1)  # the replacement; the dead holder's lock frees itself after its TTL
    stack.verify()


def test_two_workers_racing_the_same_jobs(stack_factory):
    stack = stack_factory(workers=2)
    for n in range(3):
        some_donations(stack, rounds=1)
        stack.anvil.mine(40)  # longer runs, so the two workers' copies of a job overlap
        stack.beat(3, copies=3)
        stack.donate_eth(ACCOUNTS[n + 1], ETHER // 3)

    stack.verify()
    assert "skipped: another run holds its lock" in stack.worker_logs()


def recrawl_as_an_operator(block: int) -> None:
    """`crawl finalized --single-block N` while the stack's workers still run the tasks beat queued: a run
    holding the chain's lock makes the command write nothing and say so (docs/operating.md), and the
    operator runs it again."""
    deadline = time.monotonic() + 30
    while True:
        try:
            call_command("crawl", "finalized", "--single-block", str(block))
            return
        except CommandError as exc:
            if "holds its PostgreSQL lock" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def test_the_sale_closing_and_a_revert_reopening_it(stack_factory, settings):
    stack = stack_factory(sale=SMALL_SALE)
    anvil = stack.anvil
    honest = stack.donate_eth(ACCOUNTS[1], 2 * ETHER)  # 4,000,000 tokens in tier 1
    anvil.set_code(DONATION_ADDRESS, "0x60006000fd")  # briefly a contract that reverts every transfer
    reverted = anvil.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER, gas=60_000)
    anvil.set_code(DONATION_ADDRESS, "0x")
    reverted_block = int(anvil.receipt(reverted)["blockNumber"], 16)
    # a lying provider reports the reverted transfer as successful: credited at tier 2, it fills the cap
    # (its balances lie to match, or the balance proof would hold the block)
    stack.proxy.arm(
        "eth_getTransactionReceipt",
        "rewrite",
        count=None,
        rewrite=lambda receipt, params: {**receipt, "status": "0x1"} if params[0] == reverted else receipt,
    )
    stack.proxy.arm(
        "eth_getBalance",
        "rewrite",
        count=None,
        rewrite=lambda balance, params: (
            hex(int(balance, 16) + ETHER)
            if isinstance(params[1], str) and int(params[1], 16) >= reverted_block
            else balance
        ),
    )
    stack.drive(lambda: Donation.objects.filter(status="confirmed").count() == 2, timeout=60)
    assert DonationStats.objects.get().status == "closed"
    late = stack.donate_eth(ACCOUNTS[3], ETHER)
    stack.drive(lambda: Donation.objects.filter(tx_hash=late, status="confirmed").exists(), timeout=60)
    assert Donation.objects.get(tx_hash=late).tokens == 0  # closed: recorded, refundable, no tokens

    # the honest node's finalized receipt says it reverted: the operator re-crawls its block
    stack.proxy.disarm()
    recrawl_as_an_operator(reverted_block)

    stats = DonationStats.objects.get()
    assert (stats.tokens, stats.status) == (4_000_000, "open")
    assert Donation.objects.get(tx_hash=reverted).status == "failed"
    assert Donation.objects.get(tx_hash=honest).tokens == 4_000_000
    stack.verify()


def test_pause_across_a_tier_boundary_and_resume(stack_factory, settings):
    stack = stack_factory(sale=SMALL_SALE)
    first = stack.donate_eth(ACCOUNTS[1], ETHER)  # 2,000,000 tokens, tier 1
    stack.drive(lambda: Donation.objects.filter(tx_hash=first, status="confirmed").exists(), timeout=60)
    campaign_pause(operator="chaos")

    held = [stack.donate_eth(ACCOUNTS[2], ETHER), stack.donate_eth(ACCOUNTS[3], ETHER)]  # would cross 3M
    last_block = int(stack.anvil.receipt(held[-1])["blockNumber"], 16)
    stack.drive(lambda: (cursor_get(chain=CHAIN, label=FINALIZED).value or 0) > last_block + 2, timeout=60)
    assert set(Donation.objects.filter(tx_hash__in=held).values_list("status", flat=True)) == {"unconfirmed"}
    stats = DonationStats.objects.get()
    assert (stats.status, stats.tokens) == ("paused", 2_000_000)  # frozen: nothing credited while paused
    # what each donor is shown while the donation waits: priced when recorded, at the pause-time tier
    shown = {tx: user_data_tokens(tx) for tx in held}
    assert shown == {held[0]: "2000000", held[1]: "2000000"}

    assert campaign_resume(operator="chaos", tiers=settings.CONFIG.sale_tiers) == "open"
    # The old-unconfirmed crawler may have looked at the held rows before their blocks were final and
    # backed off; they are marked held (donation.held_at), so its very next run credits the backlog.
    judged = crawl_old_unconfirmed()
    assert judged.confirmed == 2, judged.summary()
    stack.drive(lambda: not Donation.objects.filter(status="unconfirmed").exists(), timeout=60)

    rows = {d.tx_hash: d for d in Donation.objects.all()}
    # The backlog is sold at the pause-time tier and not re-priced (seed 000, "Token price on resume"):
    # every held donation confirms with the tokens it showed while unconfirmed. The second crosses the
    # cap whole (4M + 2M = 6M of a 5M sale): the overshoot is shown, not hidden.
    assert {tx: (rows[tx].status, rows[tx].price, rows[tx].tokens) for tx in held} == {
        held[0]: ("confirmed", Decimal("0.001"), 2_000_000),
        held[1]: ("confirmed", Decimal("0.001"), 2_000_000),
    }
    assert {tx: user_data_tokens(tx) for tx in held} == shown
    campaign = Client().get("/donation/data").json()
    assert (campaign["status"], campaign["tokens"], campaign["tokens_beyond_cap"]) == ("closed", "6000000", "1000000")
    stack.verify()


def test_a_lagging_provider_answering_no_logs_for_the_newest_blocks(stack_factory):
    stack = stack_factory()
    # For a while, the provider's log index trails its head by 3 blocks: those come back without logs.
    lagging = stack.proxy.lag_logs(lambda: stack.anvil.head() - 2, count=40)
    some_donations(stack, rounds=3)
    stack.drive(lambda: lagging.used == lagging.count and stack.settled(), timeout=90)

    stack.verify()  # every coin donation confirmed once, the balances accounted for
    assert not UnexplainedInflow.objects.exists()
    assert "eth_getLogs answered short" in stack.worker_logs()


def test_a_provider_refusing_every_trace_method(stack_factory):
    """ETH paid on by a contract while no trace method answers: an unexplained inflow of exactly that amount,
    credited by the operator afterwards (through the call traces: needs crawlers/scan/traces.py of issue #10)."""
    stack = stack_factory()
    stack.proxy.refuse_traces()
    relay = stack.anvil.deploy("EthRelay")
    data = stack.anvil.call_data("relay(address)", ["address"], [DONATION_ADDRESS])
    forwarded = stack.anvil.send({"from": ACCOUNTS[6], "to": relay, "value": hex(ETHER // 4), "data": data})
    some_donations(stack)
    block = int(stack.anvil.receipt(forwarded)["blockNumber"], 16)
    done = stack.last_donation_block()
    # Not `settled()`: the chain's own oracle counts the forwarded ETH, which no worker can credit yet.
    stack.drive(
        lambda: UnexplainedInflow.objects.exists() and cursor_get(chain=CHAIN, label=FINALIZED).value >= done,
        timeout=90,
    )

    inflow = UnexplainedInflow.objects.get()
    assert (inflow.block_number, inflow.asset, inflow.amount_raw, inflow.status) == (block, "eth", ETHER // 4, "open")
    assert "unexplained inflow" in stack.worker_logs()

    stack.proxy.disarm()
    inflow_credit(inflow_id=inflow.pk, tx_hash=forwarded, operator="chaos")
    assert Donation.objects.get(tx_hash=forwarded).address == relay
    stack.verify()


def user_data_tokens(tx_hash: str) -> str:
    """The tokens GET /user/data shows the donor for one donation."""
    donor = Donation.objects.get(tx_hash=tx_hash).address
    donations = Client().get(f"/user/data/{donor}").json()["donations"]
    (entry,) = [d for d in donations if d["tx_hash"] == tx_hash]
    return entry["tokens"]
