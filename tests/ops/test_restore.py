"""A restore from backup, rehearsed: dump the database, crawl on, restore the dump (the operator's worst
day: the database goes back in time), crawl again. Every donation is recorded once, the cursors reach the
tips, the totals equal the confirmed rows, and no webhook an integrator already received is sent again with
different content (a replayed event carries the same id and the same data)."""

from __future__ import annotations

import json
import subprocess
from collections import defaultdict

import pytest
from django.db import connection

from crawlers.models import FINALIZED, LATEST, LastBlock
from crawlers.runs.crawl import crawl
from donations.models import Donation, DonationStats, DonationStatus
from donations.webhook_delivery import webhooks_drain
from dws_project.redis_client import get_redis
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER
from tests.invariants import assert_ledger_invariants
from tests.webhook_receiver import registered_endpoint, webhook_receiver

pytestmark = [pytest.mark.django_db(transaction=True)]

EVENTS = ["donation.seen", "donation.confirmed", "donation.failed", "donation.moved"]
USDT = 10**6


def libpq_args() -> list[str]:
    db = connection.settings_dict
    return ["-h", str(db["HOST"] or "127.0.0.1"), "-p", str(db["PORT"] or 5432), "-U", str(db["USER"])]


def crawl_to_the_tips(node) -> None:
    for _ in range(5):  # runs are capped; a few are enough here
        latest, final = crawl(LATEST), crawl(FINALIZED)
        assert latest.held is None, latest.held
        assert final.held is None, final.held
        if latest.cursor == node.head() and final.cursor == node.finalized():
            return


def cursors() -> dict[str, int]:
    return dict(LastBlock.objects.values_list("label", "value"))


def test_a_restored_backup_is_crawled_back_to_the_same_records(node, crawl_config, eth_prices, tmp_path):
    DonationStats.objects.get_or_create()  # an earlier transactional test's flush removes the migration's row
    dump = tmp_path / "dws.dump"
    name = connection.settings_dict["NAME"]
    usdt = node.coins["usdt"]
    with webhook_receiver() as receiver:
        registered_endpoint(receiver.url, EVENTS, secret="whsec-restore-0123456789")
        before_backup = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
        node.mine(10)
        crawl_to_the_tips(node)
        webhooks_drain()

        subprocess.run(["pg_dump", *libpq_args(), "-Fc", "-f", str(dump), name], check=True, timeout=120)

        # an hour of work the backup does not have
        after_backup = node.send_eth(ACCOUNTS[2], DONATION_ADDRESS, 2 * ETHER)
        node.mint(usdt, ACCOUNTS[3], 250 * USDT)
        coin = node.transfer_token(usdt, ACCOUNTS[3], DONATION_ADDRESS, 250 * USDT)
        node.mine(10)
        crawl_to_the_tips(node)
        webhooks_drain()
        lost_cursors = cursors()

        connection.close()
        subprocess.run(
            ["pg_restore", *libpq_args(), "--clean", "--if-exists", "--single-transaction", "-d", name, str(dump)],
            check=True,
            timeout=120,
        )
        get_redis().flushdb()  # Redis came back empty too: nothing in it is a record
        assert cursors()[FINALIZED] < lost_cursors[FINALIZED]
        assert not Donation.objects.filter(tx_hash__in=[after_backup, coin]).exists()

        node.mine(3)
        crawl_to_the_tips(node)
        webhooks_drain()

    assert cursors() == {LATEST: node.head(), FINALIZED: node.finalized()}
    for tx in (before_backup, after_backup, coin):
        assert Donation.objects.filter(tx_hash=tx, status=DonationStatus.CONFIRMED).count() == 1, tx
    assert Donation.objects.count() == 3
    assert_ledger_invariants()
    stats = DonationStats.objects.get()
    assert stats.total == sum(d.usd_amount for d in Donation.objects.all())

    received: dict[str, list[dict]] = defaultdict(list)
    for request in receiver.accepted():
        body = json.loads(request.body)
        received[body["id"]].append(body)
    assert {b[0]["data"]["tx_hash"] for b in received.values()} == {before_backup, after_backup, coin}
    replayed = {key: bodies for key, bodies in received.items() if len(bodies) > 1}
    assert replayed, "the restore lost the outbox rows of the lost hour: their events are sent again"
    for key, bodies in replayed.items():
        assert all(b["event"] == bodies[0]["event"] and b["data"] == bodies[0]["data"] for b in bodies), key
