"""GET /user/data/{address}: a donor's history and totals, as the page shows them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from eth_utils import to_checksum_address

from donations.models import Donation, DonationStatus, StakeStatus, UserData
from donations.refund_models import Refund
from tests.api.support import make_donation, refresh_user_data

pytestmark = pytest.mark.django_db

DONOR = "0xded1fe6b3f61c8f1d874bb86f086d10ffc3f0154"


def test_an_address_that_never_donated_gets_defaults_and_no_row_is_created(api):
    response = api.get(f"/user/data/{DONOR}")

    assert response.status_code == 200
    assert response.json() == {
        "donations": [],
        "user_data": {
            "total": "0",
            "tokens": "0",
            "staked": "0",
            "reward": "0",
            "status": "none",
            "unstake_completes_at": None,
            "ts": None,
        },
    }
    assert not UserData.objects.filter(address=DONOR).exists()


def test_a_donor_sees_donations_oldest_first_with_the_documented_scales(api):
    make_donation(
        DONOR,
        amount="0.987654",
        usd_amount="1586.90",
        tokens=1586905,
        block_time=datetime(2023, 10, 21, 7, 56, 12, tzinfo=UTC),
        tx="0x7ddb66c1be4ec06e0edd6c2f4ad8b878b2fb5b8075157f5881f0a7f35c5c7cb4",
    )
    make_donation(
        DONOR,
        amount="1.23456",
        usd_amount="1981.41",
        tokens=1981414,
        block_time=datetime(2023, 10, 21, 7, 38, 36, tzinfo=UTC),
        tx="0xf98c0fe5c1bf72cad294c5ba60ca5b62d3d519fe7cc71cc3cdfb064892fa90e2",
    )
    refresh_user_data(DONOR)

    body = api.get(f"/user/data/{DONOR}").json()

    # test_a_donation_carries_its_receipt; block_replaced: tests/crawlers/runs/test_block_replaced.py; the refund:
    # test_a_donation_confirmed_after_the_sale_closed_shows_its_refund
    receipt = ("chain", "block_number", "eth_price", "seen_at", "confirmed_at", "block_replaced", "refund")
    assert [{k: v for k, v in d.items() if k not in receipt} for d in body["donations"]] == [
        {
            "tx_hash": "0xf98c0fe5c1bf72cad294c5ba60ca5b62d3d519fe7cc71cc3cdfb064892fa90e2",
            "asset": "eth",
            "amount": "1.2345600000",
            "usd_amount": "1981.41",
            "price": "0.00100",
            "tokens": "1981414",
            "status": "confirmed",
            "ts": "2023-10-21T07:38:36Z",
        },
        {
            "tx_hash": "0x7ddb66c1be4ec06e0edd6c2f4ad8b878b2fb5b8075157f5881f0a7f35c5c7cb4",
            "asset": "eth",
            "amount": "0.9876540000",
            "usd_amount": "1586.90",
            "price": "0.00100",
            "tokens": "1586905",
            "status": "confirmed",
            "ts": "2023-10-21T07:56:12Z",
        },
    ]
    summary = body["user_data"]
    assert (summary["total"], summary["tokens"], summary["staked"], summary["reward"], summary["status"]) == (
        "3568.31",
        "3568319",
        "0",
        "0",
        "none",
    )
    assert summary["ts"].endswith("Z")
    assert "affiliate_code" not in summary


def test_a_donation_carries_its_receipt(api):
    """What the donor's receipt needs: the chain, the block, when the row was first recorded (seen) and
    confirmed, and the ETH price the tokens were computed with (null for a coin, and until confirmed)."""
    eth = make_donation(
        DONOR,
        eth_price="2000.12000000",
        confirmed_at=datetime(2023, 10, 21, 7, 52, 1, 250000, tzinfo=UTC),
        tx="0x" + "0e" * 32,
    )
    make_donation(DONOR, asset="usdc", amount="100", status=DonationStatus.UNCONFIRMED, tx="0x" + "0c" * 32)
    Donation.objects.filter(pk=eth.pk).update(created_at=datetime(2023, 10, 21, 7, 38, 50, 900000, tzinfo=UTC))

    first, second = api.get(f"/user/data/{DONOR}").json()["donations"]

    assert {k: first[k] for k in ("chain", "block_number", "eth_price", "seen_at", "confirmed_at")} == {
        "chain": "eth",
        "block_number": 1000,
        "eth_price": "2000.12000000",
        "seen_at": "2023-10-21T07:38:50Z",
        "confirmed_at": "2023-10-21T07:52:01Z",
    }
    assert (second["chain"], second["asset"]) == ("eth", "usdc")
    assert (second["eth_price"], second["confirmed_at"]) == (None, None)
    assert second["seen_at"].endswith("Z")


def test_tiny_amounts_are_plain_decimals_never_exponents(api):
    make_donation(DONOR, asset="usdc", amount="0.00000001", usd_amount="0.00", tokens=0)

    donation = api.get(f"/user/data/{DONOR}").json()["donations"][0]

    assert (donation["amount"], donation["usd_amount"], donation["tokens"]) == ("0.0000000100", "0.00", "0")


def test_unconfirmed_and_failed_donations_are_listed_but_not_counted(api):
    make_donation(DONOR, tokens=100, usd_amount="1.00")
    make_donation(DONOR, tokens=200, usd_amount="2.00", status=DonationStatus.UNCONFIRMED)
    make_donation(DONOR, tokens=300, usd_amount="3.00", status=DonationStatus.FAILED)
    refresh_user_data(DONOR)

    body = api.get(f"/user/data/{DONOR}").json()

    assert [d["status"] for d in body["donations"]] == ["confirmed", "unconfirmed", "failed"]
    assert (body["user_data"]["tokens"], body["user_data"]["total"]) == ("100", "1.00")


def test_a_checksummed_address_reads_the_same_donor(api):
    make_donation(DONOR)

    body = api.get(f"/user/data/{to_checksum_address(DONOR)}").json()

    assert len(body["donations"]) == 1


@pytest.mark.parametrize(
    "address",
    [
        "0x123",
        "ded1fe6b3f61c8f1d874bb86f086d10ffc3f0154",
        "0xzed1fe6b3f61c8f1d874bb86f086d10ffc3f0154",
        "0xDed1fe6b3f61c8f1d874bb86f086d10ffc3f0154",  # mixed case with a wrong checksum
        "0x" + "a" * 41,
    ],
)
def test_a_malformed_address_is_a_numbered_400(api, address):
    response = api.get(f"/user/data/{address}")

    assert response.status_code == 400
    assert response.json() == {"code": 1002, "message": "invalid address"}


class TestPagination:
    @pytest.fixture
    def history(self):
        start = datetime(2024, 1, 1, tzinfo=UTC)
        for i in range(120):
            make_donation(DONOR, tokens=i, block_time=start + timedelta(minutes=i))

    def tokens(self, api, query=""):
        response = api.get(f"/user/data/{DONOR}{query}")
        assert response.status_code == 200
        return [int(d["tokens"]) for d in response.json()["donations"]]

    def test_the_default_page_is_the_oldest_fifty(self, api, history):
        assert self.tokens(api) == list(range(50))

    def test_limit_is_capped_at_one_hundred(self, api, history):
        assert self.tokens(api, "?limit=100000") == list(range(100))

    def test_offset_selects_a_later_page(self, api, history):
        assert self.tokens(api, "?limit=20&offset=110") == list(range(110, 120))

    def test_a_page_past_the_end_is_an_empty_array(self, api, history):
        assert self.tokens(api, "?offset=500") == []

    @pytest.mark.parametrize("query", ["?limit=0", "?limit=-5", "?offset=-1", "?limit=ten", "?offset=1e3"])
    def test_an_invalid_page_is_a_numbered_400(self, api, history, query):
        response = api.get(f"/user/data/{DONOR}{query}")

        assert response.status_code == 400
        assert response.json() == {"code": 1001, "message": "invalid request"}


def test_an_unstaking_donor_sees_when_unstaking_completes(api):
    make_donation(DONOR, tokens=1000)
    refresh_user_data(DONOR)
    requested = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    UserData.objects.filter(address=DONOR).update(
        staked=400, status=StakeStatus.UNSTAKING, unstake_requested_at=requested
    )

    summary = api.get(f"/user/data/{DONOR}").json()["user_data"]

    assert (summary["status"], summary["staked"], summary["tokens"]) == ("unstaking", "400", "1000")
    assert summary["unstake_completes_at"] == "2026-01-08T12:00:00Z"


def test_the_answer_may_be_cached_for_a_few_seconds(api):
    response = api.get(f"/user/data/{DONOR}")

    assert response["Cache-Control"] == "public, max-age=5"


def test_a_poll_that_finds_nothing_new_costs_no_body(api):
    """Issue 36: the page polls a donor's data every second after a donation; an unchanged answer is a 304."""
    make_donation(DONOR, status="unconfirmed")
    first = api.get(f"/user/data/{DONOR}")
    etag = first["ETag"]

    again = api.get(f"/user/data/{DONOR}", HTTP_IF_NONE_MATCH=etag)
    assert (again.status_code, again.content) == (304, b"")

    Donation.objects.update(status=DonationStatus.CONFIRMED)
    changed = api.get(f"/user/data/{DONOR}", HTTP_IF_NONE_MATCH=etag)
    assert changed.status_code == 200
    assert changed.json()["donations"][0]["status"] == "confirmed"


def test_a_donation_confirmed_after_the_sale_closed_shows_its_refund(api):
    """The refund register's row for the donation: owed, then paid with the treasury's transaction."""
    capped = make_donation(DONOR, asset="usdt", amount="5", usd_amount="5.00", tokens=0, tx="0x" + "5c" * 32)
    make_donation(DONOR, tokens=100, usd_amount="1.00", tx="0x" + "5d" * 32)
    refund = Refund.objects.create(
        chain="eth",
        donor=DONOR,
        asset="usdt",
        contract="0x" + "11" * 20,
        decimals=6,
        amount=Decimal(5),
        reason="sale-closed",
        donation=capped,
        source_tx_hash=capped.tx_hash,
    )

    shown = [d["refund"] for d in api.get(f"/user/data/{DONOR}").json()["donations"]]
    assert shown == [{"status": "owed", "amount": "5", "tx_hash": None}, None]

    paying = "0x" + "9a" * 32
    Refund.objects.filter(pk=refund.pk).update(status="paid", paid_tx_hash=paying, paid_block_number=7)
    shown = [d["refund"] for d in api.get(f"/user/data/{DONOR}", HTTP_CACHE_CONTROL="no-cache").json()["donations"]]
    assert shown == [{"status": "paid", "amount": "5", "tx_hash": paying}, None]
