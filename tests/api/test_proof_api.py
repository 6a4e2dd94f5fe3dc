"""The public proof's reads: /proof.json (paged, numbered errors, cached), /proof (the page), the donation
CSV (confirmed rows only, streamed, its own download budget, revalidated by ETag) and the verifier."""

from __future__ import annotations

import csv
import hashlib
import io
import re
from datetime import UTC
from decimal import Decimal
from pathlib import Path

import pytest

from crawlers.record.proof_ranges import proof_range_record
from crawlers.scan.ledger import SpanLedger, UnprovenSpan
from donations.export import confirmed_donation_lines
from donations.models import DonationStatus
from dws_project.redis_client import get_redis
from tests.api.support import make_donation

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
DONOR = "0xded1fe6b3f61c8f1d874bb86f086d10ffc3f0154"
ETH = 10**18


def block_hash(number: int) -> str:
    return "0x" + format(number, "064x")


def publish(first: int, last: int, *, eth: int = 5 * ETH, received: int = 0, left: int = 0) -> None:
    """A span the proof checked, recorded as the finalized crawler records it (its last block at once)."""
    opening = {"eth": eth, "nonce": 3, "usdt": 0, "usdc": 0}
    ledger = SpanLedger(first, opening)
    if received or left:
        ledger.changes[last] = {"eth": received - left}
        ledger.outflows[last] = {"eth": left}
    proof_range_record(chain="eth", span=ledger, through=last, through_hash=block_hash(last))


def donation(block: int, amount: str, status: str = DonationStatus.CONFIRMED, **extra):
    row = make_donation(DONOR, amount=amount, status=status, **extra)
    row.block_number, row.block_hash = block, block_hash(block)
    row.save()
    return row


def test_before_any_check_the_proof_says_so_for_the_configured_chain(api, settings):
    chain = api.get("/proof.json").json()["chains"][0]

    assert chain["chain"] == "eth"
    assert chain["donation_address"] == settings.CONFIG.first_chain.donation_address
    assert [a["asset"] for a in chain["assets"]] == ["eth", "usdt", "usdc"]
    assert chain["ranges"] == []
    assert chain["proven_through"] is None
    assert chain["last_checked_at"] is None
    assert chain["next_from_block"] is None


def test_a_range_shows_its_credited_donations_and_the_rest_so_that_it_closes(api):
    publish(100, 110, received=2 * ETH + 5, left=ETH // 2)
    donation(105, "1.5")
    donation(110, "0.5")
    donation(110, "7", status=DonationStatus.UNCONFIRMED)  # not credited: not in the CSV either
    donation(111, "9")  # outside the range

    (found,) = api.get("/proof.json").json()["chains"][0]["ranges"]

    eth = found["assets"][0]
    assert (found["first_block"], found["last_block"], found["status"]) == (100, 110, "proven")
    assert eth == {
        "asset": "eth",
        "opening": str(5 * ETH),
        "closing": str(5 * ETH + 2 * ETH + 5 - ETH // 2),
        "credited": str(2 * ETH),
        "donations": 2,
        "unexplained": "0",
        "uncredited": "5",
        "left": str(ETH // 2),
    }
    assert found["nonce"] == {"opening": "3", "closing": "3"}


def test_ranges_come_a_page_at_a_time_and_the_pages_cover_them_all(api):
    for first in range(100, 600, 100):
        publish(first, first + 99, received=ETH)  # each moved value: five rows

    seen, query = [], {"limit": 2}
    while True:
        chain = api.get("/proof.json", query).json()["chains"][0]
        assert len(chain["ranges"]) <= 2
        seen += [(r["first_block"], r["last_block"]) for r in chain["ranges"]]
        if chain["next_from_block"] is None:
            break
        query["from_block"] = chain["next_from_block"]

    assert seen == [(f, f + 99) for f in range(100, 600, 100)]
    assert [r["first_block"] for r in api.get("/proof.json", {"from_block": 250}).json()["chains"][0]["ranges"]] == [
        200,
        300,
        400,
        500,
    ]


def test_a_stretch_in_which_nothing_moved_joins_the_range_before_it(api):
    publish(100, 199, received=ETH)
    ledger = SpanLedger(200, {"eth": 6 * ETH, "nonce": 3, "usdt": 0, "usdc": 0})
    proof_range_record(chain="eth", span=ledger, through=2000, through_hash=block_hash(2000))
    unproven = UnprovenSpan(2001, "the provider keeps no historical state for these blocks")
    proof_range_record(chain="eth", span=unproven, through=2050, through_hash=block_hash(2050))
    proof_range_record(
        chain="eth", span=UnprovenSpan(2051, unproven.reason), through=2090, through_hash=block_hash(2090)
    )

    chain = api.get("/proof.json").json()["chains"][0]

    assert [(r["first_block"], r["last_block"], r["status"]) for r in chain["ranges"]] == [
        (100, 2000, "proven"),
        (2001, 2090, "unproven"),
    ]
    assert chain["ranges"][1]["assets"][0]["opening"] is None
    assert chain["unproven"] == [{"first_block": 2001, "last_block": 2090, "reason": unproven.reason}]
    assert chain["proven_through"] == 2000


@pytest.mark.parametrize(
    "query",
    [
        {"from_block": "-1"},
        {"from_block": "ten"},
        {"limit": "0"},
        {"limit": "501"},
        {"chain": "base"},
        {"from_block": "9" * 30},
    ],
)
def test_a_bad_window_gets_the_numbered_error(api, query):
    answer = api.get("/proof.json", query)

    assert answer.status_code == 400
    assert answer.json() == {"code": 1001, "message": "invalid request"}


def test_one_computed_answer_is_served_to_every_caller_for_a_few_seconds(api, settings):
    settings.PROOF_CACHE_SECONDS = 30
    for key in get_redis().scan_iter("*proof-report*"):
        get_redis().delete(key)
    publish(100, 110, received=ETH)
    first = api.get("/proof.json")
    publish(111, 120, received=ETH)

    again = api.get("/proof.json")

    assert first["Cache-Control"] == "public, max-age=10"
    assert again.json() == first.json()  # from the shared cache, not recomputed
    settings.PROOF_CACHE_SECONDS = 0
    assert len(api.get("/proof.json").json()["chains"][0]["ranges"]) == 2


def test_the_page_shows_the_ranges_in_the_assets_own_units(api):
    publish(100, 110, received=2 * ETH + 5, left=ETH // 2)
    donation(105, "2")

    page = api.get("/proof")

    assert page.status_code == 200
    assert page["Content-Security-Policy"].startswith("default-src 'self'")
    text = page.content.decode()
    assert "100 \u2013 110" in text
    assert "<td>ETH</td><td>5</td><td>6.500000000000000005</td><td>2 (1)</td><td>0.5</td>" in text
    assert "python3 verify_proof.py --site http://testserver --rpc" in text
    served = (ROOT / "deploy" / "verify_proof.py").read_bytes()
    assert f"<code>{hashlib.sha256(served).hexdigest()}</code>" in text
    assert api.get("/proof", {"from_block": "x"}).json() == {"code": 1001, "message": "invalid request"}


@pytest.mark.parametrize("value", ["\u00b2", "1\u00b9", "\u0663", " 7", "9" * 19])
def test_the_page_answers_a_block_number_that_is_not_ascii_digits_with_the_numbered_error(api, value):
    # '²' is a digit to str.isdigit and not to int(): it was a 500.
    answer = api.get("/proof", {"from_block": value})

    assert answer.status_code == 400
    assert answer.json() == {"code": 1001, "message": "invalid request"}


def test_the_csv_lists_every_confirmed_donation_in_block_order_and_nothing_else(api):
    late = donation(300, "0.25", tx="0x" + "c" * 64)
    early = donation(200, "1.23456", tx="0x" + "a" * 64)
    coin = donation(250, "25.5", asset="usdt", log_index=4, tx="0x" + "b" * 64)
    donation(260, "3", status=DonationStatus.UNCONFIRMED)
    donation(270, "4", status=DonationStatus.FAILED)

    answer = api.get("/proof/donations.csv")

    assert answer.status_code == 200
    assert answer.streaming
    assert answer["Content-Type"] == "text/csv; charset=utf-8"
    rows = list(csv.DictReader(io.StringIO(b"".join(answer.streaming_content).decode())))
    assert [r["tx_hash"] for r in rows] == [early.tx_hash, coin.tx_hash, late.tx_hash]
    assert rows[0] == {
        "chain": "eth",
        "tx_hash": early.tx_hash,
        "log_index": "",
        "trace_address": "",
        "block_number": "200",
        "block_hash": block_hash(200),
        "donor": DONOR,
        "asset": "eth",
        "amount": "1.2345600000",
        "usd_amount": "1981.41",
        "tokens": "1981414",
        "token_price": "0.00100",
        "eth_price": rows[0]["eth_price"],
        "confirmed_at": early.modified_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    assert rows[1]["log_index"] == "4"
    assert Decimal(rows[1]["amount"]) == Decimal("25.5")


def test_the_csv_is_read_a_chunk_at_a_time_without_losing_or_repeating_a_row():
    made = [donation(block, "1") for block in (5, 5, 5, 6, 7, 7, 9)]

    lines = list(confirmed_donation_lines(chunk=2))

    assert [line.split(",")[1] for line in lines[1:]] == [r.tx_hash for r in made]


def test_a_client_that_already_has_the_csv_is_told_it_has_not_changed(api):
    donation(200, "1")
    first = api.get("/proof/donations.csv")
    b"".join(first.streaming_content)

    same = api.get("/proof/donations.csv", HTTP_IF_NONE_MATCH=first["ETag"])
    donation(201, "2")
    changed = api.get("/proof/donations.csv", HTTP_IF_NONE_MATCH=first["ETag"])

    assert first["Cache-Control"] == "public, max-age=60"
    assert same.status_code == 304
    assert changed.status_code == 200


def test_downloads_of_the_csv_have_a_budget_of_their_own(api, settings):
    settings.PROOF_CSV_RATE_BURST = 3
    settings.PROOF_CSV_RATE_PER_SECOND = 0.01

    answers = [api.get("/proof/donations.csv") for _ in range(4)]

    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    assert answers[-1].json() == {"code": 1006, "message": "too many requests"}
    assert int(answers[-1]["Retry-After"]) >= 1
    assert api.get("/proof.json").status_code == 200  # the JSON is not held to the download budget


def test_the_verifier_served_is_the_one_in_deploy(api):
    answer = api.get("/proof/verify.py")

    assert answer.status_code == 200
    assert answer["Content-Type"] == "text/x-python; charset=utf-8"
    assert answer.content == (ROOT / "deploy" / "verify_proof.py").read_bytes()
    published = api.get("/proof.json").json()["verifier"]
    assert published["path"] == "/proof/verify.py"
    assert published["sha256"] == hashlib.sha256(answer.content).hexdigest()
    assert re.search(rf'^__version__ = "{re.escape(published["version"])}"$', answer.content.decode(), re.MULTILINE)


def test_the_schema_documents_the_proof(api):
    spec = api.get("/openapi.json").json()

    operation = spec["paths"]["/proof.json"]["get"]
    assert {p["name"] for p in operation["parameters"]} == {"chain", "from_block", "limit"}
    asset = spec["components"]["schemas"]["ProofAsset"]["properties"]
    assert {asset[f]["type"] for f in ("opening", "closing", "credited", "left", "uncredited")} == {"string"}


def test_the_donation_page_links_to_the_proof(api):
    page = api.get("/").content.decode()

    assert '<a href="/proof">Proof that every donation is counted</a>' in page


def test_open_inflows_are_listed_and_every_inflow_not_credited_stays_in_its_range(api):
    from crawlers.models import InflowStatus, UnexplainedInflow

    publish(100, 110, received=3 * ETH)
    for block, status in ((102, InflowStatus.OPEN), (103, InflowStatus.DISMISSED), (104, InflowStatus.CREDITED)):
        UnexplainedInflow.objects.create(
            block_number=block, block_hash=block_hash(block), asset="eth", amount_raw=ETH, amount=1, status=status
        )
    donation(104, "1")  # what the operator credited for the inflow of block 104

    chain = api.get("/proof.json").json()["chains"][0]

    assert chain["open_inflows_total"] == 1
    assert [(i["block_number"], i["amount_raw"], i["amount"]) for i in chain["open_inflows"]] == [(102, str(ETH), "1")]
    eth = chain["ranges"][0]["assets"][0]
    assert (eth["credited"], eth["unexplained"], eth["uncredited"]) == (str(ETH), str(2 * ETH), "0")
    page = api.get("/proof").content.decode()
    assert "<tr><td>102</td><td>ETH</td><td>1</td><td>" in page


def test_an_unproven_range_keeps_the_balances_the_provider_did_give_at_its_edges(api):
    """The ETH change across a stretch a provider without history could not prove stays on record."""
    reason = "the provider keeps no historical state for these blocks"
    span = UnprovenSpan(
        300,
        reason,
        opening={"eth": 6 * ETH, "nonce": 3, "usdt": 0, "usdc": 0},
        end=450,
        closing={"eth": 9 * ETH, "nonce": 4, "usdt": 5, "usdc": 0},
    )
    proof_range_record(chain="eth", span=span, through=400, through_hash=block_hash(400))
    midway = api.get("/proof.json").json()["chains"][0]["ranges"][0]
    proof_range_record(chain="eth", span=span, through=450, through_hash=block_hash(450))

    (found,) = api.get("/proof.json").json()["chains"][0]["ranges"]

    assert (found["first_block"], found["last_block"], found["status"], found["reason"]) == (
        300,
        450,
        "unproven",
        reason,
    )
    assert midway["assets"][0]["closing"] is None  # the provider gave no balance at block 400
    assert found["nonce"] == {"opening": "3", "closing": "4"}
    eth, usdt = found["assets"][0], found["assets"][1]
    assert (eth["opening"], eth["closing"], eth["left"], eth["uncredited"]) == (str(6 * ETH), str(9 * ETH), None, None)
    assert (usdt["opening"], usdt["closing"]) == ("0", "5")
