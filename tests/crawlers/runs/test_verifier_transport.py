"""A hostile site cannot hang the public verifier (deploy/verify_proof.py) nor crash it: every answer has one
deadline (--timeout, the donation CSV ten times it) however slowly its bytes come, a size cap, a nesting
limit checked before decoding, pages that must move forward within the chain's head, and every failure
to read ends in exit 4 with one line and no traceback.

The bound each test states is the subprocess's own time-out (BOUND seconds, with --timeout 1): a verifier
that followed a drip or endless pages would still be running then. The node is the session anvil."""

from __future__ import annotations

import json
import subprocess
import tracemalloc
from http.server import BaseHTTPRequestHandler

import pytest

from tests.chain import DONATION_ADDRESS
from tests.hostile_site import ScriptedSite, run_verifier, verifier_module

BOUND = 60  # seconds: far above what any of these takes with --timeout 1, far below "never"
CSV_HEADER = (
    b"chain,tx_hash,log_index,trace_address,block_number,block_hash,donor,asset,amount,usd_amount,tokens,"
    b"token_price,eth_price,confirmed_at\n"
)


def proof_page(**changes: object) -> dict:
    chain = {
        "chain": "eth",
        "chain_id": 31337,
        "donation_address": DONATION_ADDRESS,
        "assets": [{"asset": "eth", "contract": None, "decimals": 18}],
        "last_checked_at": None,
        "first_block": None,
        "proven_through": None,
        "unproven": [],
        "open_inflows_total": 0,
        "open_inflows": [],
        "ranges": [],
        "next_from_block": None,
    }
    chain.update(changes)
    return {"chains": [chain]}


def check(site: ScriptedSite, node, timeout: str = "1", *extra: str) -> subprocess.CompletedProcess:
    try:
        return run_verifier(site.url, node.url, "--timeout", timeout, *extra, timeout=BOUND)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the verifier was still running after {BOUND} s")


def assert_unreadable(run: subprocess.CompletedProcess, *words: str) -> None:
    assert run.returncode == 4, run.stdout + run.stderr
    assert "Traceback" not in run.stderr, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("could not check: "), lines[0]
    for word in words:
        assert word in lines[0], (word, lines[0])


def test_an_answer_that_never_comes_ends_at_the_deadline(node):
    with ScriptedSite(lambda h: site.hang(h)) as site:
        run = check(site, node)

    assert_unreadable(run, "/proof.json", "no full answer within 1 s")


def test_an_answer_dripped_a_byte_at_a_time_ends_at_its_one_deadline(node):
    """Each byte comes well inside a per-read time-out: only a deadline for the whole answer ends it."""
    with ScriptedSite(lambda h: site.drip(h)) as site:
        run = check(site, node)

    assert_unreadable(run, "/proof.json", "no full answer within 1 s")


def test_the_donation_csv_dripped_ends_at_its_own_deadline(node):
    def answer(handler: BaseHTTPRequestHandler) -> None:
        if handler.path.startswith("/proof.json"):
            site.body(handler, json.dumps(proof_page()).encode())
        else:
            handler.send_response(200)
            handler.end_headers()
            handler.wfile.write(CSV_HEADER)
            while not site.stop.wait(0.3):
                handler.wfile.write(b"e")
                handler.wfile.flush()

    with ScriptedSite(answer) as site:
        run = check(site, node, timeout="0.3")

    assert_unreadable(run, "/proof/donations.csv", "no full answer within 3 s")


def test_an_endless_answer_stops_at_the_size_cap(node):
    with ScriptedSite(lambda h: site.endless(h)) as site:
        run = check(site, node)

    assert_unreadable(run, "/proof.json", "larger than 64 MiB")


def test_json_nested_past_the_limit_is_refused_before_decoding(node):
    deep = b'{"chains": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with ScriptedSite(lambda h: site.body(h, deep)) as site:
        run = check(site, node)

    assert_unreadable(run, "/proof.json", "nested deeper than")


@pytest.mark.parametrize("retry_after", ["nan", "inf", "-5", "soon"])
def test_a_429_whose_retry_after_is_no_time_is_unreadable(node, retry_after):
    with ScriptedSite(lambda h: site.body(h, b"{}", 429, Retry_After=retry_after)) as site:
        run = check(site, node)

    assert_unreadable(run, "/proof.json", "HTTP 429")


def test_nan_in_an_answer_is_no_number(node):
    body = json.dumps(proof_page(first_block=float("nan"))).encode()  # json writes NaN, which JSON has not
    with ScriptedSite(lambda h: site.body(h, body)) as site:
        run = check(site, node)

    assert_unreadable(run, "/proof.json", "did not answer JSON (NaN is no number)")


def one_block_ranges(first: int, count: int) -> list[dict]:
    figures = {"opening": "0", "closing": "0", "credited": "0", "donations": 0, "unexplained": "0"}
    return [
        {
            "first_block": n,
            "last_block": n,
            "last_block_hash": "0x" + "00" * 32,
            "status": "proven",
            "reason": "",
            "checked_at": "2026-12-01T00:00:00Z",
            "nonce": {"opening": "0", "closing": "0"},
            "assets": [{"asset": "eth", **figures, "uncredited": "0", "left": "0"}],
            "inflows": [],
            "pending": [],
        }
        for n in range(first, first + count)
    ]


@pytest.mark.parametrize(
    ("count", "next_from_block"),
    [
        pytest.param(500, lambda asked: asked, id="the same page again"),
        pytest.param(500, lambda asked: asked + 500 if asked == 0 else asked - 1, id="backwards"),
        pytest.param(0, lambda asked: asked + 1, id="a page short of its limit that says there is more"),
        pytest.param(500, lambda asked: 10**12, id="beyond the chain head"),
    ],
)
def test_pages_that_do_not_move_forward_within_the_head_are_refused(node, count, next_from_block):
    def answer(handler: BaseHTTPRequestHandler) -> None:
        asked = int(handler.path.split("from_block=")[1].split("&")[0])
        page = proof_page(ranges=one_block_ranges(asked, count), next_from_block=next_from_block(asked))
        site.body(handler, json.dumps(page).encode())

    with ScriptedSite(answer) as site:
        run = check(site, node)

    assert_unreadable(run, "/proof.json", "next_from_block")
    assert len(site.requests) <= 2


@pytest.mark.parametrize(
    "lie",
    [
        pytest.param({"ranges": "all of them"}, id="ranges not a list"),
        pytest.param({"ranges": [{"first_block": "1"}]}, id="a range without its fields"),
        pytest.param({"donation_address": 7}, id="an address that is a number"),
        pytest.param({"assets": [{"asset": "usdc", "contract": "0x12", "decimals": 6}]}, id="a contract too short"),
        pytest.param({"ranges": [{**one_block_ranges(1, 1)[0], "nonce": {}}]}, id="a nonce without its edges"),
        pytest.param({"chain_id": None}, id="no chain id to hold your node to"),
    ],
)
def test_an_answer_not_in_the_documented_shape_is_unreadable(node, lie):
    body = json.dumps(proof_page(**lie)).encode()
    with ScriptedSite(lambda h: site.body(h, body)) as site:
        run = check(site, node)

    assert_unreadable(run, "/proof.json", "documented shape")


def test_a_donation_list_not_in_the_documented_shape_is_unreadable(node):
    row = b"eth,0xnot-a-hash,,,12,0x" + b"ab" * 32 + b",0x" + b"cd" * 20 + b",eth,1e5,1,1,1,1,\n"

    def answer(handler: BaseHTTPRequestHandler) -> None:
        if handler.path.startswith("/proof.json"):
            site.body(handler, json.dumps(proof_page()).encode())
        else:
            site.body(handler, CSV_HEADER + row)

    with ScriptedSite(answer) as site:
        run = check(site, node)

    assert_unreadable(run, "/proof/donations.csv", "row 1", "documented shape")


def test_a_string_that_never_closes_is_refused_at_once(node):
    """Escaped quotes and no closing one: the nesting count outside strings tried every quote against the rest
    of the answer (32 KB took 7 s, this 1 MB hours), after the answer's deadline, on one core, for ever."""
    body = b'{"chains": ["' + b'\\"' * 500_000
    with ScriptedSite(lambda h: site.body(h, body)) as site:
        run = check(site, node)

    assert_unreadable(run, "/proof.json", "did not answer JSON")


def test_a_range_per_block_is_checked_as_it_comes_not_all_held_first(node):
    """A site may publish one range per block up to the head: the verifier read every page before checking any
    (about 2.3 KB a range: a mainnet's 23 million blocks are 50 GB). Now it holds two pages at a time and checks
    their ranges as they come, so the first one that does not match ends it before the rest are read; here the
    site answers 404 from the third page on, which the verifier reached (exit 4) before."""
    node.mine(1_100)

    def answer(handler: BaseHTTPRequestHandler) -> None:
        if not handler.path.startswith("/proof.json"):
            site.body(handler, CSV_HEADER)
            return
        asked = int(handler.path.split("from_block=")[1].split("&")[0])
        if asked >= 1_000:
            site.body(handler, b"{}", 404)
            return
        page = proof_page(ranges=one_block_ranges(asked + 1, 500), next_from_block=asked + 501)
        site.body(handler, json.dumps(page).encode())

    with ScriptedSite(answer) as site:
        run = check(site, node)

    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stdout.splitlines()[-1].startswith("does not match: blocks 1..1: block 1 is 0x")
    assert [p.split("?")[0] for p in site.requests] == ["/proof.json", "/proof/donations.csv", "/proof.json"]


def test_the_donation_csv_costs_the_verifier_little_more_than_its_size():
    """The CSV may be up to 1 GiB: decoded into one str and a StringIO of it, it took five times that beside the
    body (about 7 GiB at the cap). Read in-process here, its memory traced."""
    verifier = verifier_module("verify_proof_csv_memory")
    row = b"rollup,0x" + b"ab" * 32 + b",,,12,0x" + b"cd" * 32 + b",0x" + b"ef" * 20 + b",eth,1.5,3000,30,0.1,2000,\n"
    body = CSV_HEADER + row * 30_000  # 6 MB of another chain's donations
    with ScriptedSite(lambda h: site.body(h, body)) as site:
        tracemalloc.start()
        try:
            assert verifier.read_donations(site.url, "eth", 30) == []
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    assert peak < 3 * len(body), f"{peak / len(body):.1f} times the file's size"
