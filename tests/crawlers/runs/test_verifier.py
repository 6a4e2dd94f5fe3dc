"""deploy/verify_proof.py, run as anyone would run it (a separate Python without the project's packages), against
the live site and the node: a real crawl matches; a site whose answer was tampered with is named by range;
a node without historical state gets a plain account of what could not be checked."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from collections.abc import Callable

import pytest
import requests
from django.core.management import call_command
from django.core.management.base import CommandError

from donations.models import DonationStats
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER, free_port
from tests.configs import configured
from tests.hostile_site import VERIFIER, TamperingSite, lie_about, shift, verify_site
from tests.rpc_proxy import RpcProxy

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("crawl_config", "eth_prices", "campaign_row"),
]

USDT = 10**6
BALANCE_READS = ("eth_getBalance", "eth_getTransactionCount", "eth_call")


def verify(site: str, rpc: str, *extra: str) -> subprocess.CompletedProcess:
    return verify_site(site, rpc, *extra)


@pytest.fixture
def campaign_row() -> None:
    """The campaign row a migration makes; a transactional test before this one flushed it."""
    if not DonationStats.objects.exists():
        DonationStats.objects.create()


@pytest.fixture
def sale(node) -> dict:
    """A sale with history over several published ranges: ETH and coin donations, an ETH donation made by a
    contract in an internal call, dust, a coin minted to the address by its own call (its own money, like USDC
    it bridged to itself), and ETH and coins paid out."""
    donor, payee = ACCOUNTS[1], ACCOUNTS[5]
    node.mint(node.coins["usdt"], donor, 1000 * USDT)
    node.mint(node.coins["usdc"], ACCOUNTS[2], 1000 * USDT)
    txs = {"eth": node.send_eth(donor, DONATION_ADDRESS, 2 * ETHER + 7)}
    txs["usdt"] = node.transfer_token(node.coins["usdt"], donor, DONATION_ADDRESS, 300 * USDT)
    node.mine(3)
    call_command("crawl", "finalized", "--once")

    relay = node.deploy("EthRelay")
    data = node.call_data("relay(address)", ["address"], [DONATION_ADDRESS])
    txs["internal"] = node.send({"from": ACCOUNTS[4], "to": relay, "value": hex(3 * ETHER), "data": data})
    node.send_eth(ACCOUNTS[3], DONATION_ADDRESS, 1)  # dust
    txs["usdc"] = node.transfer_token(node.coins["usdc"], ACCOUNTS[2], DONATION_ADDRESS, 50 * USDT)
    own_mint = node.call_data("mint(address,uint256)", ["address", "uint256"], [DONATION_ADDRESS, 40 * USDT])
    node.send({"from": DONATION_ADDRESS, "to": node.coins["usdc"], "data": own_mint})
    node.mine(3)
    call_command("crawl", "finalized", "--once")

    node.send_eth(DONATION_ADDRESS, payee, ETHER // 2)
    node.transfer_token(node.coins["usdt"], DONATION_ADDRESS, payee, 120 * USDT)
    txs["late"] = node.send_eth(ACCOUNTS[6], DONATION_ADDRESS, ETHER)
    node.mine(20)
    call_command("crawl", "finalized", "--once")
    return txs


def ranges(site: str) -> list[dict]:
    return requests.get(f"{site}/proof.json", timeout=30).json()["chains"][0]["ranges"]


def block_of(node, tx: str) -> int:
    return int(node.receipt(tx)["blockNumber"], 16)


def holding(published: list[dict], block: int) -> dict:
    return next(r for r in published if r["first_block"] <= block <= r["last_block"])


def test_a_real_crawl_matches_on_the_node_it_was_crawled_from(live_server, node, sale, settings):
    published = ranges(live_server.url)
    assert len(published) >= 3
    settings.PROOF_CSV_RATE_BURST, settings.PROOF_CSV_RATE_PER_SECOND = 1, 1
    assert requests.get(f"{live_server.url}/proof/donations.csv", timeout=30).status_code == 200  # budget spent

    run = verify(live_server.url, node.url)  # refused the download at first: waits as told and asks again

    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.splitlines()[-1].startswith(
        f"matches: {len(published)} range(s), blocks {published[0]['first_block']}..{node.finalized()}, 5 donation(s)"
    )
    for found in published:
        assert f"blocks {found['first_block']}..{found['last_block']}: matches" in run.stdout


def rewrite_range(first_block: int, change: Callable[[dict], None]) -> Callable[[str, bytes], bytes]:
    """A site answer with one range's figures changed (by `change`), everything else as served."""

    def rewrite(path: str, body: bytes) -> bytes:
        if not path.startswith("/proof.json"):
            return body
        answer = json.loads(body)
        for found in answer["chains"][0]["ranges"]:
            if found["first_block"] == first_block:
                change({a["asset"]: a for a in found["assets"]})
        return json.dumps(answer).encode()

    return rewrite


def test_a_tampered_balance_is_named_by_its_range(live_server, node, sale):
    target = holding(ranges(live_server.url), block_of(node, sale["usdc"]))

    def more_usdc(assets: dict) -> None:
        assets["usdc"]["closing"] = str(int(assets["usdc"]["closing"]) + 1)
        assets["usdc"]["uncredited"] = str(int(assets["usdc"]["uncredited"]) + 1)  # still adds up

    with TamperingSite(live_server.url, rewrite_range(target["first_block"], more_usdc)) as site:
        run = verify(site.url, node.url)

    assert run.returncode == 1, run.stdout + run.stderr
    name = f"blocks {target['first_block']}..{target['last_block']}"
    assert run.stdout.splitlines()[-1].startswith(f"does not match: {name}: the usdc balance at block ")


def test_a_donation_left_out_of_the_list_and_the_figures_is_found_on_chain(live_server, node, sale):
    """A site hiding a donation consistently (gone from the CSV, its amount moved to "uncredited" so every
    published figure still adds up) is caught by the transaction that paid the address."""
    hidden = sale["late"]
    target = holding(ranges(live_server.url), block_of(node, hidden))
    name = f"blocks {target['first_block']}..{target['last_block']}"

    def fewer(assets: dict) -> None:
        assets["eth"]["credited"] = str(int(assets["eth"]["credited"]) - ETHER)
        assets["eth"]["uncredited"] = str(int(assets["eth"]["uncredited"]) + ETHER)
        assets["eth"]["donations"] -= 1

    in_figures = rewrite_range(target["first_block"], fewer)

    def hide(path: str, body: bytes) -> bytes:
        if path.startswith("/proof/donations.csv"):
            return b"".join(line for line in body.splitlines(keepends=True) if hidden.encode() not in line)
        return in_figures(path, body)

    with TamperingSite(live_server.url, hide) as site:
        run = verify(site.url, node.url)

    assert run.returncode == 1, run.stdout + run.stderr
    assert f"does not match: {name}: transaction {hidden} paid the address {ETHER} wei" in run.stdout


def test_against_a_node_without_history_it_checks_what_it_can_and_says_what_it_could_not(live_server, node, sale):
    with RpcProxy(node.url) as no_history:
        for method in BALANCE_READS:
            no_history.arm(
                method,
                "error",
                count=None,
                message="missing trie node 7c1a (path ) state is not available",
                when=lambda params: params[-1] != "latest",
            )
        run = verify(live_server.url, no_history.url("/rpc"))

    assert run.returncode == 3, run.stdout + run.stderr
    first = ranges(live_server.url)[0]
    assert f"blocks {first['first_block']}..{first['last_block']}: checked what could be" in run.stdout
    assert f"balances not checked: your node keeps no state for block {first['first_block'] - 1}" in run.stdout
    assert "matches as far as it could be checked" in run.stdout.splitlines()[-1]


def test_the_site_serves_the_verifier_it_documents(live_server):
    answer = requests.get(f"{live_server.url}/proof/verify.py", timeout=30)

    assert answer.status_code == 200
    assert answer.headers["Content-Type"].startswith("text/x-python")
    assert answer.content == VERIFIER.read_bytes()


def test_each_kind_of_lie_is_named_by_the_first_range_it_is_in(live_server, node, sale, settings):
    settings.PROOF_CSV_RATE_BURST = 100  # one download per lie
    first, second, third = ranges(live_server.url)[:3]
    name = {r["first_block"]: f"blocks {r['first_block']}..{r['last_block']}" for r in (first, second, third)}
    lies = [
        # more ETH left than did (made up for in "uncredited", so the figures still add up)
        (third, lambda r: shift(r, "eth", left=1, uncredited=1), None, "wei left the address in its transactions"),
        (third, lambda r: shift(r, "eth", left=-1, uncredited=-1), None, "more than arrived"),
        (first, lambda r: r.update(last_block_hash="0x" + "ab" * 32), None, f"block {first['last_block']} is 0x"),
        (
            second,
            lambda r: r["nonce"].update(opening="99"),
            None,
            f"the nonce balance at block {second['first_block'] - 1}",
        ),
        (
            first,
            lambda r: shift(r, "usdt", credited=-300 * USDT, uncredited=300 * USDT, donations=-1),
            sale["usdt"],
            "paid the address 300000000 raw units of usdt in block",
        ),
        (
            second,
            lambda r: r.update(drop=True),
            None,
            f"blocks {second['first_block']}..{second['last_block']}: no range",
        ),
        (second, lambda r: shift(r, "eth", credited=1, uncredited=-1), None, "its donation list has"),
    ]
    for target, change, csv_without, expected in lies:
        with TamperingSite(live_server.url, lie_about(target["first_block"], change, csv_without)) as site:
            run = verify(site.url, node.url)

        assert run.returncode == 1, (expected, run.stdout + run.stderr)
        last = run.stdout.splitlines()[-1]
        where = "" if "no range" in expected else name[target["first_block"]] + ": "
        assert last.startswith(f"does not match: {where}"), (expected, last)
        assert expected in last, (expected, last)


def test_a_node_that_cannot_be_reached_is_said_so_without_printing_its_url(live_server):
    dead = f"http://127.0.0.1:{free_port()}/v3/0123456789abcdef-provider-key"

    run = verify(live_server.url, dead)

    assert run.returncode == 4
    assert run.stderr.startswith("could not check: your node: ")
    assert "provider-key" not in run.stdout + run.stderr


def test_a_range_the_site_could_not_prove_is_checked_as_far_as_it_goes_and_said_to_be_unproven(
    live_server, node, proxy, campaign_row
):
    node.mint(node.coins["usdt"], ACCOUNTS[1], 100 * USDT)
    node.transfer_token(node.coins["usdt"], ACCOUNTS[1], DONATION_ADDRESS, 40 * USDT)
    node.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER)
    node.mine(300)
    pruned_below = node.head() - 128
    for method in BALANCE_READS:  # the site's provider keeps no old state; the auditor's node does
        proxy.arm(
            method,
            "error",
            count=None,
            message="missing trie node 2cf5 (path ) state is not available",
            when=lambda params: (
                isinstance(params[-1], str) and params[-1].startswith("0x") and int(params[-1], 16) < pruned_below
            ),
        )
    with pytest.raises(CommandError, match="was refused"):  # a first refusal of old state holds one run
        call_command("crawl", "finalized", "--once")
    call_command("crawl", "finalized", "--once")

    run = verify(live_server.url, node.url)

    assert run.returncode == 0, run.stdout + run.stderr
    first = ranges(live_server.url)[0]
    assert first["status"] == "unproven"
    assert (
        f"blocks {first['first_block']}..{first['last_block']}: matches (2 donation(s)); the site calls it unproven "
        "(the provider keeps no historical state" in run.stdout
    )
    assert "your node answered everything" in run.stdout
    assert run.stdout.splitlines()[-1].startswith("matches:")


def test_a_range_the_site_calls_unproven_is_checked_in_full_where_your_node_has_the_history(live_server, node, sale):
    """ "Unproven" is your node's question, not the site's: a site marking a range unproven (its figures gone)
    to turn the checks off is checked in full all the same, and the donation it hid is found."""
    hidden = sale["late"]
    target = holding(ranges(live_server.url), block_of(node, hidden))

    def unproven(found: dict) -> None:
        found.update(status="unproven", reason="the provider keeps no historical state")
        found["nonce"] = {"opening": None, "closing": None}
        for figures in found["assets"]:
            figures.update(opening=None, closing=None, uncredited=None, left=None)
        shift(found, "eth", credited=-ETHER, donations=-1)

    with TamperingSite(live_server.url, lie_about(target["first_block"], unproven, csv_without=hidden)) as site:
        run = verify(site.url, node.url)

    assert run.returncode == 1, run.stdout + run.stderr
    assert f"transaction {hidden} paid the address {ETHER} wei in block" in run.stdout.splitlines()[-1]


def test_the_addresss_own_coin_coming_back_matches_though_no_donation_lists_it(live_server, node):
    # The donation address signs a transaction that brings it coins (a swap's stand-in: here a mint),
    # and pays itself 20 USDT: neither is a donation, and the verifier agrees with the site.
    usdt = node.coins["usdt"]
    mint = node.call_data("mint(address,uint256)", ["address", "uint256"], [DONATION_ADDRESS, 300 * USDT])
    node.send({"from": DONATION_ADDRESS, "to": usdt, "data": mint})
    node.transfer_token(usdt, DONATION_ADDRESS, DONATION_ADDRESS, 20 * USDT)
    node.send_eth(ACCOUNTS[6], DONATION_ADDRESS, ETHER)
    node.mine(3)
    call_command("crawl", "finalized", "--once")

    run = verify(live_server.url, node.url)

    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.splitlines()[-1].startswith("matches:"), run.stdout


def test_a_donors_coin_paid_beside_a_call_the_address_was_made_to_make_is_no_own_money_to_the_verifier(
    live_server, node
):
    # Anyone can make a Safe call out (its fallback handler); a donor's contract does so and then pays it
    # 200 USDT. A site that hides that donation as the address's own is caught: only a coin whose contract
    # ran under the address's own call is its own.
    usdt = node.coins["usdt"]
    template = node.deploy("HandlerWallet", ["address", "address"], [ACCOUNTS[1], ACCOUNTS[5]])
    node.set_code(DONATION_ADDRESS, node.rpc("eth_getCode", template, "latest"))
    payer = node.deploy("PokeThenPay")
    node.mint(usdt, payer, 200 * USDT)
    pay = node.call_data(
        "pokeThenPay(address,address,uint256)", ["address", "address", "uint256"], [DONATION_ADDRESS, usdt, 200 * USDT]
    )
    tx = node.send({"from": ACCOUNTS[2], "to": payer, "data": pay, "gas": hex(300_000)})
    node.mine(3)
    call_command("crawl", "finalized", "--once")
    target = holding(ranges(live_server.url), block_of(node, tx))

    def hidden(found: dict) -> None:
        shift(found, "usdt", credited=-200 * USDT, uncredited=200 * USDT, donations=-1)

    with TamperingSite(live_server.url, lie_about(target["first_block"], hidden, csv_without=tx)) as site:
        run = verify(site.url, node.url)

    assert run.returncode == 1, run.stdout + run.stderr
    assert (
        f"transaction {tx} paid the address {200 * USDT} raw units of usdt in block {block_of(node, tx)} from {payer}"
        in run.stdout
    ), run.stdout
    assert "and it is neither a listed donation nor an open unexplained inflow the site lists" in run.stdout


# --- what it relies on comes from your node or from you ----------------------------------------------------


def test_it_prints_the_address_and_the_coins_it_checks_with_their_decimals_from_your_node(live_server, node):
    node.mine(3)
    call_command("crawl", "finalized", "--once")

    run = verify(live_server.url, node.url)

    assert run.returncode == 0, run.stdout + run.stderr
    top = run.stdout.splitlines()[:2]
    assert top[0].endswith(f"chain eth (chain id 31337, from your node), donation address {DONATION_ADDRESS}")
    assert top[1] == (
        f"coins checked: usdt {node.coins['usdt']} (6 decimals, from your node), "
        f"usdc {node.coins['usdc']} (6 decimals, from your node)"
    )


def test_a_sale_that_declares_usdc_with_18_decimals_does_not_match(live_server, node, settings):
    """The crawler configured with USDC at scale 18 (the config's 2..18 allows it) writes a 50 USDC donation as
    0.00000000005 USDC: dust, credited to nobody, and every published figure adds up. Only your node's
    decimals() shows the lie."""
    coins = tuple(
        dataclasses.replace(c, scale=18) if c.asset == "usdc" else c for c in settings.CONFIG.first_chain.stable_coins
    )
    settings.CONFIG = configured(settings.CONFIG, stable_coins=coins)
    node.mint(node.coins["usdc"], ACCOUNTS[2], 50 * USDT)
    node.transfer_token(node.coins["usdc"], ACCOUNTS[2], DONATION_ADDRESS, 50 * USDT)
    node.mine(3)
    call_command("crawl", "finalized", "--once")

    run = verify(live_server.url, node.url)

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stdout.splitlines()[-1] == (
        f"does not match: the site says usdc ({node.coins['usdc']}) has 18 decimals; its contract says 6 on your node"
    )


def without_usdc(path: str, body: bytes) -> bytes:
    """The sale's answers with USDC left out: not among the assets, not in any range, not in the CSV."""
    if path.startswith("/proof/donations.csv"):
        return b"".join(line for line in body.splitlines(keepends=True) if b",usdc," not in line)
    if not path.startswith("/proof.json"):
        return body
    answer = json.loads(body)
    for chain in answer["chains"]:
        chain["assets"] = [a for a in chain["assets"] if a["asset"] != "usdc"]
        for found in chain["ranges"]:
            found["assets"] = [a for a in found["assets"] if a["asset"] != "usdc"]
    return json.dumps(answer).encode()


def test_a_coin_left_out_is_shown_and_fails_the_check_when_you_name_it(live_server, node, sale):
    with TamperingSite(live_server.url, without_usdc) as site:
        unpinned = verify(site.url, node.url)
        pinned = verify(site.url, node.url, "--coin", f"usdc={node.coins['usdc']}")

    assert f"coins checked: usdt {node.coins['usdt']} (6 decimals, from your node)\n" in unpinned.stdout
    assert pinned.returncode == 1, pinned.stdout + pinned.stderr
    assert pinned.stdout.splitlines()[-1] == (
        f"does not match: you named usdc {node.coins['usdc']}; the site's proof does not account for it"
    )


def test_a_coin_the_donation_list_holds_and_the_proof_leaves_out_does_not_match(live_server, node, sale):
    def proof_only(path: str, body: bytes) -> bytes:
        return body if path.startswith("/proof/donations.csv") else without_usdc(path, body)

    with TamperingSite(live_server.url, proof_only) as site:
        run = verify(site.url, node.url)

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stdout.splitlines()[-1] == (
        "does not match: the donation list holds usdc donations; the site's proof does not account for usdc"
    )


def test_what_you_pin_must_be_what_the_site_says(live_server, node):
    node.mine(3)
    call_command("crawl", "finalized", "--once")
    other = ACCOUNTS[7]

    same = verify(live_server.url, node.url, "--address", DONATION_ADDRESS.upper().replace("0X", "0x"))
    address = verify(live_server.url, node.url, "--address", other)
    coin = verify(live_server.url, node.url, "--coin", f"usdt={node.coins['usdc']}")
    bad = verify(live_server.url, node.url, "--coin", "usdt")

    assert same.returncode == 0, same.stdout + same.stderr
    assert address.returncode == 1
    assert address.stdout.splitlines()[-1] == (
        f"does not match: the site's donation address is {DONATION_ADDRESS}; you gave {other}"
    )
    assert coin.returncode == 1
    assert coin.stdout.splitlines()[-1] == (
        f"does not match: the site's usdt contract is {node.coins['usdt']}; you gave {node.coins['usdc']}"
    )
    assert bad.returncode == 2
    assert "--coin: ASSET=0xCONTRACT" in bad.stderr
