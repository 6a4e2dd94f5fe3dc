"""The chaos matrix on two chains (issue 24): `eth` and a local rollup (chain id 1337, an anvil and a USDC of its
own), crawled by one real Celery worker with a process per chain, as `make run` starts it, while the test plays
beat for both chains. tests/crawlers/runs/test_chains.py proves the same rules in-process, one crawl at a time;
here the deployed processes run both chains at once, under faults, and `Stack.verify()` checks each chain
(every donation on its final history confirmed once and nothing else, its balances accounted for, `reconcile`
clean) and then the one campaign's ledger."""

from __future__ import annotations

import random
from collections import Counter
from decimal import Decimal

import pytest
from django.test import Client

from crawlers.models import FINALIZED, LATEST
from crawlers.record.cursors import cursor_get
from donations.models import Donation, DonationStats, UserData
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER, ROLLUP, Anvil
from tests.chaos.conftest import USDT

# Committed data (the workers are other processes); pytest-django runs these after the ordinary tests.
pytestmark = [pytest.mark.django_db(transaction=True)]

# 1 ETH = 2000 USD = 2,000,000 tokens in tier 1 (0.001), 1,000,000 in tier 2 (0.002) from 3M tokens on.
TWO_TIERS = "3000000:0.001,50000000:0.002"


def confirmed(*tx_hashes: str) -> bool:
    return Donation.objects.filter(tx_hash__in=tx_hashes, status="confirmed").count() == len(tx_hashes)


def test_donations_on_both_chains_are_each_credited_once_by_a_worker_process_per_chain(stack_factory):
    stack = stack_factory(chains=2, workers=1)
    eth, rollup = stack.chains
    for n in range(3):
        eth.donate_eth(ACCOUNTS[1 + n], ETHER // (2 + n))
        eth.donate_token("usdt" if n % 2 else "usdc", ACCOUNTS[5], (10 + n) * USDT)
        rollup.donate_eth(ACCOUNTS[1 + n], ETHER // (3 + n))
        rollup.donate_token("usdc", ACCOUNTS[6], (20 + n) * USDT)
        stack.beat(2, copies=2)  # two copies of each chain's jobs at once: locked apart per chain

    stack.verify()
    assert Counter(Donation.objects.values_list("chain", flat=True)) == {"eth": 6, ROLLUP: 6}
    logs = stack.worker_logs()
    assert "crawl finalized on eth: cursor" in logs
    assert f"crawl finalized on {ROLLUP}: cursor" in logs


def test_a_reorg_on_one_chain_while_the_other_confirms(stack_factory, chaos_seed):
    rng = random.Random(chaos_seed)
    stack = stack_factory(chains=2, workers=1)
    eth, rollup = stack.chains
    first_on_eth = eth.donate_eth(ACCOUNTS[1], ETHER // 2)
    reorgs: list[tuple[int, int]] = []
    for _ in range(4):
        eth.donate_token("usdc", ACCOUNTS[5], rng.randint(1, 50) * USDT)
        rollup.donate_eth(rng.choice(ACCOUNTS[1:9]), ETHER // rng.randint(2, 20))
        rollup.donate_token("usdc", rng.choice(ACCOUNTS[1:9]), rng.randint(1, 50) * USDT)
        stack.beat(rng.randint(1, 3))  # both chains' crawlers run between the rollup's moves
        depth = rng.randint(1, 4)
        remined = [
            ({"from": rng.choice(ACCOUNTS[1:9]), "to": DONATION_ADDRESS, "value": hex(ETHER // rng.randint(2, 9))}, o)
            for o in range(depth)
            if rng.random() < 0.5
        ]
        rollup.anvil.reorg(depth, remined)
        reorgs.append((depth, len(remined)))
        eth.anvil.mine(2)  # eth goes on finalizing meanwhile
        stack.beat(1)
    # eth confirmed its donations while the rollup was re-organizing (its re-orgs never reach eth's rows)
    stack.drive(lambda: confirmed(first_on_eth), timeout=60)

    orphaned = [tx for tx in rollup.sent if rollup.anvil.receipt(tx) is None]
    print(f"rollup re-orgs (depth, re-mined donations): {reorgs}; {len(orphaned)} of {len(rollup.sent)} orphaned")
    stack.verify()  # on the rollup: orphaned donations never confirmed, re-mined ones exactly once
    assert not Donation.objects.filter(tx_hash__in=orphaned, status="confirmed").exists()
    assert not Donation.objects.filter(chain="eth").exclude(status="confirmed").exists()


def test_one_chains_provider_down_for_a_while_never_stops_the_other_and_nothing_is_lost(stack_factory):
    stack = stack_factory(chains=2, workers=1)
    eth, rollup = stack.chains
    before = rollup.donate_eth(ACCOUNTS[1], ETHER // 2)
    stack.drive(lambda: Donation.objects.filter(tx_hash=before).exists(), timeout=30)
    # The rollup's node stops answering: every request outlasts the workers' 1 s read time-out.
    down = rollup.proxy.arm("*", "hang", count=None, seconds=1.5)
    during = [rollup.donate_eth(ACCOUNTS[2], ETHER // 3), rollup.donate_token("usdc", ACCOUNTS[3], 40 * USDT)]
    first_unseen = int(rollup.anvil.receipt(during[0])["blockNumber"], 16)
    on_eth = [eth.donate_eth(ACCOUNTS[4], ETHER // 4), eth.donate_token("usdt", ACCOUNTS[5], 30 * USDT)]

    stack.drive(lambda: eth.settled() and confirmed(*on_eth), timeout=60)  # eth credits all the while

    assert down.used > 0, "the workers never asked the rollup's node"
    for label in (LATEST, FINALIZED):  # no run got past what the node had answered before it went down
        cursor = cursor_get(chain=ROLLUP, label=label)
        assert cursor is None or cursor.value < first_unseen, (label, cursor.value, first_unseen)
    assert not Donation.objects.filter(tx_hash__in=during).exists()  # nothing taken on absence of evidence
    stack.verify()  # back up: the rollup's crawlers go on from their cursors, every donation credited once
    assert confirmed(before, *during)


def test_a_tier_crossed_by_donations_on_two_chains_in_the_same_minute(stack_factory):
    stack = stack_factory(chains=2, workers=1, sale=TWO_TIERS)
    eth, rollup = stack.chains
    minute = start_of_a_minute(eth.anvil, rollup.anvil)
    for node in (eth.anvil, rollup.anvil):
        node.set_next_block_timestamp(minute)
    # 2,000,000 tokens each: neither chain alone crosses the 3M of tier 1, together they do
    crossing = [eth.donate_eth(ACCOUNTS[1], ETHER), rollup.donate_eth(ACCOUNTS[2], ETHER)]
    for second in range(1, 10):  # the blocks that finalize them, a second apart on both chains
        for node in (eth.anvil, rollup.anvil):
            node.set_next_block_timestamp(minute + second)
            node.mine(1)
    stack.drive(lambda: confirmed(*crossing), timeout=60, mine=False)
    assert Decimal(Client().get("/price/token").json()["price"]) == Decimal("0.002")  # the campaign is in tier 2
    for node in (eth.anvil, rollup.anvil):
        node.set_next_block_timestamp(minute + 12)
    after = [rollup.donate_eth(ACCOUNTS[3], ETHER), eth.donate_token("usdt", ACCOUNTS[4], 1000 * USDT)]

    stack.verify()
    rows = {d.tx_hash: d for d in Donation.objects.all()}
    minutes = {rows[tx].block_time.replace(second=0) for tx in crossing + after}
    assert len(minutes) == 1, f"not one minute: {minutes}"
    # Each of the first two was priced at tier 1 whichever chain confirmed first (2M < 3M); the next two, in
    # the same minute at the same ETH price, at tier 2: the cross-chain confirmed total priced them.
    assert {tx: (rows[tx].chain, rows[tx].price, rows[tx].tokens) for tx in crossing + after} == {
        crossing[0]: ("eth", Decimal("0.001"), 2_000_000),
        crossing[1]: (ROLLUP, Decimal("0.001"), 2_000_000),
        after[0]: (ROLLUP, Decimal("0.002"), 1_000_000),
        after[1]: ("eth", Decimal("0.002"), 500_000),
    }
    stats = DonationStats.objects.get()
    assert (stats.tokens, stats.total) == (5_500_000, Decimal("7000.00"))


def test_the_same_donor_on_both_chains_is_one_donor_with_each_donation_naming_its_chain(stack_factory):
    stack = stack_factory(chains=2, workers=1)
    eth, rollup = stack.chains
    donor = ACCOUNTS[3]
    sent: dict[str, str] = {}
    for n in range(3):  # both chains' finalized runs confirm this donor's rows at once: one user_data row
        sent[eth.donate_eth(donor, ETHER // (4 + n))] = "eth"
        sent[rollup.donate_eth(donor, ETHER // (5 + n))] = ROLLUP
        sent[rollup.donate_token("usdc", donor, (100 + n) * USDT)] = ROLLUP
    sent[eth.donate_token("usdt", donor, 50 * USDT)] = "eth"
    eth.donate_eth(ACCOUNTS[4], ETHER // 10)  # another donor beside

    stack.verify()
    body = Client().get(f"/user/data/{donor}").json()
    assert sorted((d["chain"], d["tx_hash"]) for d in body["donations"]) == sorted((c, tx) for tx, c in sent.items())
    assert {d["status"] for d in body["donations"]} == {"confirmed"}
    rows = Donation.objects.filter(address=donor, status="confirmed")
    assert UserData.objects.filter(address=donor).count() == 1
    assert body["user_data"]["total"] == f"{sum(r.usd_amount for r in rows):.2f}"
    assert body["user_data"]["tokens"] == str(sum(r.tokens for r in rows))


def start_of_a_minute(*nodes: Anvil) -> int:
    """A timestamp after every node's head, at least 20 s before its minute ends, for the next blocks."""
    latest = max(int(node.block("latest")["timestamp"], 16) for node in nodes) + 1
    return latest if latest % 60 < 40 else latest + 60 - latest % 60
