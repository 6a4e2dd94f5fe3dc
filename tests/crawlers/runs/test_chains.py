"""One campaign across two chains (DESIGN "Chains"): each chain is crawled on its own, under its own cursors and
locks, and every donation lands in the one campaign. Two real anvil nodes: `eth` (chain id 31337) and a
local "rollup" (chain id 1337, its own USDC contract), the same donation address on both."""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.utils import timezone

from crawlers.models import FINALIZED, LATEST, ReconcileRun
from crawlers.record.cursors import cursor_get
from crawlers.runs.address_code import check_address_codes
from crawlers.runs.crawl import crawl
from crawlers.runs.jobs import run_crawler
from donations.models import Donation, DonationStats, UserData
from donations.services import donation_record_unconfirmed
from donations.sightings import Sighting, Transfer
from donations.webhook_models import WebhookEvent
from dws_project.config_values import SaleTier
from dws_project.redis_client import get_redis
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER
from tests.configs import configured
from tests.crawlers.conftest import ROLLUP
from tests.crawlers.runs.test_verifier import verify
from tests.invariants import assert_ledger_invariants
from tests.rpc_proxy import RpcProxy
from tests.webhook_receiver import registered_endpoint

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("two_chains", "eth_prices")]

USDC = 10**6
# 1 ETH = 2000 USD = 2,000,000 tokens in tier 1 (0.001), 1,000,000 in tier 2 (0.002).
SMALL_SALE = (SaleTier(3_000_000, Decimal("0.001")), SaleTier(50_000_000, Decimal("0.002")))


def finalize(*nodes) -> None:
    for node in nodes:
        node.mine(2)  # `finalized` trails each head by two blocks


def crawl_both(label: str) -> None:
    for chain in ("eth", ROLLUP):
        result = crawl(label, chain=chain)
        assert result.held is None, result.held


def rows() -> dict[tuple[str, str], Donation]:
    return {(d.chain, d.tx_hash): d for d in Donation.objects.all()}


def test_the_same_donor_on_two_chains_is_one_donor_of_one_campaign(node, rollup):
    donor = ACCOUNTS[1]
    on_eth = node.send_eth(donor, DONATION_ADDRESS, ETHER)
    rollup.mint(rollup.coins["usdc"], donor, 500 * USDC)
    on_rollup_eth = rollup.send_eth(donor, DONATION_ADDRESS, ETHER // 2)
    on_rollup_usdc = rollup.transfer_token(rollup.coins["usdc"], donor, DONATION_ADDRESS, 250 * USDC)

    crawl_both(LATEST)
    seen = rows()
    assert {key: (d.asset, d.amount, d.status) for key, d in seen.items()} == {
        ("eth", on_eth): ("eth", Decimal("1"), "unconfirmed"),
        (ROLLUP, on_rollup_eth): ("eth", Decimal("0.5"), "unconfirmed"),
        (ROLLUP, on_rollup_usdc): ("usdc", Decimal("250"), "unconfirmed"),
    }

    finalize(node, rollup)
    crawl_both(FINALIZED)

    assert set(Donation.objects.values_list("status", flat=True)) == {"confirmed"}
    stats = DonationStats.objects.get()
    assert (stats.total, stats.tokens) == (Decimal("3250.00"), 3_250_000)
    donor_row = UserData.objects.get(address=donor)
    assert (donor_row.total, donor_row.tokens) == (Decimal("3250.00"), 3_250_000)
    # each chain's cursors are its own
    assert cursor_get(chain="eth", label=FINALIZED).value == node.finalized()
    assert cursor_get(chain=ROLLUP, label=FINALIZED).value == rollup.finalized()
    # the donor sees every donation with its chain
    body = Client().get(f"/user/data/{donor}").json()
    assert sorted((d["chain"], d["tx_hash"]) for d in body["donations"]) == sorted(
        [("eth", on_eth), (ROLLUP, on_rollup_eth), (ROLLUP, on_rollup_usdc)]
    )
    assert body["user_data"]["tokens"] == "3250000"
    assert_ledger_invariants()


def test_a_tier_crossed_on_one_chain_prices_the_next_donation_on_the_other_in_the_same_minute(node, rollup, settings):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, sale_tiers=SMALL_SALE)
    crossing = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, 2 * ETHER)  # 4,000,000 tokens: past tier 1
    crawl(LATEST, chain="eth")
    finalize(node)
    crawl(FINALIZED, chain="eth")
    assert DonationStats.objects.get().tokens == 4_000_000

    after = rollup.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER)  # first recorded after the crossing
    crawl(LATEST, chain=ROLLUP)
    finalize(rollup)
    crawl(FINALIZED, chain=ROLLUP)

    seen = rows()
    assert (seen[("eth", crossing)].price, seen[("eth", crossing)].tokens) == (Decimal("0.001"), 4_000_000)
    # the confirmed total across both chains priced it: tier 2, whichever chain crossed the limit
    assert (seen[(ROLLUP, after)].price, seen[(ROLLUP, after)].tokens) == (Decimal("0.002"), 1_000_000)
    assert seen[("eth", crossing)].block_time.replace(second=0) <= timezone.now()
    assert DonationStats.objects.get().tokens == 5_000_000
    assert_ledger_invariants()


def test_a_reorg_on_one_chain_moves_only_its_row_while_the_other_chain_confirms(node, rollup):
    on_rollup = rollup.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    signed = rollup.rpc("eth_getRawTransactionByHash", on_rollup)
    on_eth = node.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER)
    crawl_both(LATEST)
    first_block = rows()[(ROLLUP, on_rollup)].block_hash

    rollup.remine_one_block_later(signed)  # the rollup re-orgs the donation into its next block
    rollup.mine(1)
    finalize(node)
    crawl(FINALIZED, chain="eth")  # meanwhile eth confirms its own
    crawl(LATEST, chain=ROLLUP)

    moved = rows()[(ROLLUP, on_rollup)]
    assert moved.block_hash != first_block
    assert moved.block_hash == rollup.receipt(on_rollup)["blockHash"]
    assert rows()[("eth", on_eth)].status == "confirmed"
    finalize(rollup)
    crawl(FINALIZED, chain=ROLLUP)
    assert {d.status for d in Donation.objects.all()} == {"confirmed"}
    assert Donation.objects.count() == 2
    assert_ledger_invariants()


def test_a_chain_whose_provider_is_down_never_stops_the_other_and_loses_nothing(node, rollup, settings):
    check_address_codes("test")  # a worker's start read the shared address on both (a provider down since then
    # would hold the other chain: whether the address is a Safe there would be unknown)
    with RpcProxy(rollup.url) as proxy:
        settings.CONFIG = configured(settings.CONFIG, chain=ROLLUP, rpc_url=proxy.url("/rpc"))
        proxy.arm("*", "error", count=None)
        on_rollup = rollup.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
        on_eth = node.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER)
        finalize(node, rollup)

        for label in (LATEST, FINALIZED):
            held = run_crawler(label, chain=ROLLUP)
            assert held is not None
            assert held.held is not None
            done = run_crawler(label, chain="eth")
            assert done is not None
            assert done.held is None
        assert set(rows()) == {("eth", on_eth)}
        assert rows()[("eth", on_eth)].status == "confirmed"

        proxy.disarm()  # back up: the rollup's crawlers go on from their cursors
        for label in (LATEST, FINALIZED):
            result = run_crawler(label, chain=ROLLUP)
            assert result is not None
            assert result.held is None, result.held
    assert rows()[(ROLLUP, on_rollup)].status == "confirmed"
    assert DonationStats.objects.get().tokens == 4_000_000
    assert_ledger_invariants()


def test_the_same_transaction_hash_on_two_chains_is_two_donations():
    """An unprotected (pre-EIP-155) transaction has the same hash on every chain it is replayed on."""
    transfer = Transfer(
        tx_hash="0x" + "ab" * 32,
        log_index=None,
        donor=ACCOUNTS[3],
        asset="eth",
        amount=Decimal("1"),
        block_number=9,
        block_hash="0x" + "cd" * 32,
    )
    for chain in ("eth", ROLLUP):
        sighting = Sighting(chain=chain, transfer=transfer, block_time=timezone.now(), eth_price=Decimal("2000"))
        donation_record_unconfirmed(sighting=sighting, tiers=SMALL_SALE)

    assert sorted(Donation.objects.values_list("chain", "tx_hash")) == [
        ("eth", transfer.tx_hash),
        (ROLLUP, transfer.tx_hash),
    ]


@pytest.mark.django_db(transaction=True)  # each chain's run is a thread of its own, on a connection of its own
def test_crawl_without_chain_runs_every_chain_and_the_one_chain_commands_name_them(node, rollup, capsys):
    DonationStats.objects.get_or_create()  # an earlier transactional test's flush may have removed it
    node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    rollup.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)

    call_command("crawl", "latest", "--once")

    out = capsys.readouterr().out
    assert "crawl latest on eth: cursor" in out
    assert f"crawl latest on {ROLLUP}: cursor" in out
    assert set(Donation.objects.values_list("chain", flat=True)) == {"eth", ROLLUP}
    for command in (["set_cursor", "latest", "1"], ["reconcile", "--from-block", "1", "--to-block", "2"]):
        with pytest.raises(CommandError, match=f"several chains are configured \\(eth, {ROLLUP}\\)"):
            call_command(*command)
    with pytest.raises(CommandError, match="no chain 'base' is configured"):
        call_command("crawl", "latest", "--once", "--chain", "base")

    call_command("set_cursor", "--chain", ROLLUP, "latest", "1")
    assert cursor_get(chain=ROLLUP, label=LATEST).value == 1
    assert cursor_get(chain="eth", label=LATEST).value == node.head()


def test_reconcile_names_its_chain_and_checks_only_its_records(node, rollup):
    rollup.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    first = rollup.head()
    finalize(rollup)
    crawl(LATEST, chain=ROLLUP)
    crawl(FINALIZED, chain=ROLLUP)

    call_command("reconcile", "--chain", ROLLUP, "--from-block", str(first), "--to-block", str(rollup.finalized()))

    run = ReconcileRun.objects.get()
    assert (run.chain, run.ok, run.transfers) == (ROLLUP, True, 1)
    assert run.summary.startswith(f"reconcile {ROLLUP} blocks {first}..")


def offered(page: str) -> list[str]:
    """The chains the donation page offers, from its settings."""
    found = re.search(r'<script id="dws-config" type="application/json">(.*?)</script>', page)
    assert found is not None
    return [c["chain"] for c in json.loads(found.group(1))["chains"]]


def test_a_chain_refused_for_its_address_stays_refused_when_redis_forgets_everything(node, rollup):
    """Issue 35, finding 3: the refusal lived only in Redis; after a Redis restart without persistence the page
    offered the rollup again and its crawler crawled."""
    template = node.deploy("OwnedWallet", ["address"], [ACCOUNTS[1]])
    node.set_code(DONATION_ADDRESS, node.rpc("eth_getCode", template, "latest"))
    assert run_crawler(LATEST, chain="eth").held is None  # reads the contract code on eth
    rollup.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER)
    redis = get_redis()
    for key in redis.scan_iter("dws:*"):
        redis.delete(key)

    held = run_crawler(LATEST, chain=ROLLUP)

    assert held.held is not None
    assert f"has no code on {ROLLUP}" in held.held
    assert not Donation.objects.filter(chain=ROLLUP).exists()
    assert offered(Client().get("/").content.decode()) == ["eth"]


def test_a_plain_chain_is_held_while_the_code_on_a_chain_sharing_its_address_was_never_read(node, rollup, settings):
    """eth's provider has not answered since the deployment began: whether the shared address is a Safe there
    is unknown, so the rollup (no code) is neither crawled nor offered until it answers."""
    on_rollup = rollup.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER)
    working = settings.CONFIG
    with RpcProxy(node.url) as down:
        down.arm("eth_getCode", "error", count=None, message="internal error")
        settings.CONFIG = configured(working, rpc_url=down.url("/rpc"))

        held = run_crawler(LATEST, chain=ROLLUP)

        assert held.held is not None
        assert "never read" in held.held
        assert not Donation.objects.filter(chain=ROLLUP).exists()
        assert offered(Client().get("/").content.decode()) == []
        assert "never read" in Client().get("/health").json()["chains"][ROLLUP]["refused"]

    settings.CONFIG = working  # eth's provider answers again: its code is read (none), the rollup goes on
    assert run_crawler(LATEST, chain=ROLLUP).held is None
    assert Donation.objects.get(chain=ROLLUP).tx_hash == on_rollup
    assert offered(Client().get("/").content.decode()) == ["eth", ROLLUP]


def test_a_shared_address_that_is_a_contract_on_one_chain_only_is_refused_on_the_other(node, rollup, caplog):
    """A Safe deployed on eth and not on the rollup: money sent to it on the rollup may never be movable."""
    template = node.deploy("OwnedWallet", ["address"], [ACCOUNTS[1]])
    node.set_code(DONATION_ADDRESS, node.rpc("eth_getCode", template, "latest"))
    on_rollup = rollup.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER)
    assert run_crawler(LATEST, chain="eth").held is None  # notes the contract code on eth

    with caplog.at_level(logging.CRITICAL, logger="dws.crawlers"):
        refused = run_crawler(LATEST, chain=ROLLUP)

    assert refused.held is not None
    assert f"has no code on {ROLLUP}" in refused.held
    assert any(f"{ROLLUP} is refused" in r.getMessage() for r in caplog.records if r.levelno == logging.CRITICAL)
    assert not Donation.objects.filter(chain=ROLLUP).exists()
    health = Client().get("/health").json()
    assert f"has no code on {ROLLUP}" in health["chains"][ROLLUP]["refused"]
    assert health["chains"]["eth"]["refused"] is None

    rollup.set_code(DONATION_ADDRESS, node.rpc("eth_getCode", DONATION_ADDRESS, "latest"))  # deployed there too
    assert run_crawler(LATEST, chain=ROLLUP).held is None
    assert Donation.objects.get(chain=ROLLUP).tx_hash == on_rollup  # nothing sent meanwhile was lost


def test_a_provider_saying_no_code_where_a_contract_was_read_does_not_offer_the_chains_sharing_it(
    node, rollup, settings
):
    """Code never leaves an address (EIP-6780), so "0x" where the Safe was read is a node behind (a syncing node
    behind the provider's load balancer), not the chain: it was recorded over the contract, and the rollup was
    crawled and offered until eth's next reading."""
    template = node.deploy("OwnedWallet", ["address"], [ACCOUNTS[1]])
    node.set_code(DONATION_ADDRESS, node.rpc("eth_getCode", template, "latest"))
    assert run_crawler(LATEST, chain="eth").held is None  # reads the contract code on eth
    rollup.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER)
    working = settings.CONFIG
    with RpcProxy(node.url) as behind:
        behind.arm("eth_getCode", "rewrite", count=None, rewrite=lambda code, params: "0x")
        settings.CONFIG = configured(working, rpc_url=behind.url("/rpc"))
        run_crawler(LATEST, chain="eth")
    settings.CONFIG = working

    held = run_crawler(LATEST, chain=ROLLUP)

    assert held.held is not None
    assert f"has no code on {ROLLUP}" in held.held
    assert not Donation.objects.filter(chain=ROLLUP).exists()
    assert offered(Client().get("/").content.decode()) == ["eth"]


@pytest.mark.django_db(transaction=True)  # the live server reads from its own connection
def test_each_chain_publishes_its_own_proof_and_the_verifier_checks_each_on_its_node(live_server, node, rollup):
    DonationStats.objects.get_or_create()  # an earlier transactional test's flush may have removed it
    node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    rollup.mint(rollup.coins["usdc"], ACCOUNTS[2], 100 * USDC)
    rollup.transfer_token(rollup.coins["usdc"], ACCOUNTS[2], DONATION_ADDRESS, 40 * USDC)
    rollup.send_eth(ACCOUNTS[3], DONATION_ADDRESS, ETHER // 4)
    finalize(node, rollup)
    call_command("crawl", "finalized", "--once")  # both chains, each in a thread of its own

    proof = Client().get("/proof.json").json()
    assert [c["chain"] for c in proof["chains"]] == ["eth", ROLLUP]
    rollup_proof = proof["chains"][1]
    assert rollup_proof["chain_id"] == 1337
    assert [a["asset"] for a in rollup_proof["assets"]] == ["eth", "usdc"]  # its own coin, only
    credited = {
        a["asset"]: int(a["credited"]) for r in rollup_proof["ranges"] for a in r["assets"] if a["credited"] != "0"
    }
    assert credited == {"eth": ETHER // 4, "usdc": 40 * USDC}

    for chain, url in (("eth", node.url), (ROLLUP, rollup.url)):
        run = verify(live_server.url, url, "--chain", chain)
        assert run.returncode == 0, run.stdout + run.stderr
        assert "matches:" in run.stdout.splitlines()[-1]
    wrong_node = verify(live_server.url, node.url, "--chain", ROLLUP)  # the rollup's proof against eth's node
    assert wrong_node.returncode != 0
    assert "chain id 31337" in wrong_node.stdout + wrong_node.stderr


def test_a_donation_event_names_its_chain_and_that_chains_id(node, rollup):
    registered_endpoint("https://crm.example/hooks", ["donation.seen"], secret="s" * 32)
    tx = rollup.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)

    crawl(LATEST, chain=ROLLUP)

    (event,) = WebhookEvent.objects.filter(event="donation.seen")
    assert (event.payload["data"]["chain"], event.payload["data"]["chain_id"]) == (ROLLUP, 1337)
    assert event.payload["data"]["tx_hash"] == tx
    assert event.payload["id"] == f"1337:{tx}:tx:donation.seen"


def test_two_chains_on_one_provider_host_keep_their_provider_memories_apart():
    """What one chain's endpoint is remembered for (no old state, refused traces, its trace method) must not
    be taken for another chain's endpoint on the same host: a block number refused on one is not the other's."""
    from crawlers.chain.rpc import RpcClient
    from crawlers.scan import history, trace_filter, traces

    eth = RpcClient("https://rpc.example.org/eth/key-one")
    base = RpcClient("https://rpc.example.org/base/key-one")

    assert eth.origin == base.origin == "https://rpc.example.org"  # all the logs ever show of either
    assert history.memory_key(eth) != history.memory_key(base)
    assert traces.memory_key(eth) != traces.memory_key(base)
    assert trace_filter._filter_key(eth) != trace_filter._filter_key(base)
    assert "key-one" not in history.memory_key(eth) + traces.memory_key(base)
