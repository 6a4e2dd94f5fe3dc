"""Lies a dishonest sale can tell the public verifier (deploy/verify_proof.py) in a proof it writes itself, with no
crawl behind it: a site answering from a script (tests/hostile_site.py ScriptedSite), the node the session anvil.
Each lie would otherwise have hidden a donation behind "your node could not answer everything" (exit 3) or a
crash; each must end in "does not match" (exit 1) naming why, or in exit 4 with one line."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler

from eth_abi import encode

from tests.cctp import V1_TOKEN_MESSENGER
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER
from tests.crawlers.runs.test_verifier_transport import CSV_HEADER, check, proof_page
from tests.hostile_site import ScriptedSite

GENESIS = "no balance before the genesis block"
USDC = 10**6


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
    listed.update(credited=str(6 * ETHER), donations=2)  # the one donation listed twice, its figures agreeing
    row = csv_row(node, hidden, "3.00000000")
    with serve(page, CSV_HEADER + row + row) as site:
        twice = check(site, node)

    assert twice.returncode == 1, twice.stdout + twice.stderr
    assert twice.stdout.splitlines()[-1].endswith(f"the donation list holds the donation {hidden} twice")

    listed.update(credited=str(3 * ETHER), donations=1)
    with serve(page, CSV_HEADER + csv_row(node, hidden, "3.00000000")) as site:
        run = check(site, node, "1", "--tx", hidden)

    assert run.returncode == 0, run.stdout + run.stderr  # the genesis allocation is nobody's donation
    assert f"your transaction: transaction {hidden} paid the address {3 * ETHER} wei" in run.stdout
    assert run.stdout.splitlines()[-2].endswith(": a listed donation")


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


# Circle's CCTP v1 MessageTransmitter on Ethereum, and its MessageReceived(address,uint32,uint64,bytes32,bytes).
V1_TRANSMITTER = "0x0a992d191deec32afe36203ad87d7d289a738f81"
MESSAGE_RECEIVED_V1 = "58200b4c34ae05ee816d710053fff3fb75af4395915d3d2a771b24aa10e3cc5d"


def transmitter_stand_in(coin: str) -> str:
    """receiveMessage reduced to what the chain shows of it: calldata[0:68] is passed to `coin` (its mint), then
    MessageReceived is logged with calldata[68:] as its data."""
    call_coin = "6000600060446000600073" + coin[2:] + "5af150"  # CALL(gas, coin, 0, 0, 68, 0, 0); POP
    copy_rest = "6044360360446000" + "37"  # CALLDATACOPY(0, 68, calldatasize - 68)
    log = "7f" + MESSAGE_RECEIVED_V1 + "604436036000a100"  # LOG1(0, calldatasize - 68, topic); STOP
    return "0x604460006000" + "37" + call_coin + copy_rest + log


def proven_range(node, first: int, last: int, coins: dict[str, str], uncredited: dict[str, int]) -> dict:
    """A proven range with the figures your node gives: nothing credited, nothing unexplained, no ETH left but the
    fees of what the address sent; `uncredited` per asset as the site books it."""
    assets = []
    for asset in ("eth", *coins):
        if asset == "eth":
            read = [int(node.rpc("eth_getBalance", DONATION_ADDRESS, hex(b)), 16) for b in (first - 1, last)]
        else:
            data = node.call_data("balanceOf(address)", ["address"], [DONATION_ADDRESS])
            read = [
                int(node.rpc("eth_call", {"to": coins[asset], "data": data}, hex(b)), 16) for b in (first - 1, last)
            ]
        kept = uncredited.get(asset, 0)
        left = read[0] + kept - read[1]
        assets.append(
            {
                "asset": asset,
                "opening": str(read[0]),
                "closing": str(read[1]),
                "credited": "0",
                "donations": 0,
                "unexplained": "0",
                "uncredited": str(kept),
                "left": str(left),
            }
        )
    nonce = [str(int(node.rpc("eth_getTransactionCount", DONATION_ADDRESS, hex(b)), 16)) for b in (first - 1, last)]
    return {
        **unproven_range(node, first, last),
        "status": "proven",
        "reason": "",
        "nonce": {"opening": nonce[0], "closing": nonce[1]},
        "assets": assets,
    }


def test_a_donors_cctp_mint_relayed_by_the_sale_is_the_donors(node):
    """Relaying a CCTP message is open to anyone holding its public attestation, the sale's address included: a
    donor burns 50 USDC naming the donation address, the sale claims it from the address itself, and books the
    mint as its own money (uncredited). The verifier took "a mint in a transaction the address signed" for the
    address's own and said "matches" (exit 0); the burn message names the depositor, whoever relayed it."""
    coin, donor = node.coins["usdc"], ACCOUNTS[2]
    node.set_code(V1_TRANSMITTER, transmitter_stand_in(coin))
    node.mine(1)
    first = node.head() + 1
    burn = (0).to_bytes(4, "big") + encode(
        ["address", "address", "uint256", "address"], [coin, DONATION_ADDRESS, 50 * USDC, donor]
    )
    mint = node.call_data("mint(address,uint256)", ["address", "uint256"], [DONATION_ADDRESS, 50 * USDC])
    sender = bytes(12) + bytes.fromhex(V1_TOKEN_MESSENGER[2:])  # Base's TokenMessenger sent the burn
    message = encode(["uint32", "bytes32", "bytes"], [6, sender, burn]).hex()
    relayed = node.send({"from": DONATION_ADDRESS, "to": V1_TRANSMITTER, "data": mint + message, "gas": hex(300_000)})
    assert node.receipt(relayed)["status"] == "0x1"
    node.mine(3)
    coins = {"usdc": coin}
    page = proof_page(
        assets=[{"asset": "eth", "contract": None, "decimals": 18}, {"asset": "usdc", "contract": coin, "decimals": 6}],
        ranges=[proven_range(node, first, node.finalized(), coins, {"usdc": 50 * USDC})],
    )

    with serve(page) as site:
        run = check(site, node)

    assert run.returncode == 1, run.stdout + run.stderr
    assert f"transaction {relayed} paid the address {50 * USDC} raw units of usdc in block" in run.stdout
    assert f"from {donor} (log " in run.stdout


def test_a_figure_left_null_does_not_stop_the_check(node):
    """`uncredited` may be null ("unknown"), the other figures given: the site's arithmetic took it as a number
    and raised TypeError, so a range hiding a 3 ETH donation ended in "could not check" (exit 4), never naming
    the donation. The arithmetic needs every figure; without one it is left out and the payments still sorted."""
    first = node.head() + 1
    hidden = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, 3 * ETHER)
    node.mine(3)
    found = proven_range(node, first, node.finalized(), {}, {"eth": 3 * ETHER})
    found["assets"][0]["uncredited"] = None

    with serve(proof_page(ranges=[found])) as site:
        run = check(site, node)

    assert run.returncode == 1, run.stdout + run.stderr
    assert f"transaction {hidden} paid the address {3 * ETHER} wei" in run.stdout


def test_a_payment_the_proof_leaves_out_at_its_start_or_end_is_named_by_your_transaction(node):
    """The ranges may start after a payment (the site saying its proof starts later) or stop before it: nothing
    inside them is false, and "matches" is all a donor saw. `--tx` names your payment: one before the first range
    does not match, one after the last is "not in the proof yet" (exit 3). A site starting its ranges after the
    first block it names itself does not match either."""
    early = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, 3 * ETHER)
    first = node.head() + 1
    node.mine(3)
    late = node.send_eth(ACCOUNTS[2], DONATION_ADDRESS, 2 * ETHER)
    last = node.head() - 1
    node.mine(3)
    page = proof_page(first_block=first, ranges=[unproven_range(node, first, last)])

    with serve(page) as site:
        silent = check(site, node)
        left_out = check(site, node, "1", "--tx", early)
        not_yet = check(site, node, "1", "--tx", late)
    page["chains"][0]["first_block"] = first - 1
    with serve(page) as site:
        said_earlier = check(site, node)

    assert silent.returncode == 0, silent.stdout + silent.stderr
    assert left_out.returncode == 1, left_out.stdout + left_out.stderr
    assert left_out.stdout.splitlines()[-1] == (
        f"does not match: your transaction {early} (block {first - 1}) lies before block {first}, where the site's "
        "proof starts: it leaves your payment out"
    )
    assert not_yet.returncode == 3, not_yet.stdout + not_yet.stderr
    assert f"your transaction {late} (block {last + 1}) lies after the last range" in not_yet.stdout
    assert said_earlier.returncode == 1, said_earlier.stdout + said_earlier.stderr
    assert said_earlier.stdout.splitlines()[-1].startswith(f"does not match: blocks {first - 1}..{first - 1}: no range")


def test_a_donors_coin_the_sale_pulled_itself_is_named_when_the_donor_names_the_transaction(node):
    """The crawler's rule makes value in a transaction the address signed its own money (a swap, a refund). A sale
    that pulls a donor's coin itself (transferFrom on an allowance, EIP-2612 permit, EIP-3009
    receiveWithAuthorization: a 'gasless donation') books it so and matches. The donor who names the transaction
    is told, and it does not match."""
    coin, donor = node.coins["usdc"], ACCOUNTS[2]
    node.mint(coin, donor, 40 * USDC)
    node.approve(coin, donor, DONATION_ADDRESS, 40 * USDC)
    first = node.head() + 1
    pulled = node.transfer_from(coin, DONATION_ADDRESS, donor, DONATION_ADDRESS, 40 * USDC)
    node.mine(3)
    page = proof_page(
        assets=[{"asset": "eth", "contract": None, "decimals": 18}, {"asset": "usdc", "contract": coin, "decimals": 6}],
        ranges=[proven_range(node, first, node.finalized(), {"usdc": coin}, {"usdc": 40 * USDC})],
    )

    with serve(page) as site:
        silent = check(site, node)
        named = check(site, node, "1", "--tx", pulled)

    assert silent.returncode == 0, silent.stdout + silent.stderr
    assert named.returncode == 1, named.stdout + named.stderr
    assert named.stdout.splitlines()[-1] == (
        f"does not match: your transaction: transaction {pulled} paid the address {40 * USDC} raw units of usdc in "
        f"block {int(node.receipt(pulled)['blockNumber'], 16)} from {donor} (log 0), and the site books it as the "
        "address's own money by the crawler's rules, not credited"
    )


def test_what_the_site_writes_cannot_write_the_verifiers_lines(node):
    """A range's reason (or a chain's or an asset's name) is the site's text, printed as it came: a new line and a
    terminal escape wrote a 'matches:' line of its own and hid everything after it (ESC[8m, concealed), so a
    donor's terminal said "matches" above a "does not match" it no longer showed."""
    first = node.head() + 1
    node.mine(2)
    middle = node.head()
    hidden = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, 3 * ETHER)
    node.mine(3)
    forged = unproven_range(node, first, middle)
    forged["reason"] = "checked\nmatches: 2 range(s), blocks 1..99, 0 donation(s) (40 calls to your node)\x1b[8m"
    page = proof_page(ranges=[forged, unproven_range(node, middle + 1, node.finalized())])

    with serve(page) as site:
        run = check(site, node)

    assert run.returncode == 1, run.stdout + run.stderr
    assert "\x1b" not in run.stdout
    assert not any(line.startswith("matches:") for line in run.stdout.splitlines())
    assert f"transaction {hidden} paid the address" in run.stdout.splitlines()[-1]


def test_one_block_holds_one_unexplained_inflow_per_asset(node):
    """The sale records one unexplained inflow per block and asset (a unique key), so its status is the status of
    everything unexplained there. A site listing two could split one block's: a 3 ETH donation (not on the list)
    beside 4 ETH a contract of the sale's self-destructed to the address, as an open inflow of 4 (covering the
    donation) and a dismissed one of 3 (the donor's, closed as "not a donation" in the sale's books): matched."""
    first = node.head() + 1
    bomb = "0x" + "5b" * 20
    node.set_code(bomb, "0x73" + DONATION_ADDRESS[2:] + "ff")  # SELFDESTRUCT to the address, for anyone
    node.set_balance(bomb, 4 * ETHER)
    node.set_automine(False)
    donation = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, 3 * ETHER)
    node.send({"from": ACCOUNTS[3], "to": bomb, "gas": hex(100_000)})
    node.mine(1)
    node.set_automine(True)
    block = int(node.wait_receipt(donation)["blockNumber"], 16)
    node.mine(3)
    found = unproven_range(node, first, node.finalized())
    found["assets"][0]["unexplained"] = str(7 * ETHER)
    found["inflows"] = [
        {"block_number": block, "asset": "eth", "amount_raw": str(4 * ETHER), "status": "open"},
        {"block_number": block, "asset": "eth", "amount_raw": str(3 * ETHER), "status": "dismissed"},
    ]

    with serve(proof_page(ranges=[found])) as site:
        run = check(site, node)

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stdout.splitlines()[-1].endswith(f"the site lists 2 unexplained inflows of eth in block {block}")
