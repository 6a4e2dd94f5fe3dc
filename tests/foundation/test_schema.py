"""The database itself refuses rows that break the data model's rules."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.utils import DataError

from affiliates.models import WalletConnection
from crawlers.models import LastBlock
from donations.models import Donation, DonationStats, UserData
from donations.sightings import amount_scale
from prices.models import Price, PriceRequest

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def donation(**overrides: object) -> Donation:
    values: dict[str, object] = {
        "tx_hash": "0x" + "ab" * 32,
        "log_index": None,
        "address": "0x" + "11" * 20,
        "asset": "eth",
        "amount": Decimal("1.5"),
        "usd_amount": Decimal("3000.00"),
        "price": Decimal("0.001"),
        "tokens": 3000000,
        "block_number": 100,
        "block_hash": "0x" + "cd" * 32,
        "block_time": NOW,
    }
    values.update(overrides)
    return Donation.objects.create(**values)


def refused(statement: str, params: list[Any] | None = None) -> bool:
    """Whether PostgreSQL rejects a raw statement (so no ORM-side validation can be credited)."""
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(statement, params or [])
    except (IntegrityError, DataError):
        return True
    return False


def test_the_same_native_transfer_cannot_be_recorded_twice() -> None:
    donation(log_index=None)
    with pytest.raises(IntegrityError), transaction.atomic():
        donation(log_index=None)


def test_the_same_log_cannot_be_recorded_twice_but_other_logs_of_the_transaction_can() -> None:
    donation(asset="usdt", log_index=3)
    donation(asset="usdt", log_index=4)
    with pytest.raises(IntegrityError), transaction.atomic():
        donation(asset="usdt", log_index=3)


def test_an_internal_transfer_as_deep_as_the_evm_allows_is_storable_once_and_its_siblings_too() -> None:
    # 1024 frames, each the 1000th-odd sub-call of its parent: ~5 kB of path, past a btree index row.
    deepest = ".".join(str(1000 + i % 24) for i in range(1024))
    donation(trace_address=deepest)
    donation(trace_address=deepest[:-1] + "0")  # a sibling frame of the same transaction
    donation(trace_address=None)  # the transaction's own top-level transfer
    assert Donation.objects.get(trace_address=deepest).trace_address == deepest
    with pytest.raises(IntegrityError), transaction.atomic():
        donation(trace_address=deepest)


def test_campaign_has_exactly_one_row_from_the_migration() -> None:
    assert DonationStats.objects.count() == 1
    assert refused("INSERT INTO donation_stats DEFAULT VALUES")


def test_seed_pause_and_resume_sql_works_verbatim() -> None:
    with connection.cursor() as cursor:
        cursor.execute("UPDATE donation_stats SET status='paused'")
        cursor.execute(
            "UPDATE donation_stats SET status = (CASE WHEN tokens >= 250000000 THEN 'closed' ELSE 'open' END)"
            "::donation_stats_status_enum WHERE status='paused'"
        )
    assert DonationStats.objects.get().status == "open"


def test_statuses_outside_their_enum_are_refused() -> None:
    assert refused("UPDATE donation_stats SET status='halted'")
    donation()
    assert refused("UPDATE donation SET status='done'")
    assert refused("INSERT INTO price_req (requested_at, status) VALUES (now(), 'pending')")
    assert refused("INSERT INTO user_data (address, status) VALUES ('0x01', 'frozen')")


def test_usd_amount_is_required() -> None:
    assert refused(
        "INSERT INTO donation (tx_hash, address, asset, amount, price, tokens, block_number, block_hash,"
        " block_time) VALUES ('0x01', '0x02', 'usdc', 1, 0.001, 1000, 1, '0x03', now())"
    )


def test_amounts_keep_the_column_scale() -> None:
    scale = Donation._meta.get_field("amount").decimal_places
    assert amount_scale("usdc") == scale == 10
    assert amount_scale("eth") == 8
    row = donation(asset="usdc", log_index=0, amount=Decimal("0.0000000001"))
    row.refresh_from_db()
    assert row.amount == Decimal("1E-10")
    assert refused("UPDATE donation SET amount = 0")
    assert refused("UPDATE donation SET amount = 1e12")  # NUMERIC(20,10) holds at most 10 integer digits


def test_unknown_assets_and_upper_case_addresses_are_refused() -> None:
    donation()
    assert refused("UPDATE donation SET asset='dai'")
    assert refused("UPDATE donation SET address=upper(address)")


def test_user_data_address_and_affiliate_code_are_unique() -> None:
    UserData.objects.create(address="0x" + "11" * 20, affiliate_code="AivCuktyds0")
    UserData.objects.create(address="0x" + "22" * 20)
    UserData.objects.create(address="0x" + "33" * 20)  # several rows without a code are fine
    with pytest.raises(IntegrityError), transaction.atomic():
        UserData.objects.create(address="0x" + "11" * 20)
    with pytest.raises(IntegrityError), transaction.atomic():
        UserData.objects.create(address="0x" + "44" * 20, affiliate_code="AivCuktyds0")


def test_seed_user_data_insert_fills_the_defaults() -> None:
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO user_data(address, total, tokens) VALUES ('0x55', 0, 0)")
    row = UserData.objects.get(address="0x55")
    assert (row.staked, row.reward, row.status) == (0, 0, "none")


def test_one_price_per_asset_and_minute() -> None:
    Price.objects.create(asset="eth", price=Decimal("3000.12"), created_at=NOW)
    Price.objects.create(asset="dws", price=Decimal("0.001"), created_at=NOW)
    with pytest.raises(IntegrityError), transaction.atomic():
        Price.objects.create(asset="eth", price=Decimal("3001"), created_at=NOW)
    assert refused("INSERT INTO price (asset, price, created_at, sources) VALUES ('eth', 0, now(), '{}')")
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO price (asset, price, created_at, sources) VALUES ('eth', 1, %s, '{}')"
            " ON CONFLICT (asset, created_at) DO NOTHING",
            [NOW],
        )
    assert Price.objects.get(asset="eth").price == Decimal("3000.12")


def test_one_price_request_per_minute() -> None:
    PriceRequest.objects.create(requested_at=NOW)
    with pytest.raises(IntegrityError), transaction.atomic():
        PriceRequest.objects.create(requested_at=NOW)


def test_one_cursor_per_chain_and_label() -> None:
    LastBlock.objects.create(label="latest", value=10)
    LastBlock.objects.create(label="finalized", value=8)
    with pytest.raises(IntegrityError), transaction.atomic():
        LastBlock.objects.create(label="latest", value=11)


def indexes(table: str) -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s", [table])
        return dict(cursor.fetchall())


def test_the_poll_and_lookup_indexes_exist() -> None:
    assert "(status, block_time)" in indexes("donation")["donation_status_block_time_idx"]
    assert "(status, modified_at)" in indexes("price_req")["price_req_status_modified_at_idx"]
    # One wallet connection per address (issue 21): the address lookup is the unique key's index.
    assert "UNIQUE INDEX" in indexes("wallet_connection")["wallet_connection_address_key"]
    assert "(address)" in indexes("wallet_connection")["wallet_connection_address_key"]
    WalletConnection.objects.create(address="0x66", affiliate_code="code")
    with pytest.raises(IntegrityError), transaction.atomic():
        WalletConnection.objects.create(address="0x66", affiliate_code="other")
