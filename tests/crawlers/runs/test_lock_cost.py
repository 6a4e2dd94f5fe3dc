"""What the PostgreSQL run lock costs (dws_project/locks.py): a finalized run takes and releases its
session lock (2 statements) and checks it again inside each write transaction (1 statement per block
written, plus one for the closing cursor move over quiet blocks); a block with donations also takes its
chain's donation-rows lock (1 statement, before its rows: donations/finalized.py) -- counted on a real
run, not read off the code (docs/BENCHMARKS.md)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from crawlers.models import FINALIZED
from crawlers.runs.crawl import crawl
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]


def advisory(queries: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in queries.captured_queries if "advisory" in q["sql"]]


@pytest.mark.parametrize("donation_blocks", [1, 3])
def test_a_finalized_run_pays_two_lock_statements_plus_one_per_written_block(node, donation_blocks):
    for _ in range(donation_blocks):
        node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)  # one block each
        node.mine(3)  # quiet blocks between: they are not written, only passed by the cursor
    node.mine(2)

    with CaptureQueriesContext(connection) as queries:
        result = crawl(FINALIZED)

    assert result.held is None
    assert result.confirmed == donation_blocks
    statements = advisory(queries)
    session = [s for s in statements if "xact" not in s]
    per_block = [s for s in statements if "pg_try_advisory_xact_lock" in s]
    donation_rows = [s for s in statements if "pg_advisory_xact_lock" in s]
    assert len(session) == 2  # pg_try_advisory_lock at the start, pg_advisory_unlock at the end
    assert len(per_block) == donation_blocks + 1  # each written block, and the closing cursor move
    assert len(donation_rows) == donation_blocks  # each block with donations, before its rows
    assert len(statements) == len(session) + len(per_block) + len(donation_rows)
