"""A pending donation whose block was replaced says so (issue 36): once the finalized crawler has passed its
block and found another block there, the row stays unconfirmed (seed 000: it may be mined again; the judge
waits 24 hours) but says its block is no longer on the chain, on /user/data and the page, and leaves the
campaign's pending figures; mined again, it is recorded where it now is and the mark goes."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, connections, transaction

from crawlers.models import FINALIZED, LATEST
from crawlers.runs.crawl import crawl
from donations.models import Donation, DonationStats
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]


def test_a_pending_donation_whose_block_was_replaced_says_so_and_leaves_the_pending_figures(node, client):
    donor = ACCOUNTS[1]
    tx = node.send_eth(donor, DONATION_ADDRESS, ETHER)
    signed = node.rpc("eth_getRawTransactionByHash", tx)
    crawl(LATEST)
    assert client.get("/donation/data").json()["pending_donations"] == 1

    node.reorg(1, [])  # its block is replaced by one without it; the transaction is not mined again (yet)
    node.mine(3)  # ... and the replacement is finalized
    crawl(FINALIZED)

    row = Donation.objects.get(tx_hash=tx)
    assert row.status == "unconfirmed"  # seed 000: it may still be mined again
    assert row.block_replaced_at is not None
    (shown,) = client.get(f"/user/data/{donor}").json()["donations"]
    assert (shown["status"], shown["block_replaced"]) == ("unconfirmed", True)
    campaign = client.get("/donation/data").json()
    assert (campaign["pending_donations"], campaign["pending_total"]) == (0, "0.00")

    # mined again: recorded in its new block, the mark gone, pending again until confirmed
    node.rpc("eth_sendRawTransaction", signed)
    seen = crawl(LATEST)
    row.refresh_from_db()
    assert row.block_replaced_at is None, (seen.held, seen.cursor, row.block_number, node.receipt(tx)["blockNumber"])
    assert row.block_hash == node.receipt(tx)["blockHash"]
    assert client.get("/donation/data").json()["pending_donations"] == 1
    node.mine(3)
    crawl(FINALIZED)
    row.refresh_from_db()
    assert (row.status, row.block_replaced_at) == ("confirmed", None)


def test_a_pending_donation_in_a_finalized_block_is_never_marked_replaced(node, client):
    tx = node.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER)
    crawl(LATEST)
    node.mine(3)
    crawl(FINALIZED)
    row = Donation.objects.get(tx_hash=tx)
    assert (row.status, row.block_replaced_at) == ("confirmed", None)
    assert client.get(f"/user/data/{ACCOUNTS[2]}").json()["donations"][0]["block_replaced"] is False


@pytest.mark.django_db(transaction=True)
def test_a_row_the_latest_crawler_moves_to_its_new_block_while_the_finalized_crawler_marks_is_not_marked(node, client):
    """The two crawlers run side by side (each under its own lock). The finalized crawler reads the rows whose
    block it found replaced, then marks them; a row the latest crawler moves to the transaction's new block in
    between is on the chain, and must not be marked (nor leave the pending figures)."""
    DonationStats.objects.get_or_create()  # a transactional test's flush takes the migrated row with it
    donor = ACCOUNTS[3]
    tx = node.send_eth(donor, DONATION_ADDRESS, ETHER)
    signed = node.rpc("eth_getRawTransactionByHash", tx)
    crawl(LATEST)
    node.reorg(1, [])  # its block is replaced by one without it
    node.mine(3)  # ... and the replacement is finalized
    node.rpc("eth_sendRawTransaction", signed)  # mined again, in a block the tag does not cover yet
    new_block = node.receipt(tx)["blockNumber"]
    assert node.finalized() < int(new_block, 16)

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (finalized_pid,) = cursor.fetchone()
    locked, waited = threading.Event(), threading.Event()
    failures: list[BaseException] = []

    def latest_crawler_moves_the_row() -> None:
        """The latest crawler's run, its row lock taken first so the finalized crawler's mark waits on it."""
        try:
            with transaction.atomic():
                Donation.objects.select_for_update().get(tx_hash=tx)
                locked.set()
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline and not waited.is_set():
                    with connection.cursor() as cursor:
                        cursor.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [finalized_pid])
                        row = cursor.fetchone()
                    if row and row[0] == "Lock":
                        waited.set()
                    time.sleep(0.05)
                crawl(LATEST)  # notices the re-org and records the transfer where it is now
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            failures.append(exc)
            locked.set()
        finally:
            connections.close_all()

    latest = threading.Thread(target=latest_crawler_moves_the_row)
    latest.start()
    assert locked.wait(30)
    crawl(FINALIZED)  # passes the replaced block; its mark waits for the latest crawler's transaction
    latest.join(60)
    assert not failures, failures
    assert waited.is_set(), "the finalized crawler never waited on the row the latest crawler held"

    row = Donation.objects.get(tx_hash=tx)
    assert (row.status, row.block_number) == ("unconfirmed", int(new_block, 16))
    assert row.block_replaced_at is None  # its block is on the chain
    (shown,) = client.get(f"/user/data/{donor}").json()["donations"]
    assert shown["block_replaced"] is False
    assert client.get("/donation/data").json()["pending_donations"] == 1
