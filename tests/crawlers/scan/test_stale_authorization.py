"""An EIP-7702 authorization the donation address signed long ago, replayed by a stranger, moves nothing.

A range in which the address signed an authorization is read through its traces (issue 32: a delegation set
and cleared inside a range can move ETH in and out unseen by the balances), or held where the provider
gives no traces. But a signed authorization is public once used, and anyone can put it again in a type-4
transaction of their own: its nonce is past, so the EVM skips it and the address's nonce does not move. On
a provider without traces, each such replay held the chain ('the donation address signed an EIP-7702
authorization in block N ... the provider gives no call traces; held') for as long as the stranger liked
(found by attack32). Only an authorization that moved the address's nonce counts.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from crawlers.models import FINALIZED, LATEST
from crawlers.runs.crawl import crawl
from donations.models import Donation
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER, authorize_7702
from tests.configs import configured
from tests.rpc_proxy import RpcProxy

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eth_prices")]

ZERO = "0x" + "0" * 40


def test_a_replayed_stale_authorization_holds_nothing_on_a_provider_without_traces(node, settings):
    delegate = node.deploy("EthRelay")
    signed = node.rpc("eth_getTransactionByHash", authorize_7702(node, delegate))["authorizationList"]
    authorize_7702(node, ZERO)  # cleared again: the address is plain
    with RpcProxy(node.url) as provider:
        provider.refuse_traces()
        settings.CONFIG = configured(settings.CONFIG, rpc_url=provider.url("/rpc"), start_block=node.head() + 1)
        stale = [{k: entry[k] for k in ("chainId", "address", "nonce", "yParity", "r", "s")} for entry in signed]
        with node.one_block():
            stranger = ACCOUNTS[7]
            replay = node.send(
                {"from": stranger, "to": stranger, "value": "0x0", "authorizationList": stale, "gas": hex(200_000)}
            )
            donated = node.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER)
        assert node.receipt(replay)["status"] == "0x1"
        node.mine(2)

        latest, final = crawl(LATEST), crawl(FINALIZED)

    assert latest.held is None
    assert final.held is None
    assert Donation.objects.get().tx_hash == donated
    assert (Donation.objects.get().amount, Donation.objects.get().status) == (Decimal(1), "confirmed")
