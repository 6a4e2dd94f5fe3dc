"""A pending donation whose block was replaced says so (issue 36): once the finalized crawler has passed its
block and found another block there, the row stays unconfirmed (seed 000: it may be mined again; the judge
waits 24 hours) but says its block is no longer on the chain, on /user/data and the page, and leaves the
campaign's pending figures; mined again, it is recorded where it now is and the mark goes."""

from __future__ import annotations

import pytest

from crawlers.models import FINALIZED, LATEST
from crawlers.runs.crawl import crawl
from donations.models import Donation
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
    crawl(LATEST)
    row.refresh_from_db()
    assert row.block_replaced_at is None
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
