"""The campaign row is locked last in a finalized block's write, and only to price and credit (issue 37).

Every chain's finalized blocks with donations credit the one campaign (`donation_stats`: tiers, cap and pause
across chains), so that row is the chains' one shared lock. A block's transaction writes its donation rows,
cursor and proof first and takes the campaign row last. Seen from other database sessions, as an operator's
`psql` would: while a session holds the campaign row, both chains' crawlers (threads, each its own session)
have written their blocks and wait only to credit; once it is let go, the blocks are credited one after the
other with the tier the confirmed total gives at each one's turn. And the old-unconfirmed judge, which locks
the campaign row and then the rows it confirms, never deadlocks against a block that holds those rows and
waits for the campaign row.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

import psycopg2
import pytest
from django.conf import settings as django_settings
from django.db import connection

from crawlers.models import FINALIZED, LATEST
from crawlers.runs.crawl import crawl
from donations.judging import donations_confirm
from donations.models import Donation, DonationStats, UserData
from donations.services import DonationOutcome
from donations.webhook_models import WebhookEvent
from dws_project.config_values import SaleTier
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER
from tests.crawlers.conftest import ETH_USD, ROLLUP
from tests.webhook_receiver import registered_endpoint

# Committed data: the crawlers run on threads with database sessions of their own.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("two_chains", "eth_prices")]

# 1 ETH = 2000 USD = 2,000,000 tokens in tier 1 (0.001), 1,000,000 in tier 2 (0.002) from 3M tokens on.
SMALL_SALE = (SaleTier(3_000_000, Decimal("0.001")), SaleTier(50_000_000, Decimal("0.002")))
WAIT = 60.0  # seconds for a crawler to reach a lock: reading two blocks, on a loaded machine


def session(*, autocommit: bool = False) -> Any:
    db = django_settings.DATABASES["default"]
    conn = psycopg2.connect(
        dbname=db["NAME"], user=db["USER"], password=db["PASSWORD"], host=db["HOST"], port=db["PORT"] or 5432
    )
    conn.autocommit = autocommit
    return conn


@contextmanager
def on_thread(work: Callable[[], Any]) -> Iterator[dict[str, Any]]:
    """Run `work` on a thread (its own database session); yields its outcome, filled once it ends."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = work()
        except BaseException as exc:  # noqa: BLE001 - reported to the test below
            outcome["error"] = exc
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield outcome
    finally:
        thread.join(WAIT)
        assert not thread.is_alive(), "a crawler thread never finished"


def waiting(probe: Any, count: int, *, on: int | None = None, table: str | None = None) -> list[int]:
    """The sessions waiting on a lock, once there are `count` of them: on a lock session `on` holds, or (`table`)
    in a statement naming that table (a second waiter for one row queues behind the first, not its holder)."""
    ends = time.monotonic() + WAIT
    while True:
        with probe.cursor() as cursor:
            cursor.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' "
                "AND (%(on)s::int IS NULL OR %(on)s = ANY(pg_blocking_pids(pid))) "
                "AND (%(table)s::text IS NULL OR query LIKE '%%' || %(table)s || '%%')",
                {"on": on, "table": table},
            )
            pids = sorted(row[0] for row in cursor.fetchall())
        if len(pids) >= count or time.monotonic() > ends:
            assert len(pids) == count, f"{len(pids)} session(s) waiting, not {count}"
            return pids
        time.sleep(0.05)


def tables_written(probe: Any, pid: int) -> set[str]:
    with probe.cursor() as cursor:
        cursor.execute(
            "SELECT relation::regclass::text FROM pg_locks "
            "WHERE pid = %s AND locktype = 'relation' AND mode = 'RowExclusiveLock' AND granted",
            [pid],
        )
        return {row[0] for row in cursor.fetchall()}


def cursor_row_locked(probe: Any, chain: str) -> bool:
    with probe.cursor() as cursor:
        try:
            cursor.execute(
                "SELECT value FROM last_block WHERE chain = %s AND label = %s FOR UPDATE NOWAIT", [chain, FINALIZED]
            )
        except psycopg2.errors.LockNotAvailable:
            return True
    return False


def finalize(*nodes) -> None:
    for node in nodes:
        node.mine(2)  # `finalized` trails each head by two blocks


def test_two_chains_write_their_blocks_while_the_campaign_row_is_held_and_are_credited_in_commit_order(
    node, rollup, settings
):
    DonationStats.objects.get_or_create()  # an earlier transactional test's flush removes the migration's row
    settings.CONFIG = dataclasses.replace(settings.CONFIG, sale_tiers=SMALL_SALE)
    registered_endpoint("https://hooks.example/dws", ["donation.seen"], secret="s" * 32)
    for chain in ("eth", ROLLUP):
        assert crawl(FINALIZED, chain=chain).held is None  # the cursors exist; nothing to credit yet
    # Each 2 ETH: 4,000,000 tokens in tier 1, past its 3,000,000 limit; 2,000,000 in tier 2. Never seen at the
    # head: the finalized crawler records and prices each, from the confirmed total at the time.
    sent = {"eth": node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, 2 * ETHER)}
    sent[ROLLUP] = rollup.send_eth(ACCOUNTS[2], DONATION_ADDRESS, 2 * ETHER)
    finalize(node, rollup)

    holder, probe = session(), session(autocommit=True)
    try:
        with holder.cursor() as held:
            held.execute("SELECT tokens FROM donation_stats FOR UPDATE")  # an operator's psql holding the row
        with (
            on_thread(lambda: crawl(FINALIZED, chain="eth")) as on_eth,
            on_thread(lambda: crawl(FINALIZED, chain=ROLLUP)) as on_rollup,
        ):
            try:
                crawlers = waiting(probe, 2, table="donation_stats")
                # Both blocks are written, each chain's cursor moved over it: only the crediting waits.
                assert {chain: cursor_row_locked(probe, chain) for chain in sent} == {"eth": True, ROLLUP: True}
                for pid in crawlers:
                    written = tables_written(probe, pid)
                    assert {"donation", "last_block", "proof_range"} <= written, written
                    assert "user_data" not in written  # the donors' totals move under the campaign lock
            finally:
                holder.rollback()
    finally:
        holder.close()
        probe.close()
    for outcome in (on_eth, on_rollup):
        assert "error" not in outcome, outcome.get("error")
        assert outcome["result"].held is None, outcome["result"].held

    # Credited one after the other: each priced at the tier of the confirmed total at its turn.
    rows = sorted(Donation.objects.filter(tx_hash__in=sent.values()), key=lambda d: d.confirmed_at)
    assert [d.status for d in rows] == ["confirmed", "confirmed"]
    running, expected = 0, []
    for row in rows:
        price = next(tier.token_price for tier in SMALL_SALE if running < tier.token_limit)
        tokens = math.ceil(row.amount * ETH_USD / price)
        expected.append((row.chain, price, tokens))
        running += tokens
    assert [(d.chain, d.price, d.tokens) for d in rows] == expected
    assert [price for _, price, _ in expected] == [Decimal("0.001"), Decimal("0.002")]
    assert DonationStats.objects.get().tokens == 6_000_000
    assert sorted(UserData.objects.values_list("tokens", flat=True)) == sorted(t for _, _, t in expected)
    # each announced once, with the price it was credited at
    seen = [e.payload["data"] for e in WebhookEvent.objects.filter(event="donation.seen")]
    assert sorted((d["tx_hash"], Decimal(d["price"]), d["tokens"]) for d in seen) == sorted(
        (d.tx_hash, d.price, str(d.tokens)) for d in rows
    )


def test_the_judge_confirming_a_row_while_its_finalized_block_is_written_waits_and_never_deadlocks(node):
    """The old-unconfirmed judge takes the campaign row before the rows it confirms; a finalized block takes
    its rows first and the campaign row last. The block is held (its cursor row held by another session)
    after it locked the row and before the campaign row, and the judge comes for the same row then."""
    DonationStats.objects.get_or_create()
    assert crawl(FINALIZED, chain="eth").held is None
    tx = node.send_eth(ACCOUNTS[3], DONATION_ADDRESS, ETHER)
    assert crawl(LATEST, chain="eth").held is None
    row = Donation.objects.get(tx_hash=tx)
    finalize(node)
    tiers = django_settings.CONFIG.sale_tiers

    holder, probe = session(), session(autocommit=True)
    try:
        with holder.cursor() as held:
            held.execute("SELECT value FROM last_block WHERE chain = 'eth' AND label = %s FOR UPDATE", [FINALIZED])
        with on_thread(lambda: crawl(FINALIZED, chain="eth")) as finalized:
            try:
                (block_writer,) = waiting(probe, 1, on=holder.get_backend_pid())
                assert row_locked(probe, row.id)  # the block holds the row it confirms
                with on_thread(lambda: donations_confirm(donation_ids=[row.id], tiers=tiers)) as judged:
                    waiting(probe, 1, on=block_writer)  # the judge waits for the block
                    holder.rollback()
            finally:
                holder.rollback()
    finally:
        holder.close()
        probe.close()
    assert "error" not in finalized, finalized.get("error")
    assert finalized["result"].held is None, finalized["result"].held
    assert "error" not in judged, judged.get("error")
    assert judged["result"] == {row.id: DonationOutcome.ALREADY_CONFIRMED}
    row.refresh_from_db()
    assert (row.status, row.tokens) == ("confirmed", 2_000_000)
    assert DonationStats.objects.get().tokens == 2_000_000


def row_locked(probe: Any, donation_id: int) -> bool:
    with probe.cursor() as cursor:
        try:
            cursor.execute("SELECT id FROM donation WHERE id = %s FOR UPDATE NOWAIT", [donation_id])
        except psycopg2.errors.LockNotAvailable:
            return True
    return False
