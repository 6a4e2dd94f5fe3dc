"""Bad bodies are numbered 400/413 answers logged at WARNING: never a 500, never an ERROR traceback."""

from __future__ import annotations

import logging

import pytest
import requests

from tests.api.support import wallet_headers

pytestmark = pytest.mark.django_db

TOO_LARGE = {"code": 1010, "message": "request body too large"}
MALFORMED = {"code": 1011, "message": "malformed request body"}


@pytest.fixture
def watched(caplog):
    caplog.set_level(logging.INFO)
    yield caplog
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []


def signed_post(api, wallet, body: bytes, content_type: str = "application/json"):
    return api.post(
        "/wallet/connection", body, content_type=content_type, **wallet_headers(wallet, "wallet connection")
    )


def test_an_oversized_json_body_is_a_numbered_413(api, wallet, watched):
    response = signed_post(api, wallet, b'{"code": "' + b"a" * 300_000 + b'"}')

    assert response.status_code == 413
    assert response.json() == TOO_LARGE
    assert "1010 on POST /wallet/connection" in watched.text


def test_an_oversized_admin_form_is_a_numbered_413(api, watched):
    response = api.post(
        "/admin/login/", b"username=" + b"a" * 300_000, content_type="application/x-www-form-urlencoded"
    )

    assert response.status_code == 413
    assert response.json() == TOO_LARGE


def test_too_many_form_fields_is_a_numbered_413(api, watched):
    body = "&".join(f"f{i}=1" for i in range(1500)).encode()

    response = api.post("/admin/login/", body, content_type="application/x-www-form-urlencoded")

    assert response.status_code == 413
    assert response.json() == TOO_LARGE


def test_deeply_nested_json_is_a_numbered_400(api, wallet, watched):
    response = signed_post(api, wallet, b"[" * 2000 + b"]" * 2000)  # inside the API's body cap

    assert response.status_code == 400
    assert response.json() == MALFORMED


def test_an_api_body_beyond_a_few_kilobytes_is_a_numbered_413_before_any_scan(api, wallet, watched):
    # delphi's bodies are a few dozen bytes; the admin's forms keep their 256 KiB.
    response = signed_post(api, wallet, b'{"code": "' + b"a" * 5000 + b'"}')

    assert response.status_code == 413
    assert response.json() == TOO_LARGE


def test_a_string_that_never_closes_is_read_once_not_once_per_quote(api, wallet, watched):
    # `"` then `\"` repeated: each escaped quote once restarted the string scan to the end of the body.
    response = signed_post(api, wallet, b'"' + b'\\"' * 1300)

    assert response.status_code == 400
    assert response.json() == {"code": 1001, "message": "invalid request"}


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ('{"a": [1, {"b": "]]]}"}]}', 3),
        (r'{"a": "\\"}', 1),  # an escaped backslash ends before the closing quote
        (r'{"a": "\"[[["}', 1),  # an escaped quote does not close the string
        ('[[["unclosed', 3),
        ('"[[[" [', 1),
        ("", 0),
    ],
)
def test_the_depth_of_a_document_counts_brackets_outside_strings_only(text, depth):
    from dws_project.json_limits import json_depth

    assert json_depth(text) == depth


def test_json_that_is_not_utf8_is_a_numbered_400(api, wallet, watched):
    response = signed_post(api, wallet, b'{"code": "\xff\xfeab"}')

    assert response.status_code == 400
    assert response.json() == MALFORMED


@pytest.mark.parametrize(
    "content_type",
    ["multipart/form-data; boundary=", "multipart/form-data", "multipart/form-data; boundary=\xff\xfe"],
)
def test_a_broken_upload_is_a_numbered_400(api, watched, content_type):
    response = api.post("/admin/login/", b"--x\r\ngarbage", content_type=content_type)

    assert response.status_code == 400
    assert response.json() == MALFORMED


def test_gunicorn_answers_bad_bodies_with_numbered_errors(django_db_blocker, wallet):
    from tests.web_server import gunicorn

    def post(base: str, body: bytes) -> requests.Response:
        signed = wallet_headers(wallet, "wallet connection")
        headers = {k.removeprefix("HTTP_").replace("_", "-").lower(): v for k, v in signed.items()}
        return requests.post(
            f"{base}/wallet/connection", data=body, headers={**headers, "content-type": "application/json"}, timeout=20
        )

    with django_db_blocker.unblock(), gunicorn(workers=1) as base:
        big = post(base, b"{" + b" " * 400_000 + b"}")
        nested = post(base, b"[" * 2000 + b"]" * 2000)
        # 200 KB of `"` + `\"`...: once a scan of minutes (the worker killed at its time-out); now a 413
        # at the API's cap, and the same shape inside the cap a plain 400.
        unclosed = post(base, b'"' + b'\\"' * 100_000)
        unclosed_small = post(base, b'"' + b'\\"' * 1300)
        alive = requests.get(f"{base}/live", timeout=5)

    assert (big.status_code, big.json()) == (413, TOO_LARGE)
    assert (nested.status_code, nested.json()) == (400, MALFORMED)
    assert (unclosed.status_code, unclosed.json()) == (413, TOO_LARGE)
    assert unclosed_small.status_code == 400
    assert alive.status_code == 200  # the worker survived every one
