"""POST /user/stake and /user/unstake, and the job that completes unstaking after 7 days."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test import Client

from donations.models import UserData
from donations.tasks import complete_unstakes
from tests.api.support import make_donation, make_donor, refresh_user_data, wallet_headers

pytestmark = pytest.mark.django_db


def stake(api, account, amount):
    return api.post(
        "/user/stake", {"amount": amount}, content_type="application/json", **wallet_headers(account, "user stake")
    )


def unstake(api, account):
    return api.post("/user/unstake", content_type="application/json", **wallet_headers(account, "user unstake"))


def row(account) -> UserData:
    return UserData.objects.get(address=account.address.lower())


@pytest.fixture
def donor(wallet):
    make_donor(wallet.address, tokens=1000)
    return wallet


def test_staking_moves_tokens_into_staked_without_touching_the_confirmed_total(api, donor):
    response = stake(api, donor, "400")

    assert response.status_code == 200
    summary = response.json()["user_data"]
    assert (summary["tokens"], summary["staked"], summary["status"]) == ("1000", "400", "staked")
    assert (row(donor).tokens, row(donor).staked) == (1000, 400)


def test_staking_more_adds_up_to_the_tokens_owned_and_no_further(api, donor):
    assert stake(api, donor, "600").status_code == 200
    assert stake(api, donor, "400").status_code == 200

    refused = stake(api, donor, "1")

    assert refused.status_code == 409
    assert refused.json() == {"code": 1300, "message": "not enough unstaked tokens"}
    assert row(donor).staked == 1000


def test_unconfirmed_tokens_cannot_be_staked(api, donor):
    make_donation(donor.address, tokens=5000, status="unconfirmed")
    refresh_user_data(donor.address)

    assert stake(api, donor, "1001").json()["code"] == 1300


def test_an_address_without_donations_cannot_stake_and_gets_no_row(api, wallet):
    response = stake(api, wallet, "1")

    assert response.status_code == 403
    assert response.json()["code"] == 1101
    assert not UserData.objects.exists()


def test_a_record_made_by_the_affiliate_code_call_has_nothing_to_stake_or_unstake(api, wallet):
    make_donation(wallet.address, status="unconfirmed")  # seen, so the code call makes a zero record
    code = api.post("/affiliate/code", content_type="application/json", **wallet_headers(wallet, "affiliate code"))
    assert code.status_code == 200

    assert stake(api, wallet, "1").json()["code"] == 1300
    assert unstake(api, wallet).json()["code"] == 1302
    assert (row(wallet).staked, row(wallet).status) == (0, "none")


@pytest.mark.parametrize("amount", ["0", "-5", "1.5", "1e3", "", "abc", 100, None, "1" * 19])
def test_an_amount_that_is_not_a_positive_whole_string_is_a_numbered_400(api, donor, amount):
    response = stake(api, donor, amount)

    assert response.status_code == 400
    assert response.json() == {"code": 1001, "message": "invalid request"}
    assert row(donor).staked == 0


def test_unstaking_starts_a_seven_day_wait_shown_in_user_data(api, donor):
    stake(api, donor, "300")
    before = datetime.now(UTC)

    response = unstake(api, donor)

    assert response.status_code == 200
    summary = response.json()["user_data"]
    assert (summary["status"], summary["staked"]) == ("unstaking", "300")
    completes = datetime.fromisoformat(summary["unstake_completes_at"].replace("Z", "+00:00"))
    assert before + timedelta(days=7) - timedelta(seconds=1) <= completes <= datetime.now(UTC) + timedelta(days=7)


def test_tokens_cannot_be_staked_while_unstaking(api, donor):
    stake(api, donor, "300")
    unstake(api, donor)

    response = stake(api, donor, "1")

    assert response.status_code == 409
    assert response.json()["code"] == 1301


def test_unstaking_with_nothing_staked_is_refused(api, donor):
    response = unstake(api, donor)

    assert response.status_code == 409
    assert response.json() == {"code": 1302, "message": "no staked tokens"}


def test_asking_to_unstake_again_keeps_the_original_completion_date(api, donor):
    stake(api, donor, "300")
    first = unstake(api, donor).json()["user_data"]["unstake_completes_at"]

    second = unstake(api, donor)

    assert second.status_code == 200
    assert second.json()["user_data"]["unstake_completes_at"] == first


def test_the_job_completes_due_unstakings_only(api, donor, other_wallet):
    stake(api, donor, "300")
    unstake(api, donor)
    make_donor(other_wallet.address, tokens=50)
    stake(api, other_wallet, "50")
    unstake(api, other_wallet)
    UserData.objects.filter(address=donor.address.lower()).update(
        unstake_requested_at=datetime.now(UTC) - timedelta(days=7, seconds=1)
    )
    UserData.objects.filter(address=other_wallet.address.lower()).update(
        unstake_requested_at=datetime.now(UTC) - timedelta(days=6, hours=23)
    )

    assert complete_unstakes() == 1

    done, waiting = row(donor), row(other_wallet)
    assert (done.status, done.staked, done.tokens, done.unstake_requested_at) == ("none", 0, 1000, None)
    assert (waiting.status, waiting.staked) == ("unstaking", 50)
    summary = api.get(f"/user/data/{donor.address}").json()["user_data"]
    assert (summary["status"], summary["staked"], summary["unstake_completes_at"]) == ("none", "0", None)


def test_after_unstaking_completes_the_tokens_can_be_staked_again(api, donor):
    stake(api, donor, "1000")
    unstake(api, donor)
    UserData.objects.update(unstake_requested_at=datetime.now(UTC) - timedelta(days=8))
    complete_unstakes()

    assert stake(api, donor, "1000").status_code == 200


@pytest.mark.django_db(transaction=True)
def test_concurrent_stakes_never_exceed_the_tokens_owned(wallet):
    make_donor(wallet.address, tokens=1000)
    callers = 6
    headers = [wallet_headers(wallet, "user stake") for _ in range(callers)]  # distinct seconds
    start = threading.Barrier(callers)
    statuses: list[int] = []

    def call(h):
        try:
            start.wait()
            response = Client().post("/user/stake", {"amount": "300"}, content_type="application/json", **h)
            statuses.append(response.status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=call, args=(h,)) for h in headers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert sorted(statuses) == [200, 200, 200, 409, 409, 409]
    assert (row(wallet).staked, row(wallet).tokens) == (900, 1000)
