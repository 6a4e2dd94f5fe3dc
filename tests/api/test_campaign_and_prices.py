"""GET /donation/data, /price/eth and /price/token: what the donation page polls."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from donations.models import CampaignStatus, DonationStats
from dws_project.config_values import StableCoin
from prices.models import Price
from tests.configs import with_chains

pytestmark = pytest.mark.django_db

# deploy/env.local: DWS_SALE_PARAMS=100000000:0.001,250000000:0.0015,500000000:0.002


COINS = [
    {"asset": "usdt", "contract": "0x5fbdb2315678afecb367f032d93f642f64180aa3", "decimals": 6},
    {"asset": "usdc", "contract": "0xe7f1725e7734ce288f8367e1bb143e90bb3f0512", "decimals": 6},
]


def set_campaign(*, tokens: int, total: str = "0", status: str = CampaignStatus.OPEN) -> None:
    DonationStats.objects.update(tokens=tokens, total=Decimal(total), status=status)


def test_a_fresh_campaign_is_open_in_the_first_tier(api):
    response = api.get("/donation/data")

    assert response.status_code == 200
    body = response.json()
    assert {k: v for k, v in body.items() if k != "ts"} == {
        "total": "0.00",
        "tokens": "0",
        "status": "open",
        "token_price": "0.001",
        "tier": 1,
        "tier_limit": "100000000",
        "sale_cap": "500000000",
        "tokens_beyond_cap": "0",
        "donation_address": "0xa0ee7a142d267c1f36714e4a8f75612f20a79720",
        "stable_coins": COINS,
        "chains": [
            {
                "chain": "eth",
                "chain_id": 31337,
                "label": "Local chain (31337)",
                "donation_address": "0xa0ee7a142d267c1f36714e4a8f75612f20a79720",
                "stable_coins": COINS,
            }
        ],
        "pending_total": "0.00",
        "pending_donations": 0,
    }
    assert body["ts"].endswith("Z")
    assert response["Cache-Control"] == "public, max-age=10"


def test_the_tier_and_price_follow_the_confirmed_tokens(api):
    set_campaign(tokens=150_000_000, total="125000.00")

    body = api.get("/donation/data").json()

    assert (body["tier"], body["token_price"], body["tier_limit"], body["total"], body["tokens"]) == (
        2,
        "0.0015",
        "250000000",
        "125000.00",
        "150000000",
    )
    assert api.get("/price/token").json()["price"] == "0.0015"


def test_the_sale_shows_closed_at_the_cap_even_if_the_stored_status_is_stale(api):
    set_campaign(tokens=500_000_000, status=CampaignStatus.OPEN)

    body = api.get("/donation/data").json()

    assert (body["status"], body["tier"], body["token_price"]) == ("closed", 3, "0.002")
    assert body["tokens_beyond_cap"] == "0"


def test_the_tokens_beyond_the_cap_are_shown(api):
    # the donation that crossed the 500M cap was credited whole
    set_campaign(tokens=500_123_456, total="750000.00", status=CampaignStatus.CLOSED)

    body = api.get("/donation/data").json()

    assert (body["status"], body["tokens"], body["sale_cap"], body["tokens_beyond_cap"]) == (
        "closed",
        "500123456",
        "500000000",
        "123456",
    )


def test_a_paused_sale_shows_paused(api):
    set_campaign(tokens=10, status=CampaignStatus.PAUSED)

    assert api.get("/donation/data").json()["status"] == "paused"


def test_the_token_price_answers_before_any_donation(api):
    response = api.get("/price/token")

    assert response.status_code == 200
    body = response.json()
    assert (body["asset"], body["price"]) == ("dws", "0.001")
    assert response["Cache-Control"] == "public, max-age=10"


def test_the_eth_price_is_a_numbered_503_until_the_first_price_is_written(api):
    response = api.get("/price/eth")

    assert response.status_code == 503
    assert response.json() == {"code": 1008, "message": "price not available yet"}
    assert response["Cache-Control"] == "no-store"


def test_the_eth_price_is_the_latest_row(api):
    Price.objects.create(asset="eth", price=Decimal("1999.5"), created_at=datetime(2026, 1, 1, 12, 0, tzinfo=UTC))
    Price.objects.create(asset="eth", price=Decimal("2001.25"), created_at=datetime(2026, 1, 1, 12, 1, tzinfo=UTC))
    Price.objects.create(asset="dws", price=Decimal("0.5"), created_at=datetime(2026, 1, 1, 12, 2, tzinfo=UTC))

    response = api.get("/price/eth")

    assert response.json() == {"asset": "eth", "price": "2001.25000000", "ts": "2026-01-01T12:01:00Z"}
    assert response["Cache-Control"] == "public, max-age=15"


@pytest.mark.django_db
def test_the_eth_price_shown_is_never_a_minute_one_exchange_alone_quoted(api):
    from datetime import timedelta

    from django.utils import timezone

    from prices.models import ETH, Price

    minute = timezone.now().replace(second=0, microsecond=0)
    Price.objects.create(asset=ETH, price="2000", created_at=minute - timedelta(minutes=5))
    Price.objects.create(asset=ETH, price="9999", created_at=minute, single_venue=True)

    assert api.get("/price/eth").json()["price"] == "2000.00000000"


def test_every_chain_is_listed_in_order_and_the_first_chain_keeps_the_single_chain_fields(api, settings):
    eth = settings.CONFIG.first_chain
    base = dataclasses.replace(
        eth,
        name="base",
        chain_id=8453,
        label="",
        donation_address="0x70997970c51812dc3a010c7d01b50e0d17dc79c8",
        stable_coins=(StableCoin("usdc", "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913", 6),),
    )
    settings.CONFIG = with_chains(settings.CONFIG, eth, base)

    body = api.get("/donation/data").json()

    assert body["donation_address"] == eth.donation_address  # the first chain's, as before several chains
    assert body["stable_coins"] == COINS
    assert [(c["chain"], c["chain_id"], c["label"]) for c in body["chains"]] == [
        ("eth", 31337, "Local chain (31337)"),
        ("base", 8453, "Base"),
    ]
    assert body["chains"][1]["donation_address"] == "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"
    assert body["chains"][1]["stable_coins"] == [
        {"asset": "usdc", "contract": "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913", "decimals": 6}
    ]
