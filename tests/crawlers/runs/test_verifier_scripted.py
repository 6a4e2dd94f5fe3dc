"""Lies a dishonest sale can tell the public verifier (deploy/verify_proof.py) in a proof it writes itself, with no
crawl behind it: a site answering from a script (tests/hostile_site.py ScriptedSite), the node the session anvil.
Each lie would otherwise have hidden a donation behind "your node could not answer everything" (exit 3) or a
crash; each must end in "does not match" (exit 1) naming why, or in exit 4 with one line."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler

from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER
from tests.crawlers.runs.test_verifier_transport import CSV_HEADER, assert_unreadable, check, proof_page
from tests.hostile_site import ScriptedSite

GENESIS = "no balance before the genesis block"


def unproven_range(node, first: int, last: int, assets: tuple[str, ...] = ("eth",)) -> dict:
    """A range the site calls unproven, claiming no figure it could be held to: only its blocks and hash."""
    nothing = {"opening": None, "closing": None, "uncredited": None, "left": None}
    return {
        "first_block": first,
        "last_block": last,
        "last_block_hash": node.block(last)["hash"],
        "status": "unproven",
        "reason": GENESIS,
        "checked_at": "2026-12-01T00:00:00Z",
        "nonce": {"opening": None, "closing": None},
        "assets": [{"asset": a, **nothing, "credited": "0", "donations": 0, "unexplained": "0"} for a in assets],
        "inflows": [],
        "pending": [],
    }


def csv_row(node, tx: str, amount: str, asset: str = "eth", log_index: str = "") -> bytes:
    receipt = node.receipt(tx)
    fields = ["eth", tx, log_index, "", str(int(receipt["blockNumber"], 16)), receipt["blockHash"]]
    return ",".join([*fields, receipt["from"], asset, amount, "1", "1", "1", "1", ""]).encode() + b"\n"


def serve(page: dict, csv: bytes = CSV_HEADER):
    def answer(handler: BaseHTTPRequestHandler) -> None:
        if handler.path.startswith("/proof.json"):
            ScriptedSite.body(handler, json.dumps(page).encode())
        else:
            ScriptedSite.body(handler, csv)

    return ScriptedSite(answer)


def test_a_range_from_the_genesis_block_is_checked_from_the_genesis_state(node):
    """A site whose one range starts at block 0 (on any chain: mainnet's crawler never started there) asked your
    node for the balance at block -1, which no node has: "your node keeps no state for block -1", exit 3, and
    the whole sale went unchecked but for its listed donations. The genesis block holds no transaction: its
    state is where the range opens."""
    hidden = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, 3 * ETHER)
    node.mine(3)
    page = proof_page(ranges=[unproven_range(node, 0, node.finalized())])

    with serve(page) as site:
        run = check(site, node)

    assert run.returncode == 1, run.stdout + run.stderr
    assert f"transaction {hidden} paid the address {3 * ETHER} wei" in run.stdout.splitlines()[-1]
    assert "neither a listed donation nor an open unexplained inflow" in run.stdout

    listed = page["chains"][0]["ranges"][0]["assets"][0]
    listed.update(credited=str(3 * ETHER), donations=1)
    with serve(page, CSV_HEADER + csv_row(node, hidden, "3.00000000")) as site:
        run = check(site, node)

    assert run.returncode == 0, run.stdout + run.stderr  # the genesis allocation is nobody's donation
    assert "blocks 0.." in run.stdout.splitlines()[-2]


# A "coin" any sale can deploy: every call answers 6 (decimals() included) once storage slot 0 is set, and reverts
# before: so balanceOf reverts at every block of the past and answers at the head, like a node without history.
REVERTS_UNTIL_SET = "0x600054600a57600080fd5b600660005260206000f3"
JUNK = "0x" + "5a" * 20


def test_a_coin_whose_contract_refuses_old_balances_is_the_sites_not_your_nodes(node):
    """The site lists a coin of its own whose balanceOf reverts in the past and answers at the head: the verifier
    took the refusal for a node without history, so every range was "balances not checked", exit 3, and a 3 ETH
    donation left off the list went unseen. Your node answering the address's ETH balance and nonce there is
    what says it has the state: a coin that refuses then is the site's coin failing."""
    node.set_code(JUNK, REVERTS_UNTIL_SET)
    node.mine(1)
    first = node.head() + 1
    node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, 3 * ETHER)
    node.mine(3)
    node.rpc("anvil_setStorageAt", JUNK, "0x0", "0x" + "01".rjust(64, "0"))
    node.mine(1)
    junk = {"asset": "usdt", "contract": JUNK, "decimals": 6}
    page = proof_page(
        assets=[{"asset": "eth", "contract": None, "decimals": 18}, junk],
        ranges=[unproven_range(node, first, node.finalized(), ("eth", "usdt"))],
    )

    with serve(page) as site:
        run = check(site, node)

    assert run.returncode == 1, run.stdout + run.stderr
    assert f"the site's coin usdt ({JUNK}) does not answer balanceOf on your node at block {first - 1}" in run.stdout
