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
import requests

from crawlers.proof_report import MAX_RANGES
from crawlers.record.proof_ranges import proof_range_record
from crawlers.scan.ledger import SpanLedger, UnprovenSpan
from donations.export import confirmed_donation_lines, proof_csv_refresh
from donations.finalized import finalized_block_record
from donations.judging import donations_confirm
from donations.models import Donation, DonationStatus
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


def many_ranges(count: int, *, first: int = 1000, span: int = 10) -> list[int]:
    """`count` adjacent proven ranges from block `first`, `span` blocks each, 1 ETH arriving in each, written
    at once as the proof's writer leaves them; a confirmed donation in every third. Returns their first
    blocks."""
    from django.utils import timezone

    from crawlers.models import ProofRange, ProofRangeAsset, ProofStatus

    firsts = [first + i * span for i in range(count)]
    rows = ProofRange.objects.bulk_create(
        ProofRange(
            chain="eth",
            ordinal=i,
            first_block=start,
            last_block=start + span - 1,
            last_block_hash=block_hash(start + span - 1),
            status=ProofStatus.PROVEN,
            nonce_opening=3,
            nonce_closing=3,
            checked_at=timezone.now(),
        )
        for i, start in enumerate(firsts)
    )
    ProofRangeAsset.objects.bulk_create(
        ProofRangeAsset(proof_range=row, asset=asset, opening=opening, closing=opening + received, left=0)
        for i, row in enumerate(rows)
        for asset, opening, received in (("eth", 5 * ETH + i * ETH, ETH), ("usdt", 0, 0), ("usdc", 0, 0))
    )
    for start in firsts[::3]:
        donation(start + 1, "0.5", tx="0x" + format(start, "064x"))
    return firsts


def test_the_cached_proof_is_the_computed_one_for_every_window_and_follows_every_change(api, settings):
    from crawlers.models import InflowStatus, UnexplainedInflow
    from crawlers.proof_report import PAGE_RANGES, cached_proof_report, proof_report

    firsts = many_ranges(2 * PAGE_RANGES + 13)
    last = firsts[-1] + 9

    def same_everywhere() -> None:
        windows = [(None, 1), (None, 150), (0, 500), (last + 1, 5)] + [
            (block, n) for block in (firsts[0] + 5, firsts[99], firsts[150]) for n in (1, 101)
        ]
        for from_block, limit in windows:
            cached = cached_proof_report(settings.CONFIG, seconds=3600, from_block=from_block, limit=limit)
            assert cached == proof_report(settings.CONFIG, from_block=from_block, limit=limit), (from_block, limit)

    same_everywhere()
    donation(firsts[120] + 4, "2", tx="0x" + "e" * 64)  # confirmed later in an old range: its page follows
    UnexplainedInflow.objects.create(
        block_number=firsts[5] + 2, block_hash=block_hash(firsts[5] + 2), asset="eth", amount_raw=ETH, amount=1
    )
    same_everywhere()
    UnexplainedInflow.objects.update(status=InflowStatus.DISMISSED)
    publish(last + 1, last + 30, received=ETH)  # a new range on the last page
    same_everywhere()
    cached = api.get("/proof.json", {"from_block": firsts[150], "limit": 3})
    assert cached["Cache-Control"] == "public, max-age=10"


@pytest.mark.django_db(transaction=True)
def test_a_client_spreading_from_block_makes_no_cache_entry_per_value_and_sees_the_computed_proof():
    """Issue 35, finding 1: the cache was keyed by the raw `from_block` and `limit`, so every new value built
    the report again and left another copy in Redis. Through gunicorn: one entry per page and chain."""
    from django.conf import settings

    from crawlers.proof_report import PAGE_RANGES, proof_report
    from tests.web_server import gunicorn

    firsts = many_ranges(2 * PAGE_RANGES + 5)
    redis = get_redis()
    for key in redis.scan_iter("*proof-report*"):
        redis.delete(key)
    env = {"TEST_PROOF_CACHE_SECONDS": "3600", "DWS_TRUSTED_PROXIES": "127.0.0.1/32"}
    with gunicorn(workers=2, env=env) as base:
        session = requests.Session()
        asked = []
        for n, block in enumerate(range(firsts[0], firsts[-1] + 10, 69)):  # 30 values over every page
            limit = 1 + n * 37 % MAX_RANGES
            answer = session.get(
                f"{base}/proof.json",
                params={"from_block": block, "limit": limit},
                headers={"X-Forwarded-For": f"198.51.100.{n}"},  # each within its own budget
                timeout=30,
            )
            assert answer.status_code == 200
            asked.append(((block, limit), answer.json()))
    keys = list(redis.scan_iter("*proof-report*"))

    assert len(asked) == 30
    assert len(keys) <= 3 + 1  # three pages and the chain's summary, whatever was asked
    for (block, limit), answer in asked[::8]:
        assert answer == proof_report(settings.CONFIG, from_block=block, limit=limit)


def test_without_redis_a_window_still_costs_only_the_pages_it_spans(api, settings):
    """Redis cut (the cache's port refuses connections): every request built its whole window again, up to 500
    ranges (~0.2 s each), so a client within its proof budget -- counted in every web process alone while
    Redis is away -- kept the workers busy. Each process keeps the pages itself meanwhile."""
    import socket

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from crawlers.proof_report import proof_report

    firsts = many_ranges(150)
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    settings.CACHES = {"default": {**settings.CACHES["default"], "LOCATION": f"redis://127.0.0.1:{port}/0"}}
    settings.PROOF_CACHE_SECONDS = 3600
    assert api.get("/proof.json", {"from_block": firsts[3], "limit": 140}).status_code == 200

    windows = [(firsts[n], 100 + n) for n in (4, 9, 30)]
    with CaptureQueriesContext(connection) as later:
        answers = [api.get("/proof.json", {"from_block": block, "limit": limit}) for block, limit in windows]

    for (block, limit), answer in zip(windows, answers, strict=True):
        assert answer.json() == proof_report(settings.CONFIG, from_block=block, limit=limit)
    built = [q["sql"] for q in later.captured_queries if "proof_range_asset" in q["sql"]]
    assert built == []  # no range was rendered again: only the pages' versions were read


def test_an_inflow_credited_in_part_is_published_with_what_remains(api, settings):
    """The operator's "credit this transaction" confirms the donation (one transaction) and then lowers the
    inflow to what remains, still open (another): no count the cached versions read moved with the amount, so
    a page (and the chain's summary) read between the two kept the old amount, its range's figures no longer
    closing, for up to PROOF_CACHE_SECONDS (an hour)."""
    from crawlers.models import UnexplainedInflow
    from crawlers.proof_report import proof_report
    from crawlers.record.inflows import inflow_mark_credited

    settings.PROOF_CACHE_SECONDS = 3600
    publish(100, 110, received=3 * ETH)
    inflow = UnexplainedInflow.objects.create(
        block_number=105, block_hash=block_hash(105), asset="eth", amount_raw=3 * ETH, amount=3
    )
    donation(105, "1")  # the donation the operator's re-examination found and confirmed
    api.get("/proof.json")  # read between the two transactions

    inflow_mark_credited(
        settings.CONFIG.first_chain,
        inflow_id=inflow.pk,
        tx_hash="0x" + "c" * 64,
        operator="op",
        credited_raw=ETH,
        tolerance=0,
    )

    published = api.get("/proof.json").json()
    assert published == proof_report(settings.CONFIG)
    assert published["chains"][0]["open_inflows"][0]["amount_raw"] == str(2 * ETH)


def test_reads_of_the_proof_have_a_budget_of_their_own(api, settings):
    settings.PROOF_RATE_BURST = 3
    settings.PROOF_RATE_PER_SECOND = 0.01

    answers = [api.get("/proof.json", {"from_block": n}) for n in range(3)] + [api.get("/proof")]

    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    assert answers[-1].json() == {"code": 1006, "message": "too many requests"}
    assert int(answers[-1]["Retry-After"]) >= 1
    assert api.get("/donation/data").status_code == 200  # the rest of the API is not held to it


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
    proof_csv_refresh()  # as the task does

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
    proof_csv_refresh()
    first = api.get("/proof/donations.csv")
    b"".join(first.streaming_content)

    same = api.get("/proof/donations.csv", HTTP_IF_NONE_MATCH=first["ETag"])
    since = api.get("/proof/donations.csv", HTTP_IF_MODIFIED_SINCE=first["Last-Modified"])
    donation(201, "2")
    proof_csv_refresh()
    changed = api.get("/proof/donations.csv", HTTP_IF_NONE_MATCH=first["ETag"])

    assert first["Cache-Control"] == "public, max-age=60"
    assert (same.status_code, since.status_code) == (304, 304)
    assert same["ETag"] == first["ETag"]
    assert changed.status_code == 200
    assert changed["ETag"] != first["ETag"]


@pytest.fixture
def downloads(settings) -> None:
    """These tests are about the file, not its download budget."""
    settings.PROOF_CSV_RATE_BURST = 100


def stored_file(api) -> bytes:
    return b"".join(api.get("/proof/donations.csv").streaming_content)


def records_file() -> bytes:
    return "".join(confirmed_donation_lines()).encode()


def test_the_csv_is_built_by_the_task_once_per_change_only_where_it_changed(api, settings, downloads):
    """Issue 35, finding 2: the file was rendered from the whole table for every request. It is stored in
    parts, and a change (noted by the crediting code in its transaction) rebuilds only the part holding it."""
    for i, block in enumerate((5, 5, 6, 7, 7, 9, 12, 13)):
        donation(block, "1", tx="0x" + format(i, "064x"))
    assert proof_csv_refresh(part_rows=3) == 3  # blocks 5-6, 7-9, 12-13: a block is never split
    assert stored_file(api) == records_file()
    assert proof_csv_refresh(part_rows=3) == 0  # nothing changed: nothing built

    late = donation(8, "2", status=DonationStatus.UNCONFIRMED, tx="0x" + "f" * 64)
    donations_confirm(donation_ids=[late.id], tiers=settings.CONFIG.sale_tiers)  # the judge confirms it
    assert late.tx_hash.encode() not in stored_file(api)  # served as stored: the request built nothing
    assert proof_csv_refresh(part_rows=3) == 1  # the part of blocks 7-9 only
    assert stored_file(api) == records_file()
    assert late.tx_hash.encode() in stored_file(api)

    tiers = settings.CONFIG.sale_tiers
    finalized_block_record(chain="eth", sightings=[], reverted_tx_hashes=[late.tx_hash], tiers=tiers)  # it fails
    donation(40, "3", tx="0x" + "d" * 64)  # and one past the last part
    assert proof_csv_refresh(part_rows=3) == 2
    assert stored_file(api) == records_file()
    assert late.tx_hash.encode() not in stored_file(api)


def test_a_chain_the_first_build_did_not_reach_is_built_by_the_next_run(api, downloads):
    """Rows confirmed before the file was stored have no change noted, and the first build goes a chain at a
    time, each in its own transaction. When it stopped after eth (its time limit on a large table, a worker
    restarted), the next runs saw that parts existed, looked for chains only among the parts and the noted
    changes, and the rollup's donations were missing from the file for good (until one more was confirmed
    there). Here the rollup's row is written after eth's build: the state such a first build leaves."""
    donation(5, "1", tx="0x" + "1" * 64)
    assert proof_csv_refresh() == 1  # eth's parts
    rollup = make_donation(DONOR, amount="2", chain="rollup", tx="0x" + "2" * 64)

    proof_csv_refresh()

    assert rollup.tx_hash.encode() in stored_file(api)
    assert stored_file(api) == records_file()


def test_a_part_that_disagrees_with_the_confirmed_donations_is_built_again(api, downloads):
    """A confirmation that noted no change (a worker still on the code before the stored file, during a rolling
    deploy; a row an operator confirmed by SQL) left its part without the row for good: nothing compared the
    stored parts with the database. Each run now checks every current part's row count against the confirmed
    donations in its blocks and builds a part that differs again."""
    for i, block in enumerate((5, 6, 7, 8)):
        donation(block, "1", tx="0x" + format(i, "064x"))
    proof_csv_refresh(part_rows=2)
    unnoted = donation(6, "3", tx="0x" + "e" * 64)  # confirmed into a built part, no change noted
    failed = Donation.objects.get(tx_hash="0x" + format(3, "064x"))
    Donation.objects.filter(pk=failed.pk).update(status=DonationStatus.FAILED)  # and one failed, unnoted

    proof_csv_refresh(part_rows=2)

    assert unnoted.tx_hash.encode() in stored_file(api)
    assert failed.tx_hash.encode() not in stored_file(api)
    assert stored_file(api) == records_file()


def test_the_csv_is_served_in_byte_ranges(api, downloads):
    for i, block in enumerate((5, 6, 7, 8)):
        donation(block, "1", tx="0x" + format(i, "064x"))
    proof_csv_refresh(part_rows=2)
    whole = stored_file(api)
    etag = api.get("/proof/donations.csv")["ETag"]

    middle = api.get("/proof/donations.csv", HTTP_RANGE="bytes=100-399")
    tail = api.get("/proof/donations.csv", HTTP_RANGE="bytes=-50")
    stale = api.get("/proof/donations.csv", HTTP_RANGE="bytes=100-399", HTTP_IF_RANGE='"another"')
    beyond = api.get("/proof/donations.csv", HTTP_RANGE=f"bytes={len(whole)}-")

    assert (middle.status_code, middle["Content-Range"]) == (206, f"bytes 100-399/{len(whole)}")
    assert b"".join(middle.streaming_content) == whole[100:400]
    assert middle["Content-Length"] == "300"
    assert b"".join(tail.streaming_content) == whole[-50:]
    assert stale.status_code == 200  # the file changed since the client's part: the whole file
    assert b"".join(stale.streaming_content) == whole
    assert (beyond.status_code, beyond["Content-Range"]) == (416, f"bytes */{len(whole)}")
    assert api.get("/proof/donations.csv", HTTP_RANGE="bytes=0-9", HTTP_IF_RANGE=etag).status_code == 206


def test_a_byte_range_of_any_length_of_digits_is_answered_as_the_rfc_says(api, downloads):
    """Python's int() refuses more than 4,300 digits: such a Range header was a 500 (and a traceback in the
    log) for anyone who sent one."""
    donation(5, "1")
    proof_csv_refresh()
    whole = stored_file(api)
    huge = "9" * 5000

    to_the_end = api.get("/proof/donations.csv", HTTP_RANGE=f"bytes=0-{huge}")
    past_the_end = api.get("/proof/donations.csv", HTTP_RANGE=f"bytes={huge}-")
    every_byte = api.get("/proof/donations.csv", HTTP_RANGE=f"bytes=-{huge}")

    assert (to_the_end.status_code, to_the_end["Content-Range"]) == (206, f"bytes 0-{len(whole) - 1}/{len(whole)}")
    assert b"".join(to_the_end.streaming_content) == whole
    assert (past_the_end.status_code, past_the_end["Content-Range"]) == (416, f"bytes */{len(whole)}")
    assert b"".join(every_byte.streaming_content) == whole


@pytest.mark.django_db(transaction=True)
def test_through_gunicorn_a_download_costs_the_worker_no_rendering():
    """The file a web worker serves is the stored one: a donation confirmed since the last build is not in
    it (the task adds it), whatever the request; ranges and revalidation over HTTP."""
    from tests.web_server import gunicorn

    for i, block in enumerate((5, 6, 7)):
        donation(block, "1", tx="0x" + format(i, "064x"))
    proof_csv_refresh()
    stored = records_file()
    donation(6, "2", tx="0x" + "e" * 64)  # written without the writer's change record: never rendered by a request
    with gunicorn(workers=1) as base:
        session = requests.Session()
        whole = session.get(f"{base}/proof/donations.csv", timeout=30)
        part = session.get(f"{base}/proof/donations.csv", headers={"Range": "bytes=10-59"}, timeout=30)
        again = session.get(f"{base}/proof/donations.csv", headers={"If-None-Match": whole.headers["ETag"]}, timeout=30)

    assert whole.content == stored
    assert whole.headers["Accept-Ranges"] == "bytes"
    assert whole.headers["Last-Modified"]
    assert (part.status_code, part.content) == (206, stored[10:60])
    assert again.status_code == 304


def test_downloads_of_the_csv_have_a_budget_of_their_own(api, settings):
    proof_csv_refresh()
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
