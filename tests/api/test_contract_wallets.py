"""Signed requests from contract wallets (ERC-1271, ERC-6492), checked by real contracts on anvil."""

from __future__ import annotations

import pytest
from eth_account import Account

from affiliates.contract_signatures import SIGNATURE_CHECK_BYTECODE
from dws_project.api_errors import SIGNATURE_REJECTED, SIGNATURE_UNVERIFIABLE
from tests.api.contract_wallets import (
    contract_headers,
    counterfactual_wallet,
    deploy_wallet,
    place_wallet,
    set_owner,
)
from tests.api.support import post_code_as_donor as post_code
from tests.api.support import wallet_headers
from tests.chain import ROLLUP, load_artifact
from tests.configs import configured
from tests.rpc_proxy import RpcProxy

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def owner():
    return Account.create()


def assert_refused(response, error=SIGNATURE_REJECTED):
    assert response.status_code == error.status
    assert response.json() == {"code": error.code, "message": error.message}


def test_a_deployed_wallet_signs_by_its_owner_and_gets_its_code(api, node, owner):
    wallet = deploy_wallet(node, owner)

    response = post_code(api, contract_headers(wallet, owner, "affiliate code"))

    assert response.status_code == 200
    assert response.json()["code"]


def test_a_wallet_signature_is_accepted_once_only(api, node, owner):
    wallet = deploy_wallet(node, owner)
    headers = contract_headers(wallet, owner, "affiliate code")

    assert post_code(api, headers).status_code == 200
    assert_refused(post_code(api, headers))


def test_an_owner_change_revokes_the_old_owner_at_once(api, node, owner):
    wallet = deploy_wallet(node, owner)
    assert post_code(api, contract_headers(wallet, owner, "affiliate code")).status_code == 200
    new_owner = Account.create()

    set_owner(node, wallet, owner, new_owner)

    assert_refused(post_code(api, contract_headers(wallet, owner, "affiliate code")))
    assert post_code(api, contract_headers(wallet, new_owner, "affiliate code")).status_code == 200


def test_a_stranger_cannot_sign_for_a_wallet_nor_for_an_address_without_code(api, node, owner):
    wallet = deploy_wallet(node, owner)
    stranger = Account.create()

    assert_refused(post_code(api, contract_headers(wallet, stranger, "affiliate code")))
    # an EOA that is not the signer: no code, so no contract is asked
    assert_refused(post_code(api, wallet_headers(owner, "affiliate code", signer=stranger)))


def test_a_counterfactual_wallet_signs_with_erc6492_before_it_exists(api, node, owner):
    wallet = counterfactual_wallet(node, owner)
    assert node.rpc("eth_getCode", wallet.address, "latest") == "0x"

    response = post_code(api, contract_headers(wallet.address, owner, "affiliate code", wrap=wallet.wrap))

    assert response.status_code == 200
    assert node.rpc("eth_getCode", wallet.address, "latest") == "0x"  # checked inside an eth_call only
    stranger = Account.create()
    assert_refused(post_code(api, contract_headers(wallet.address, stranger, "affiliate code", wrap=wallet.wrap)))


def test_an_erc6492_signature_is_checked_against_the_deployed_wallet_once_it_exists(api, node, owner):
    wallet = counterfactual_wallet(node, owner)
    node.send({"from": node.rpc("eth_accounts")[0], "to": wallet.factory, "data": "0x" + wallet.deploy_calldata.hex()})
    new_owner = Account.create()
    set_owner(node, wallet.address, owner, new_owner)

    assert_refused(post_code(api, contract_headers(wallet.address, owner, "affiliate code", wrap=wallet.wrap)))
    ok = post_code(api, contract_headers(wallet.address, new_owner, "affiliate code", wrap=wallet.wrap))
    assert ok.status_code == 200


@pytest.mark.parametrize(
    ("method", "fault"),
    [
        ("eth_getCode", {"kind": "error", "message": "internal error"}),
        ("eth_call", {"kind": "hang", "seconds": 6.0}),
        ("eth_call", {"kind": "status", "status": 502}),
    ],
)
def test_a_provider_that_cannot_answer_refuses_with_its_own_error_and_the_message_stays_usable(
    api, node, owner, settings, method, fault
):
    wallet = deploy_wallet(node, owner)
    headers = contract_headers(wallet, owner, "affiliate code")
    with RpcProxy(node.url) as proxy:
        settings.CONFIG = configured(settings.CONFIG, rpc_url=proxy.url("/rpc"))
        proxy.arm(method, **fault)

        assert_refused(post_code(api, headers), SIGNATURE_UNVERIFIABLE)

        # the replay key was not taken: the same request goes through once the provider answers
        assert post_code(api, headers).status_code == 200


def test_a_wallet_that_exists_only_on_a_rollup_signs_there(api, node, rollup, owner):
    wallet = deploy_wallet(rollup, owner)
    assert node.rpc("eth_getCode", wallet, "latest") == "0x"

    assert post_code(api, contract_headers(wallet, owner, "affiliate code")).status_code == 200
    assert_refused(post_code(api, contract_headers(wallet, Account.create(), "affiliate code")))


def test_a_contract_at_the_donors_address_on_the_first_chain_cannot_sign_for_the_rollups_wallet(
    api, node, rollup, owner
):
    """The same address, two wallets: the donor's on the rollup, another's on the first chain. A signature
    counts only where every chain holding code at the address accepts it."""
    donors_wallet = deploy_wallet(rollup, owner)
    intruder = Account.create()
    place_wallet(node, donors_wallet, intruder)

    assert_refused(post_code(api, contract_headers(donors_wallet, intruder, "affiliate code")))
    assert_refused(post_code(api, contract_headers(donors_wallet, owner, "affiliate code")))
    place_wallet(node, donors_wallet, owner)  # the donor's own wallet on both chains
    assert post_code(api, contract_headers(donors_wallet, owner, "affiliate code")).status_code == 200


def test_an_erc6492_wrapper_cannot_sign_for_a_wallet_deployed_on_another_chain_under_another_owner(
    api, node, rollup, owner
):
    wallet = counterfactual_wallet(node, owner)  # not deployed on the first chain: its factory would
    place_wallet(rollup, wallet.address, Account.create())  # deployed on the rollup, someone else's

    assert_refused(post_code(api, contract_headers(wallet.address, owner, "affiliate code", wrap=wallet.wrap)))


def test_a_rollup_whose_provider_cannot_answer_makes_a_wallet_signature_unverifiable(
    api, node, rollup, owner, settings
):
    wallet = deploy_wallet(node, owner)
    headers = contract_headers(wallet, owner, "affiliate code")
    with RpcProxy(rollup.url) as proxy:
        settings.CONFIG = configured(settings.CONFIG, chain=ROLLUP, rpc_url=proxy.url("/rpc"))
        proxy.arm("eth_getCode", "error", message="internal error")

        assert_refused(post_code(api, headers), SIGNATURE_UNVERIFIABLE)  # it may be another wallet there

        assert post_code(api, headers).status_code == 200


def test_the_check_contract_the_api_runs_is_the_compiled_source():
    assert load_artifact("SignatureCheck")["bytecode"] == SIGNATURE_CHECK_BYTECODE
