"""/openapi.json describes what the API really answers; schemathesis fuzzes every operation against it."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from eth_account import Account
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from crawlers.record.proof_ranges import proof_range_record
from crawlers.scan.ledger import SpanLedger
from prices.models import Price
from tests.api.support import make_donation, make_donor, refresh_user_data, wallet_headers

SIGNED_PATHS = {"/affiliate/code", "/wallet/connection", "/affiliate/donation", "/user/stake", "/user/unstake"}
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]

schema = schemathesis.openapi.from_wsgi("/openapi.json", get_wsgi_application())


@pytest.mark.django_db
def test_the_schema_marks_amounts_as_strings_and_donations_as_a_required_array(api):
    spec = api.get("/openapi.json").json()
    components = spec["components"]["schemas"]

    user_data = components["UserDataOutput"]
    assert set(user_data["required"]) == {"donations", "user_data"}
    assert user_data["properties"]["donations"]["type"] == "array"
    for field in ("amount", "usd_amount", "price", "tokens"):
        assert components["Donation"]["properties"][field]["type"] == "string"
        assert field in components["Donation"]["required"]
    for field in ("total", "tokens", "staked", "reward"):
        assert components["UserSummary"]["properties"][field]["type"] == "string"
    # the donor's receipt: where and when each donation was seen and confirmed, and the ETH price applied
    receipt = components["Donation"]["properties"]
    assert {"chain", "block_number", "eth_price", "seen_at", "confirmed_at"} <= set(components["Donation"]["required"])
    assert receipt["block_number"]["type"] == "integer"
    assert receipt["eth_price"]["type"] == receipt["confirmed_at"]["type"] == "string"
    assert receipt["eth_price"]["nullable"] is receipt["confirmed_at"]["nullable"] is True
    assert set(spec["paths"]) >= SIGNED_PATHS | {"/user/data/{address}", "/donation/data", "/price/eth", "/price/token"}
    # several chains (DESIGN, Chains): every chain of the campaign, and the chain a claim names
    assert "chains" in components["DonationDataOutput"]["required"]
    assert set(components["Chain"]["required"]) == {"chain", "chain_id", "label", "donation_address", "stable_coins"}
    assert "chain" in components["AffiliateDonationInput"]["properties"]
    assert "chain" not in components["AffiliateDonationInput"].get("required", [])  # default: the first chain


@pytest.fixture
def fuzz_world(settings):
    """A donor with history, an ETH price, and a rate limit the fuzzer cannot trip."""
    # As Django's own test client does: keep the request cycle from closing the test's connection.
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    settings.DWS_RATE_LIMIT_BURST = 1_000_000
    settings.DWS_RATE_LIMIT_PER_SECOND = 1_000_000
    donor = "0xded1fe6b3f61c8f1d874bb86f086d10ffc3f0154"
    for _ in range(3):
        make_donation(donor)
    refresh_user_data(donor)
    # A published proof range, so /proof.json answers with every field filled in.
    opening = {"eth": 10**18, "nonce": 1, "usdt": 0, "usdc": 0}
    proof_range_record(chain="eth", span=SpanLedger(1, opening), through=10, through_hash="0x" + "ab" * 32)
    Price.objects.create(asset="eth", price=Decimal("2000"), created_at=datetime(2026, 1, 1, tzinfo=UTC))
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.mark.django_db
@schema.parametrize()
@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_every_operation_answers_within_its_schema(case, fuzz_world):
    headers = {}
    if case.operation.path in SIGNED_PATHS:
        # A fresh donor per example signs as its wallet would, so the fuzzer reaches the handlers.
        account = Account.create()
        make_donor(account.address, tokens=10_000)
        words = " ".join(case.operation.path.strip("/").split("/"))
        signed = wallet_headers(account, words)
        headers = {
            "delphi-key": signed["HTTP_DELPHI_KEY"],
            "delphi-ts": signed["HTTP_DELPHI_TS"],
            "delphi-signature": signed["HTTP_DELPHI_SIGNATURE"],
        }
    case.call_and_validate(headers=headers, checks=CHECKS)


@pytest.mark.django_db
def test_the_schema_is_built_once_per_process(api, monkeypatch):
    from drf_spectacular.settings import spectacular_settings

    from dws_project.openapi import forget_schema

    builds = []

    def count_builds(result, generator, request, public):
        builds.append(1)
        return result

    forget_schema()
    monkeypatch.setattr(
        spectacular_settings, "POSTPROCESSING_HOOKS", [*spectacular_settings.POSTPROCESSING_HOOKS, count_builds]
    )
    try:
        first = api.get("/openapi.json")
        second = api.get("/openapi.json")
    finally:
        forget_schema()

    assert first.status_code == second.status_code == 200
    assert first.json() == second.json()
    assert first.json()["info"]["title"] == "delphi"
    assert len(builds) == 1
