"""Referral claims cannot clog the resolver: they expire, are walked by next-check time, are bounded per
signer, and count as attributed only once the donation is confirmed."""

from __future__ import annotations

import secrets
from datetime import timedelta

import pytest
from django.utils import timezone
from eth_account import Account

from affiliates.models import AffiliateDonation
from affiliates.rules import CHECK_MAX_DELAY, CLAIM_LIFETIME, MAX_OPEN_CLAIMS
from affiliates.services import affiliate_donations_resolve
from donations.models import Donation, DonationStatus
from tests.api.support import make_donation, make_donor, tx_hash, wallet_headers

pytestmark = pytest.mark.django_db


@pytest.fixture
def code(api, other_wallet) -> str:
    make_donor(other_wallet.address)
    response = api.post(
        "/affiliate/code", content_type="application/json", **wallet_headers(other_wallet, "affiliate code")
    )
    return response.json()["code"]


def claim(api, account, tx: str, code: str):
    body = {"tx_hash": tx, "code": code}
    return api.post(
        "/affiliate/donation", body, content_type="application/json", **wallet_headers(account, "affiliate donation")
    )


def random_tx() -> str:
    return "0x" + secrets.token_hex(32)


def test_a_thousand_junk_claims_do_not_freeze_a_later_referral(api, wallet, code):
    # The attack: throwaway keys claim transactions that will never exist, ahead of a real donor.
    an_hour_ago = timezone.now() - timedelta(hours=1)
    junk = [
        AffiliateDonation(tx_hash=random_tx(), signer=Account.create().address.lower(), affiliate_code=code)
        for _ in range(1200)
    ]
    AffiliateDonation.objects.bulk_create(junk)
    AffiliateDonation.objects.update(created_at=an_hour_ago, next_check_at=an_hour_ago)
    tx = tx_hash()
    assert claim(api, wallet, tx, code).json()["status"] == "pending"
    make_donation(wallet.address, tx=tx)  # recorded and confirmed

    now = timezone.now()
    for minute in range(3):  # the resolver's next three runs, a minute apart
        affiliate_donations_resolve(now=now + timedelta(minutes=minute, seconds=1))

    assert AffiliateDonation.objects.get(tx_hash=tx).status == "attributed"


def test_a_signer_holds_a_bounded_number_of_open_claims(api, wallet, code):
    for _ in range(MAX_OPEN_CLAIMS):
        assert claim(api, wallet, tx_hash(), code).json()["status"] == "pending"

    refused = claim(api, wallet, tx_hash(), code)

    assert refused.status_code == 409
    assert refused.json() == {"code": 1204, "message": "too many pending claims for this address"}
    assert AffiliateDonation.objects.filter(signer=wallet.address.lower()).count() == MAX_OPEN_CLAIMS
    # A claim for a confirmed donation of its own settles at once and is never refused.
    confirmed = make_donation(wallet.address).tx_hash
    assert claim(api, wallet, confirmed, code).json()["status"] == "attributed"


def test_an_unconfirmed_donation_does_not_count_until_it_is_confirmed(api, wallet, code):
    tx = make_donation(wallet.address, status=DonationStatus.UNCONFIRMED).tx_hash

    assert claim(api, wallet, tx, code).json()["status"] == "pending"
    affiliate_donations_resolve()
    assert AffiliateDonation.objects.get(tx_hash=tx).status == "pending"

    Donation.objects.filter(tx_hash=tx).update(status=DonationStatus.CONFIRMED)
    affiliate_donations_resolve(now=timezone.now() + CHECK_MAX_DELAY)

    assert AffiliateDonation.objects.get(tx_hash=tx).status == "attributed"


def test_a_claim_whose_donation_never_confirms_expires(api, wallet, code):
    failed = make_donation(wallet.address, status=DonationStatus.FAILED).tx_hash
    never = tx_hash()
    claim(api, wallet, failed, code)
    claim(api, wallet, never, code)

    affiliate_donations_resolve(now=timezone.now() + CLAIM_LIFETIME - timedelta(minutes=1))
    assert set(AffiliateDonation.objects.values_list("status", flat=True)) == {"pending"}
    affiliate_donations_resolve(now=timezone.now() + CLAIM_LIFETIME + timedelta(minutes=1))

    assert set(AffiliateDonation.objects.values_list("status", flat=True)) == {"expired"}
    # ... which frees the signer's open-claim slots.
    assert claim(api, wallet, tx_hash(), code).json()["status"] == "pending"


def test_the_resolver_looks_at_an_undecided_claim_less_and_less_often(api, wallet, code):
    tx = tx_hash()
    claim(api, wallet, tx, code)
    now = timezone.now()

    affiliate_donations_resolve(now=now)
    first = AffiliateDonation.objects.get(tx_hash=tx)
    affiliate_donations_resolve(now=first.next_check_at)
    second = AffiliateDonation.objects.get(tx_hash=tx)

    assert (first.checks, second.checks) == (1, 2)
    assert second.next_check_at - first.next_check_at > first.next_check_at - now
