"""Every failure answers with a numbered code and a fixed message, never the underlying error."""

from __future__ import annotations

import logging

import pytest

from donations.models import DonationStats
from dws_project.api_errors import ALL_ERRORS
from dws_project.config import load_config
from tests.api.support import wallet_headers
from tests.manual import page_text

pytestmark = pytest.mark.django_db


def test_an_unknown_path_is_a_numbered_404(api):
    response = api.get("/no/such/thing")

    assert response.status_code == 404
    assert response.json() == {"code": 1003, "message": "not found"}


def test_a_wrong_method_is_a_numbered_405(api):
    response = api.get("/affiliate/code")

    assert response.status_code == 405
    assert response.json() == {"code": 1004, "message": "method not allowed"}


def test_a_body_that_is_not_json_is_a_numbered_400(api, wallet):
    headers = wallet_headers(wallet, "wallet connection")

    response = api.post("/wallet/connection", "{not json", content_type="application/json", **headers)

    assert response.status_code == 400
    assert response.json() == {"code": 1001, "message": "invalid request"}


def test_a_form_body_is_a_numbered_415(api, wallet):
    headers = wallet_headers(wallet, "wallet connection")

    response = api.post("/wallet/connection", {"code": "abc"}, **headers)

    assert response.status_code == 415
    assert response.json() == {"code": 1005, "message": "unsupported media type"}


def test_a_server_fault_answers_a_generic_500_and_logs_the_detail(api, caplog):
    # The campaign row is missing: the read fails inside the ORM.
    DonationStats.objects.all().delete()

    with caplog.at_level(logging.ERROR):
        response = api.get("/donation/data")

    assert response.status_code == 500
    assert response.json() == {"code": 1000, "message": "internal error"}
    text = response.content.decode()
    for leak in ("DoesNotExist", "donation_stats", "Traceback", "SELECT", "psycopg"):
        assert leak not in text
    assert "DoesNotExist" in caplog.text


def test_production_configuration_has_debug_off_unless_asked():
    env = {
        "DATABASE_URL": "postgres://u:p@db.example:5432/dws",
        "DWS_DONATION_ADDRESS": "0x" + "ab" * 20,
        "DWS_STABLE_COINS": "usdt:0x" + "cd" * 20 + ":6",
        "DWS_SALE_PARAMS": "100:0.001",
        "ETH_RPC_URL": "https://rpc.example/key",
        "DJANGO_SECRET_KEY": "k" * 40,
        "DWS_CHAIN_ID": "1",
    }

    assert load_config(env).debug is False


def test_a_request_for_a_host_we_do_not_serve_is_a_numbered_400(api):
    response = api.get("/donation/data", HTTP_HOST="evil.example")

    assert response.status_code == 400
    assert response.json() == {"code": 1001, "message": "invalid request"}


def test_every_numbered_error_is_unique_and_in_the_api_manual_table():
    manual = page_text("docs/api.md")

    assert len({e.code for e in ALL_ERRORS}) == len(ALL_ERRORS)
    for error in ALL_ERRORS:
        assert f"| {error.code} | {error.status} | {error.message}" in manual
    # ... and the table lists nothing the code does not answer with.
    import re

    listed = {int(code) for code in re.findall(r"^\| (1\d{3}) \| \d{3} \|", manual, flags=re.MULTILINE)}
    assert listed == {e.code for e in ALL_ERRORS}
