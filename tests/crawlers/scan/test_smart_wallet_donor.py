"""Done when (issue #15): a Safe-like contract wallet donates, signs `POST /affiliate/code` by contract
(ERC-1271) and stakes; a registered receiver gets seen then confirmed for its donation, signed, once each.

The donation is ETH paid by the wallet (`execute` -> a call with value): no transaction has the donation
address as its `to`, so only the balance proof and the call traces see it; it is credited to the wallet.
"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.test import Client
from eth_account import Account

from crawlers.models import FINALIZED, LATEST
from crawlers.runs.crawl import crawl
from donations.models import Donation, UserData
from donations.rules import donation_tokens
from donations.webhook_delivery import webhooks_drain
from tests.api.contract_wallets import act_as, contract_headers, deploy_wallet
from tests.chain import DONATION_ADDRESS
from tests.donations.test_webhooks import SECRET, documented_verifier
from tests.invariants import assert_ledger_invariants
from tests.webhook_receiver import registered_endpoint, webhook_receiver

pytestmark = [pytest.mark.django_db]

ETHER = 10**18


def test_a_contract_wallet_donates_signs_by_contract_stakes_and_the_receiver_hears_seen_then_confirmed(
    node, crawl_config, eth_prices
):
    verify = documented_verifier()
    api = Client()
    owner = Account.create()
    wallet = deploy_wallet(node, owner)
    node.set_balance(wallet, 2 * ETHER)
    execute = node.call_data(
        "execute(address,uint256,bytes)", ["address", "uint256", "bytes"], [DONATION_ADDRESS, ETHER // 8, b""]
    )

    with webhook_receiver() as receiver:
        registered_endpoint(receiver.url, ["donation.seen", "donation.confirmed"], secret=SECRET)
        tx = node.send({"from": act_as(node, owner), "to": wallet, "data": execute, "gas": hex(300_000)})
        crawl(LATEST)
        node.mine(2)
        crawl(FINALIZED)

        donation = Donation.objects.get()
        assert (donation.tx_hash, donation.address, donation.asset, donation.status, donation.trace_address) == (
            tx,
            wallet,
            "eth",
            "confirmed",
            "0",
        )
        expected_tokens = donation_tokens(
            asset="eth",
            amount=Decimal("0.125"),
            eth_price=eth_prices,
            token_price=crawl_config.CONFIG.sale_tiers[0].token_price,
        )
        assert UserData.objects.get(address=wallet).tokens == expected_tokens

        code = api.post(
            "/affiliate/code", content_type="application/json", **contract_headers(wallet, owner, "affiliate code")
        )
        assert code.status_code == 200
        staked = api.post(
            "/user/stake",
            {"amount": "1000"},
            content_type="application/json",
            **contract_headers(wallet, owner, "user stake"),
        )
        assert staked.status_code == 200
        assert UserData.objects.get(address=wallet).staked == 1000

        webhooks_drain()
        webhooks_drain()  # nothing left: each event lands once

    received = receiver.accepted()
    assert [json.loads(r.body)["event"] for r in received] == ["donation.seen", "donation.confirmed"]
    for request in received:
        assert verify(SECRET, request.headers["dws-signature"], request.body)
        body = json.loads(request.body)
        assert (body["data"]["tx_hash"], body["data"]["address"], body["data"]["amount"]) == (
            tx,
            wallet,
            "0.1250000000",
        )
    assert json.loads(received[1].body)["data"]["tokens"] == str(expected_tokens)
    assert Decimal(json.loads(received[0].body)["data"]["usd_amount"]) == Decimal("0.125") * eth_prices
    assert_ledger_invariants()
