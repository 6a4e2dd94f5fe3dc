"""The donation address's mode inside a range, not only at its edges: the public verifier reads its code at the
opening edge and after every block where its nonce moved (the only way an EIP-7702 delegation comes or goes,
with a block whose nonce moved by more than the address's own transactions holding an authorization it
signed), and reads every block in which it had code through the call traces (trace_filter to find them where
your node serves it); where your node gives no traces, exit 3. Runs deploy/verify_proof.py as a donor would.
"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
import requests
from django.core.management import call_command

from donations.export import proof_csv_refresh
from donations.models import DonationStats
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER, authorize_7702
from tests.hostile_site import TamperingSite, verify_site
from tests.rpc_proxy import RpcProxy

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("crawl_config", "eth_prices", "campaign_row"),
]

OWNER, PAYEE = ACCOUNTS[1], ACCOUNTS[6]
NOBODY = "0x" + "00" * 20  # an authorization to it clears the delegation


@pytest.fixture
def campaign_row() -> None:
    """The campaign row a migration makes; a transactional test before this one flushed it."""
    if not DonationStats.objects.exists():
        DonationStats.objects.create()


def pay_out(node, wei: int) -> str:
    """The wallet's owner makes the (delegated) donation address pay by an internal call."""
    data = node.call_data("execute(address,uint256,bytes)", ["address", "uint256", "bytes"], [PAYEE, wei, b""])
    return node.send({"from": OWNER, "to": DONATION_ADDRESS, "data": data, "gas": hex(200_000)})


def test_a_delegation_set_and_cleared_inside_a_range_with_eth_in_and_out_does_not_match(live_server, node):
    """Edges plain, the nonce explained by two authorizations, the balance where it was: only the blocks in
    which the address had code, read through their traces, show the 1 ETH donation that came and went."""
    wallet = node.deploy("SafeLikeWallet", ["address"], [OWNER])
    node.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER)  # a range before, with the address's balance on record
    node.mine(3)
    call_command("crawl", "finalized", "--once")
    authorize_7702(node, wallet, sponsor=ACCOUNTS[0])
    with node.one_block():  # in and out in one block: neither its balance nor its nonce moves
        donated = node.send({"from": ACCOUNTS[3], "to": DONATION_ADDRESS, "value": hex(ETHER), "gas": hex(100_000)})
        pay_out(node, ETHER)
    authorize_7702(node, NOBODY, sponsor=ACCOUNTS[0])
    assert node.rpc("eth_getCode", DONATION_ADDRESS, "latest") == "0x"
    node.mine(3)
    call_command("crawl", "finalized", "--once")
    block = int(node.receipt(donated)["blockNumber"], 16)

    with TamperingSite(live_server.url, hide_credited(live_server.url, donated)) as site:
        run = verify_site(site.url, node.url)

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stdout.splitlines()[-1].endswith(
        f"transaction {donated} paid the address {ETHER} wei in block {block} from {ACCOUNTS[3]}, and it is neither "
        "a listed donation nor an open unexplained inflow the site lists"
    )


def hide_credited(site: str, tx: str):
    """The site's answers without the ETH donation `tx` if its crawler credited it: gone from the CSV and from
    its range's credited figures, its amount moved to "uncredited", so every published figure still adds up.
    (A crawler that did not see it publishes exactly that already.)"""
    proof_csv_refresh()  # the CSV as the task keeps it after the crawls, before reading what to hide
    listed = [line.split(",") for line in requests.get(f"{site}/proof/donations.csv", timeout=30).text.splitlines()[1:]]
    row = next((r for r in listed if r[1] == tx), None)

    def rewrite(path: str, body: bytes) -> bytes:
        if row is None:
            return body
        if path.startswith("/proof/donations.csv"):
            return b"".join(line for line in body.splitlines(keepends=True) if tx.encode() not in line)
        if not path.startswith("/proof.json"):
            return body
        answer = json.loads(body)
        wei = int(Decimal(row[8]).scaleb(18))
        for found in answer["chains"][0]["ranges"]:
            if found["first_block"] <= int(row[4]) <= found["last_block"]:
                figures = next(a for a in found["assets"] if a["asset"] == "eth")
                figures["credited"] = str(int(figures["credited"]) - wei)
                figures["uncredited"] = str(int(figures["uncredited"]) + wei)
                figures["donations"] -= 1
        return json.dumps(answer).encode()

    return rewrite


def test_a_safe_donation_address_matches_when_honest_and_its_internal_payout_is_what_left(live_server, node):
    """An address with code all along (a Safe stand-in): a direct donation, one by a contract, and a payout by
    internal call, all read through the traces of the blocks it took part in a call in (trace_filter)."""
    template = node.deploy("SafeLikeWallet", ["address"], [OWNER])
    node.set_code(DONATION_ADDRESS, node.rpc("eth_getCode", template, "latest"))
    node.send({"from": ACCOUNTS[2], "to": DONATION_ADDRESS, "value": hex(ETHER), "gas": hex(100_000)})
    relay_contract = node.deploy("EthRelay")
    data = node.call_data("relay(address)", ["address"], [DONATION_ADDRESS])
    node.send({"from": ACCOUNTS[3], "to": relay_contract, "value": hex(2 * ETHER), "data": data, "gas": hex(200_000)})
    pay_out(node, ETHER // 2)
    node.mine(3)
    call_command("crawl", "finalized", "--once")

    run = verify_site(live_server.url, node.url)
    with RpcProxy(node.url) as no_filter:
        no_filter.arm("trace_filter", "error", count=None, code=-32601, message="the method does not exist")
        every_block = verify_site(live_server.url, no_filter.url("/rpc"))
    with RpcProxy(node.url) as no_traces:
        no_traces.refuse_traces()
        untraced = verify_site(live_server.url, no_traces.url("/rpc"))

    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.splitlines()[-1].startswith("matches:")
    assert "2 donation(s)" in run.stdout.splitlines()[-1]
    assert every_block.returncode == 0, every_block.stdout + every_block.stderr
    assert untraced.returncode == 3, untraced.stdout + untraced.stderr
    assert "the address had code in blocks" in untraced.stdout
    assert "your node gives no call traces" in untraced.stdout
