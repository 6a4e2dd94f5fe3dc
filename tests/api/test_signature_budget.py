"""What a bad signature may cost the provider: a small, deployment-wide budget of contract checks, one
round trip each with a gas cap, a web-tier back-off of its own, ~2 s at most, and a "try again" (1102)
past the budget, never an acceptance (issue 21, high 1 and low 13)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from eth_account import Account

from affiliates.contract_signatures import (
    CONTRACT_CHECKS_BURST,
    CONTRACT_CHECKS_PER_SECOND,
    ERC6492_GAS,
)
from crawlers.chain.outcomes import Answer
from crawlers.chain.rpc import RpcClient
from donations.models import DonationStats
from dws_project.api_errors import SIGNATURE_REJECTED, SIGNATURE_UNVERIFIABLE
from tests.api.contract_wallets import contract_headers, counterfactual_wallet, deploy_wallet
from tests.api.support import post_code_as_donor as post_code
from tests.api.support import wallet_headers, wallet_ts
from tests.chain import Anvil
from tests.configs import configured
from tests.rpc_proxy import RpcProxy

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def proxy(node: Anvil, settings) -> Iterator[RpcProxy]:
    with RpcProxy(node.url) as running:
        settings.CONFIG = configured(settings.CONFIG, rpc_url=running.url("/rpc"))
        yield running


def bad_signature_headers() -> dict[str, str]:
    """A fresh key's request signed by another fresh key: it recovers to neither, so it reaches the
    contract path (what anyone can send at no cost). A fresh key makes a fresh message, so its timestamp
    is simply now."""
    return wallet_headers(Account.create(), "affiliate code", signer=Account.create(), ts=wallet_ts())


def as_requests_headers(headers: dict[str, str]) -> dict[str, str]:
    return {k.removeprefix("HTTP_").replace("_", "-").lower(): v for k, v in headers.items()}


def assert_answer(response, error) -> None:
    assert (response.status_code, response.json()) == (error.status, {"code": error.code, "message": error.message})


@pytest.mark.django_db(transaction=True)
def test_a_flood_of_bad_signatures_costs_the_provider_a_bounded_number_of_calls(node):
    """Through gunicorn, from many clients (each inside its own signed budget), at a provider that takes
    0.5 s: every request is refused, and the provider is asked at most the budget's worth."""
    from tests.web_server import gunicorn

    DonationStats.objects.get_or_create()
    with RpcProxy(node.url) as slow:
        slow.arm("*", "hang", count=None, seconds=0.5)
        env = {"ETH_RPC_URL": slow.url("/rpc"), "DWS_TRUSTED_PROXIES": "127.0.0.1/32"}
        with gunicorn(workers=3, env=env) as base:

            def attack(n: int) -> int:
                headers = {**as_requests_headers(bad_signature_headers()), "X-Forwarded-For": f"198.51.100.{n}"}
                return requests.post(f"{base}/affiliate/code", headers=headers, timeout=30).status_code

            slow.seen.clear()
            started = time.monotonic()
            with ThreadPoolExecutor(6) as pool:
                statuses = list(pool.map(attack, range(60)))
            elapsed = time.monotonic() - started
            posts = len(slow.seen)

    assert set(statuses) <= {401, 503}, statuses
    assert 503 in statuses  # past the budget: "try again", not a wait for the provider
    # A token bucket: at most its burst plus its rate over the time the flood took (plus one in flight).
    assert posts <= CONTRACT_CHECKS_BURST + CONTRACT_CHECKS_PER_SECOND * elapsed + 1, (posts, elapsed)


def test_past_the_budget_a_contract_wallet_is_asked_to_try_again_never_accepted(api, node, proxy):
    owner = Account.create()
    wallet = deploy_wallet(node, owner)
    for _ in range(CONTRACT_CHECKS_BURST + 2):
        post_code(api, bad_signature_headers())
    headers = contract_headers(wallet, owner, "affiliate code")

    assert_answer(post_code(api, headers), SIGNATURE_UNVERIFIABLE)

    time.sleep(1.5 / CONTRACT_CHECKS_PER_SECOND)  # the budget refills
    assert post_code(api, headers).status_code == 200  # the message was not used up by the refusal


def test_an_address_without_code_is_remembered_and_costs_nothing_the_next_time(api, proxy):
    key, stranger = Account.create(), Account.create()
    assert_answer(post_code(api, wallet_headers(key, "affiliate code", signer=stranger)), SIGNATURE_REJECTED)
    asked = len(proxy.seen)

    assert_answer(post_code(api, wallet_headers(key, "affiliate code", signer=stranger)), SIGNATURE_REJECTED)

    assert asked == 1  # eth_getCode and the eth_call in one round trip
    assert len(proxy.seen) == asked


def test_a_429_the_web_tier_meets_never_pauses_the_crawlers(api, proxy):
    proxy.arm("*", "status", status=429, retry_after=600)

    assert_answer(post_code(api, bad_signature_headers()), SIGNATURE_UNVERIFIABLE)

    crawler = RpcClient(proxy.url("/rpc"))
    assert crawler.backoff_remaining() == 0
    assert isinstance(crawler.call("eth_blockNumber"), Answer)
    # The web tier itself does back off: the next check asks nothing of the provider.
    asked = len(proxy.seen)
    assert_answer(post_code(api, bad_signature_headers()), SIGNATURE_UNVERIFIABLE)
    assert len(proxy.seen) == asked


def test_every_eth_call_carries_a_gas_cap(api, node, proxy):
    owner = Account.create()
    deployed = deploy_wallet(node, owner)
    counterfactual = counterfactual_wallet(node, owner)

    assert post_code(api, contract_headers(deployed, owner, "affiliate code")).status_code == 200
    wrapped = contract_headers(counterfactual.address, owner, "affiliate code", wrap=counterfactual.wrap)
    assert post_code(api, wrapped).status_code == 200

    calls = [params for seen in proxy.seen for method, params in seen.calls if method == "eth_call"]
    assert len(calls) == 2
    for params in calls:
        assert 0 < int(params[0]["gas"], 16) <= ERC6492_GAS


def test_a_provider_slower_than_two_seconds_gets_try_again_instead_of_holding_the_worker(api, node, proxy):
    owner = Account.create()
    wallet = deploy_wallet(node, owner)
    proxy.arm("*", "hang", count=None, seconds=2.5)

    assert_answer(post_code(api, contract_headers(wallet, owner, "affiliate code")), SIGNATURE_UNVERIFIABLE)


@pytest.mark.django_db(transaction=True)
def test_a_web_process_keeps_one_connection_to_the_provider(node):
    from tests.web_server import gunicorn

    DonationStats.objects.get_or_create()
    with RpcProxy(node.url) as provider, gunicorn(workers=1, env={"ETH_RPC_URL": provider.url("/rpc")}) as base:
        for _ in range(3):
            headers = as_requests_headers(bad_signature_headers())
            assert requests.post(f"{base}/affiliate/code", headers=headers, timeout=30).status_code == 401
        peers = {seen.peer for seen in provider.seen}

    assert len(provider.seen) == 3
    assert len(peers) == 1  # one pooled connection, not one client (and connection) per request


@pytest.mark.parametrize("mode", [0, 1], ids=["magic-then-another-word", "magic-then-non-zero-bytes"])
def test_only_the_exact_32_byte_magic_word_accepts(api, node, mode):
    wallet = node.deploy("SloppyWallet", ["uint8"], [mode])

    response = post_code(api, contract_headers(wallet, Account.create(), "affiliate code"))

    assert_answer(response, SIGNATURE_REJECTED)
