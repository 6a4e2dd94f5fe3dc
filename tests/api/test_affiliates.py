"""Affiliate codes, wallet connections and donation attribution through the signed API."""

from __future__ import annotations

import dataclasses
import threading

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone
from eth_account import Account

from affiliates.models import AffiliateDonation, WalletConnection
from affiliates.rules import CHECK_FIRST_DELAY
from affiliates.services import affiliate_donations_resolve
from affiliates.tasks import resolve_affiliate_donations
from donations.models import UserData
from tests.api.support import make_donation, make_donor, tx_hash, wallet_headers
from tests.configs import with_chains


def signed_post(api, account, path, body=None, **kwargs):
    words = " ".join(path.strip("/").split("/"))
    return api.post(path, body or {}, content_type="application/json", **wallet_headers(account, words, **kwargs))


def code_of(api, account) -> str:
    response = signed_post(api, account, "/affiliate/code")
    assert response.status_code == 200
    return response.json()["code"]


@pytest.mark.django_db
class TestAffiliateCode:
    def test_a_donor_gets_the_same_code_on_every_call(self, api, wallet):
        make_donor(wallet.address)

        first = code_of(api, wallet)
        again = code_of(api, wallet)

        assert first == again
        assert UserData.objects.get(address=wallet.address.lower()).affiliate_code == first

    def test_codes_differ_between_donors(self, api, wallet, other_wallet):
        make_donor(wallet.address)
        make_donor(other_wallet.address)

        assert code_of(api, wallet) != code_of(api, other_wallet)

    def test_an_address_never_seen_donating_gets_no_code_and_no_record(self, api, wallet):
        # Any key can sign: a record per free key would grow the table without bound.
        response = signed_post(api, wallet, "/affiliate/code")

        assert response.status_code == 403
        assert response.json() == {"code": 1205, "message": "no donation seen for this address yet"}
        assert not UserData.objects.exists()

    def test_a_donor_seen_before_confirmation_gets_a_code_on_a_fresh_zero_record(self, api, wallet):
        make_donation(wallet.address, status="unconfirmed")

        code = code_of(api, wallet)

        record = UserData.objects.get(address=wallet.address.lower())
        assert record.affiliate_code == code
        assert (record.total, record.tokens, record.staked, record.status) == (0, 0, 0, "none")
        assert code_of(api, wallet) == code

    def test_a_later_confirmed_donation_keeps_the_code_and_fills_in_the_totals(self, api, wallet):
        make_donation(wallet.address, status="unconfirmed")
        code = code_of(api, wallet)

        make_donor(wallet.address, tokens=5000)

        record = UserData.objects.get(address=wallet.address.lower())
        assert (record.affiliate_code, record.tokens, str(record.total)) == (code, 5000, "1.00")

    def test_an_unsigned_call_creates_no_record(self, api, wallet):
        response = api.post("/affiliate/code", {}, content_type="application/json")

        assert response.status_code == 401
        assert not UserData.objects.exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("has_donated", [True, False], ids=["donor", "seen-no-record-yet"])
def test_concurrent_first_calls_all_get_the_one_code(wallet, has_donated):
    if has_donated:
        make_donor(wallet.address)
    else:
        make_donation(wallet.address, status="unconfirmed")  # seen, not confirmed: no user_data row yet
    callers = 8
    # Each caller signs a different second, as separate clicks would; the same second would be a replay.
    headers = [wallet_headers(wallet, "affiliate code") for _ in range(callers)]
    start = threading.Barrier(callers)
    codes: list[str] = []
    errors: list[BaseException] = []

    def call(h):
        try:
            start.wait()
            response = Client().post("/affiliate/code", content_type="application/json", **h)
            codes.append(response.json()["code"])
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=call, args=(h,)) for h in headers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert errors == []
    assert len(codes) == callers
    assert len(set(codes)) == 1
    assert UserData.objects.get(address=wallet.address.lower()).affiliate_code == codes[0]
    assert UserData.objects.count() == 1


@pytest.mark.django_db
class TestWalletConnection:
    @pytest.fixture
    def referrer_code(self, api, other_wallet):
        make_donor(other_wallet.address)
        return code_of(api, other_wallet)

    def test_a_visitor_connects_with_a_referrers_code(self, api, wallet, referrer_code):
        response = signed_post(api, wallet, "/wallet/connection", {"code": referrer_code})

        assert response.status_code == 200
        assert response.json()["address"] == wallet.address.lower()
        assert response.json()["code"] == referrer_code
        assert (
            WalletConnection.objects.filter(address=wallet.address.lower(), affiliate_code=referrer_code).count() == 1
        )

    def test_connecting_again_with_the_same_code_records_it_once(self, api, wallet, referrer_code):
        signed_post(api, wallet, "/wallet/connection", {"code": referrer_code})
        signed_post(
            api,
            wallet,
            "/wallet/connection",
            {"code": referrer_code},
        )

        assert WalletConnection.objects.filter(address=wallet.address.lower()).count() == 1

    def test_a_later_code_replaces_the_earlier_one(self, api, wallet, referrer_code):
        second_referrer = Account.create()
        make_donor(second_referrer.address)
        second_code = code_of(api, second_referrer)
        signed_post(api, wallet, "/wallet/connection", {"code": referrer_code})

        response = signed_post(api, wallet, "/wallet/connection", {"code": second_code})

        assert (response.status_code, response.json()["code"]) == (200, second_code)
        rows = WalletConnection.objects.filter(address=wallet.address.lower())
        assert list(rows.values_list("affiliate_code", flat=True)) == [second_code]

    def test_a_free_key_holds_one_connection_however_often_it_signs(self, api, wallet, referrer_code):
        for _ in range(5):
            assert signed_post(api, wallet, "/wallet/connection", {"code": referrer_code}).status_code == 200

        assert WalletConnection.objects.count() == 1
        assert not UserData.objects.filter(address=wallet.address.lower()).exists()  # a visitor, not a donor

    def test_an_unknown_code_is_a_numbered_404(self, api, wallet, referrer_code):
        response = signed_post(api, wallet, "/wallet/connection", {"code": "NoSuchCode1"})

        assert response.status_code == 404
        assert response.json() == {"code": 1200, "message": "unknown affiliate code"}
        assert not WalletConnection.objects.exists()

    def test_an_address_cannot_refer_itself(self, api, other_wallet, referrer_code):
        response = signed_post(
            api,
            other_wallet,
            "/wallet/connection",
            {"code": referrer_code},
        )

        assert response.status_code == 403
        assert response.json() == {"code": 1201, "message": "an address cannot use its own affiliate code"}
        assert not WalletConnection.objects.exists()

    @pytest.mark.parametrize("body", [{}, {"code": ""}, {"code": "has space"}, {"code": "x" * 17}, {"code": 5}])
    def test_a_malformed_body_is_a_numbered_400(self, api, wallet, body):
        response = signed_post(api, wallet, "/wallet/connection", body)

        assert response.status_code == 400
        assert response.json() == {"code": 1001, "message": "invalid request"}


@pytest.mark.django_db
class TestAffiliateDonation:
    @pytest.fixture
    def code(self, api, other_wallet):
        make_donor(other_wallet.address)
        return code_of(api, other_wallet)

    def claim(self, api, account, tx, code):
        return signed_post(api, account, "/affiliate/donation", {"tx_hash": tx, "code": code})

    def test_the_donor_attributes_a_recorded_donation(self, api, wallet, code):
        tx = make_donation(wallet.address).tx_hash

        response = self.claim(api, wallet, tx, code)

        assert response.status_code == 200
        assert response.json() == {"chain": "eth", "tx_hash": tx, "code": code, "status": "attributed"}

    def test_a_donation_on_another_chain_is_claimed_with_its_chain(self, api, wallet, code, settings):
        first = settings.CONFIG.first_chain
        settings.CONFIG = with_chains(settings.CONFIG, first, dataclasses.replace(first, name="base", chain_id=8453))
        tx = make_donation(wallet.address, chain="base").tx_hash

        on_first = signed_post(api, wallet, "/affiliate/donation", {"tx_hash": tx, "code": code})
        on_base = signed_post(api, wallet, "/affiliate/donation", {"tx_hash": tx, "code": code, "chain": "base"})

        # without a chain the claim is the first chain's, where no such donation is recorded (yet)
        assert on_first.json() == {"chain": "eth", "tx_hash": tx, "code": code, "status": "pending"}
        assert on_base.json() == {"chain": "base", "tx_hash": tx, "code": code, "status": "attributed"}

    @pytest.mark.parametrize("chain", ["polygon", "Base", "", 8453])
    def test_a_chain_that_is_not_configured_is_a_numbered_error(self, api, wallet, code, chain):
        tx = make_donation(wallet.address).tx_hash

        response = signed_post(api, wallet, "/affiliate/donation", {"tx_hash": tx, "code": code, "chain": chain})

        if chain == "polygon":
            assert (response.status_code, response.json()) == (404, {"code": 1206, "message": "unknown chain"})
        else:  # not a chain name at all
            assert (response.status_code, response.json()) == (400, {"code": 1001, "message": "invalid request"})
        assert not AffiliateDonation.objects.exists()

    def test_someone_else_cannot_claim_a_recorded_donation(self, api, wallet, code, other_wallet):
        stranger_tx = make_donation("0x" + "11" * 20).tx_hash

        response = self.claim(api, wallet, stranger_tx, code)

        assert response.status_code == 403
        assert response.json() == {"code": 1202, "message": "the transaction was not sent by the signing address"}
        assert not AffiliateDonation.objects.exists()

    def test_a_claim_before_the_crawler_records_the_donation_stays_pending_until_it_does(self, api, wallet, code):
        tx = tx_hash()

        response = self.claim(api, wallet, tx, code)
        assert response.json()["status"] == "pending"
        assert resolve_affiliate_donations() == 0  # looked at: nothing recorded yet, so looked at again later

        make_donation(wallet.address, tx=tx)  # the crawler records it
        assert affiliate_donations_resolve(now=timezone.now() + CHECK_FIRST_DELAY) == 1

        assert AffiliateDonation.objects.get(tx_hash=tx).status == "attributed"

    def test_a_strangers_pending_claim_is_rejected_and_does_not_block_the_donor(self, api, wallet, code, other_wallet):
        tx = tx_hash()
        third = make_donor("0x" + "22" * 20)
        UserData.objects.filter(id=third.id).update(affiliate_code="ThirdCode")
        intruder_claim = self.claim(api, other_wallet, tx, "ThirdCode")
        assert intruder_claim.json()["status"] == "pending"

        donor_claim = self.claim(api, wallet, tx, code)
        assert donor_claim.json()["status"] == "pending"
        make_donation(wallet.address, tx=tx)
        affiliate_donations_resolve()

        statuses = dict(AffiliateDonation.objects.values_list("signer", "status"))
        assert statuses == {wallet.address.lower(): "attributed", other_wallet.address.lower(): "rejected"}

    def test_claiming_again_with_the_same_code_is_idempotent_and_another_code_conflicts(self, api, wallet, code):
        tx = make_donation(wallet.address).tx_hash
        self.claim(api, wallet, tx, code)
        third = make_donor("0x" + "33" * 20)
        UserData.objects.filter(id=third.id).update(affiliate_code="OtherCode")

        again = self.claim(api, wallet, tx, code)
        switched = self.claim(api, wallet, tx, "OtherCode")

        assert again.json()["status"] == "attributed"
        assert switched.status_code == 409
        assert switched.json()["code"] == 1203
        assert AffiliateDonation.objects.count() == 1

    def test_the_referrer_cannot_attribute_to_its_own_code(self, api, other_wallet, code):
        tx = make_donation(other_wallet.address).tx_hash

        response = self.claim(api, other_wallet, tx, code)

        assert response.status_code == 403
        assert response.json()["code"] == 1201

    def test_an_unknown_code_is_a_numbered_404(self, api, wallet):
        response = self.claim(api, wallet, tx_hash(), "Nope")

        assert response.status_code == 404
        assert response.json()["code"] == 1200

    @pytest.mark.parametrize("tx", ["0x1234", "f" * 66, "0x" + "g" * 64])
    def test_a_malformed_transaction_hash_is_a_numbered_400(self, api, wallet, code, tx):
        assert self.claim(api, wallet, tx, code).json() == {"code": 1001, "message": "invalid request"}
