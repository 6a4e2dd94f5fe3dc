"""`manage.py sign_request METHOD PATH [BODY]`: headers a real API accepts, key from the environment only."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from eth_account import Account

from tests.api.support import make_donor

ROOT = Path(__file__).resolve().parents[2]


def sign_request(*args: str, key: str | None):
    env = {k: v for k, v in os.environ.items() if k != "DWS_TT_PRIVATE_KEY"}
    env["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    if key is not None:
        env["DWS_TT_PRIVATE_KEY"] = key
    return subprocess.run(
        [sys.executable, "manage.py", "sign_request", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def parse_headers(stdout: str) -> dict[str, str]:
    return dict(line.split(": ", 1) for line in stdout.strip().splitlines())


@pytest.mark.django_db
def test_the_printed_headers_are_accepted_by_the_api(api):
    account = Account.create()
    make_donor(account.address)
    key = "0x" + account.key.hex().removeprefix("0x")

    result = sign_request("POST", "/affiliate/code", key=key)

    assert result.returncode == 0, result.stderr
    headers = parse_headers(result.stdout)
    assert set(headers) == {"delphi-key", "delphi-ts", "delphi-signature"}
    assert headers["delphi-key"] == account.address.lower()
    assert key[2:] not in result.stdout + result.stderr
    response = api.post(
        "/affiliate/code",
        content_type="application/json",
        HTTP_DELPHI_KEY=headers["delphi-key"],
        HTTP_DELPHI_TS=headers["delphi-ts"],
        HTTP_DELPHI_SIGNATURE=headers["delphi-signature"],
    )
    assert response.status_code == 200


def test_a_body_is_checked_as_json():
    key = "0x" + Account.create().key.hex().removeprefix("0x")

    ok = sign_request("POST", "/wallet/connection", '{"code": "AivCuktyds0"}', key=key)
    bad = sign_request("POST", "/wallet/connection", "{code:", key=key)

    assert ok.returncode == 0
    assert bad.returncode != 0
    assert "BODY is not valid JSON" in bad.stderr


def test_without_the_environment_key_it_refuses():
    result = sign_request("POST", "/affiliate/code", key=None)

    assert result.returncode != 0
    assert "DWS_TT_PRIVATE_KEY is not set" in result.stderr


def test_there_is_no_key_flag():
    result = sign_request("POST", "/affiliate/code", "--private-key", "0x" + "11" * 32, key=None)

    assert result.returncode != 0
    assert "unrecognized arguments" in result.stderr
