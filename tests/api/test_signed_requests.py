"""Signed requests as a wallet makes them: each way a signature can be wrong is a generic 401."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings

from dws_project.redaction import signature_digest
from tests.api.support import make_donor, wallet_headers, wallet_ts

pytestmark = pytest.mark.django_db

REJECTED = {"code": 1100, "message": "request signature rejected"}


@pytest.fixture
def donor(wallet):
    make_donor(wallet.address)
    return wallet


def post_code(api, headers):
    return api.post("/affiliate/code", content_type="application/json", **headers)


def assert_rejected(response):
    assert response.status_code == 401
    assert response.json() == REJECTED


def test_a_fresh_wallet_signature_is_accepted(api, donor):
    response = post_code(api, wallet_headers(donor, "affiliate code"))

    assert response.status_code == 200
    assert len(response.json()["code"]) == 11


def test_a_timestamp_a_few_seconds_ahead_is_tolerated(api, donor):
    ts = wallet_ts(datetime.now(UTC) + timedelta(seconds=3))

    assert post_code(api, wallet_headers(donor, "affiliate code", ts=ts)).status_code == 200


def test_a_stale_timestamp_is_rejected(api, donor):
    stale = datetime.now(UTC) - timedelta(seconds=settings.CONFIG.max_timestamp_age + 2)

    assert_rejected(post_code(api, wallet_headers(donor, "affiliate code", ts=wallet_ts(stale))))


def test_a_timestamp_more_than_five_seconds_ahead_is_rejected(api, donor):
    future = datetime.now(UTC) + timedelta(seconds=8)

    assert_rejected(post_code(api, wallet_headers(donor, "affiliate code", ts=wallet_ts(future))))


def test_a_signature_by_another_key_is_rejected(api, donor, other_wallet):
    assert_rejected(post_code(api, wallet_headers(donor, "affiliate code", signer=other_wallet)))


def test_a_signature_is_accepted_once_only(api, donor):
    headers = wallet_headers(donor, "affiliate code")

    assert post_code(api, headers).status_code == 200
    assert_rejected(post_code(api, headers))


def test_a_signature_made_for_another_address_is_rejected(api, donor, other_wallet):
    # The wallet signs a message naming another address; the header names the wallet.
    headers = wallet_headers(donor, "affiliate code", address=other_wallet.address)

    assert_rejected(post_code(api, headers))


def test_a_signature_for_one_endpoint_does_not_open_another(api, donor):
    headers = wallet_headers(donor, "affiliate code")

    response = api.post("/wallet/connection", {"code": "abc"}, content_type="application/json", **headers)

    assert_rejected(response)


@pytest.mark.parametrize(
    "override",
    [
        {},
        {"HTTP_DELPHI_SIGNATURE": ""},
        {"HTTP_DELPHI_SIGNATURE": "0x1234"},
        {"HTTP_DELPHI_SIGNATURE": "0x" + "00" * 65},
        {"HTTP_DELPHI_TS": "2023-10-23T18:45:19Z"},
        {"HTTP_DELPHI_TS": "yesterday"},
        {"HTTP_DELPHI_KEY": "0xnot-an-address"},
    ],
)
def test_missing_or_garbled_headers_are_rejected(api, donor, override):
    headers = wallet_headers(donor, "affiliate code") if override else {}
    headers.update(override)

    assert_rejected(post_code(api, headers))


def test_a_rejected_signature_is_logged_only_as_a_digest(api, donor, other_wallet, caplog):
    headers = wallet_headers(donor, "affiliate code", signer=other_wallet)
    signature = headers["HTTP_DELPHI_SIGNATURE"]

    with caplog.at_level(logging.INFO):
        assert_rejected(post_code(api, headers))

    assert signature_digest(signature) in caplog.text
    assert signature not in caplog.text
    assert signature[2:] not in caplog.text


def test_signatures_are_recovered_with_libsecp256k1_not_pure_python():
    from eth_keys.backends import get_backend
    from eth_keys.backends.coincurve import CoinCurveECCBackend

    assert isinstance(get_backend(), CoinCurveECCBackend)


def test_a_message_used_on_one_node_is_refused_by_a_node_whose_clock_lags(api, donor):
    import time

    from affiliates import signing

    max_age = settings.CONFIG.max_timestamp_age
    ts = wallet_ts(datetime.now(UTC) - timedelta(seconds=max_age - 2))  # near the end of its window
    headers = wallet_headers(donor, "affiliate code", ts=ts)
    assert post_code(api, headers).status_code == 200  # accepted by this node

    time.sleep(4)  # past the old key lifetime (the rest of the window on the accepting node's clock + 1 s)
    lagging_clock = datetime.now(UTC) - timedelta(seconds=10)  # another web node, 10 s behind

    with pytest.raises(signing.SignatureRejected, match="message already used"):
        signing.verify(
            path="/affiliate/code",
            key=headers["HTTP_DELPHI_KEY"],
            ts=ts,
            signature=headers["HTTP_DELPHI_SIGNATURE"],
            max_age=max_age,
            now=lagging_clock,
        )


def test_a_redis_flush_does_not_reopen_the_replay_window(api, donor):
    """The used message is kept in PostgreSQL: a real FLUSHDB of this run's Redis db (a restart without
    persistence, or an operator's flush, looks the same to us) leaves it refused."""
    from dws_project.redis_client import get_redis

    headers = wallet_headers(donor, "affiliate code")
    assert post_code(api, headers).status_code == 200

    get_redis().flushdb()

    assert_rejected(post_code(api, headers))


def test_used_messages_are_purged_once_no_clock_could_accept_them(api, donor):
    from affiliates import signing
    from affiliates.models import UsedSignature

    assert post_code(api, wallet_headers(donor, "affiliate code")).status_code == 200
    used = UsedSignature.objects.order_by("-expires_at").first()
    window = timedelta(seconds=signing.replay_key_seconds(settings.CONFIG.max_timestamp_age))

    signing.used_signatures_purge(now=datetime.now(UTC) + window - timedelta(seconds=5))
    assert UsedSignature.objects.filter(pk=used.pk).exists()  # still inside some node's window
    assert signing.used_signatures_purge(now=used.expires_at + timedelta(seconds=1)) >= 1
    assert not UsedSignature.objects.filter(pk=used.pk).exists()
