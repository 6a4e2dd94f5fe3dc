"""A finalized block's transaction aborted by PostgreSQL while it waits for the campaign row (issue 37).

The block holds its donation rows and has moved its cursor when it asks for the campaign row. An operator's
`psql` session holding the campaign row and then asking for one of those rows closes a cycle; PostgreSQL
breaks it by aborting the block's transaction (a deadlock). The whole block is rolled back, the run stops,
and the next run writes it again: credited once, its cursor and proof as if nothing had happened.
"""

from __future__ import annotations

import psycopg2
import pytest
from django.db import OperationalError

from crawlers.models import FINALIZED, LATEST, LastBlock, ProofRange
from crawlers.runs.crawl import crawl
from donations.ledger import ledger_discrepancies
from donations.models import Donation, DonationStats, UserData
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER
from tests.crawlers.runs.test_campaign_lock import finalize, on_thread, session, waiting

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("crawl_config", "eth_prices")]


def test_a_block_aborted_by_a_deadlock_while_it_waits_to_credit_is_written_again_whole(node):
    DonationStats.objects.get_or_create()
    assert crawl(FINALIZED, chain="eth").held is None
    tx = node.send_eth(ACCOUNTS[3], DONATION_ADDRESS, ETHER)
    assert crawl(LATEST, chain="eth").held is None
    row = Donation.objects.get(tx_hash=tx)
    cursor_before = LastBlock.objects.get(chain="eth", label=FINALIZED).value
    finalize(node)

    operator, probe = session(), session(autocommit=True)
    try:
        with operator.cursor() as sql:
            sql.execute("SET deadlock_timeout = '20s'")  # the crawler's session (1 s) is the one PostgreSQL aborts
            sql.execute("SELECT tokens FROM donation_stats FOR UPDATE")
        with on_thread(lambda: crawl(FINALIZED, chain="eth")) as aborted:
            waiting(probe, 1, on=operator.get_backend_pid())  # the block, written, waits to credit
            with operator.cursor() as sql:
                sql.execute("SELECT id FROM donation WHERE id = %s FOR UPDATE", [row.id])  # granted once it aborts
        operator.rollback()
    finally:
        operator.close()
        probe.close()
    error = aborted.get("error")
    assert isinstance(error, OperationalError)  # the run stops there: "database unavailable", held
    assert isinstance(error.__cause__, psycopg2.errors.DeadlockDetected)
    # Nothing of the block stands: the row as the latest crawler left it, the cursor where it was.
    row.refresh_from_db()
    assert row.status == "unconfirmed"
    assert LastBlock.objects.get(chain="eth", label=FINALIZED).value == cursor_before
    proven_through = ProofRange.objects.filter(chain="eth").order_by("-last_block").values_list("last_block").first()

    result = crawl(FINALIZED, chain="eth")  # the next run
    assert result.held is None
    row.refresh_from_db()
    assert (row.status, row.tokens) == ("confirmed", 2_000_000)
    assert DonationStats.objects.get().tokens == 2_000_000
    assert UserData.objects.get(address=row.address).tokens == 2_000_000
    assert LastBlock.objects.get(chain="eth", label=FINALIZED).value == node.finalized()
    assert ProofRange.objects.filter(chain="eth").order_by("-last_block").values_list("last_block").first() == (
        node.finalized(),
    )
    assert proven_through is None or proven_through[0] == cursor_before
    assert ledger_discrepancies() == []
