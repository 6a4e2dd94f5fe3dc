"""The JSON-RPC client against anvil through the fault-injecting proxy."""

from __future__ import annotations

import dataclasses
import logging
import threading
import time

import pytest
from django.conf import settings

from crawlers.chain.calls import TRANSFER_TOPIC, address_topic
from crawlers.chain.outcomes import Answer, NoEvidence, NoEvidenceError, outcome_label, require
from crawlers.chain.rpc import RpcClient
from crawlers.chain.tips import ChainMismatchError, check_chain_id
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER
from tests.rpc_proxy import RpcProxy

PATH_KEY = "pathKEY-0a1b2c3d4e"
QUERY_KEY = "queryKEY-9z8y7x6w"


@pytest.fixture
def proxy(node):
    with RpcProxy(node.url) as running:
        yield running


def keyed_url(proxy: RpcProxy) -> str:
    return proxy.url(f"/v3/{PATH_KEY}?apikey={QUERY_KEY}")


def test_a_batch_is_one_round_trip_with_answers_in_call_order(node, proxy):
    txs = [node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER) for _ in range(3)]
    client = RpcClient(proxy.url())

    outcomes = client.batch([("eth_getTransactionReceipt", [tx]) for tx in txs])

    assert [require(o)["transactionHash"] for o in outcomes] == txs
    assert len(proxy.seen) == 1


FAULTS = [
    ({"kind": "null"}, "null"),
    ({"kind": "error", "message": "header not found"}, "error"),
    ({"kind": "status", "status": 429, "retry_after": 1}, "rate-limited"),
    ({"kind": "status", "status": 503, "retry_after": None}, "http"),
    ({"kind": "hang", "seconds": 1.5}, "timeout"),
    ({"kind": "drop"}, "connection"),
]


@pytest.mark.parametrize(("fault", "kind"), FAULTS, ids=[k for _, k in FAULTS])
def test_every_failure_is_no_evidence_and_never_leaks_the_key(proxy, caplog, fault, kind):
    client = RpcClient(keyed_url(proxy), read_timeout=0.5)
    proxy.arm("eth_getTransactionReceipt", **fault)
    tx = "0x" + "ab" * 32

    with caplog.at_level(logging.DEBUG):
        outcome = client.call("eth_getTransactionReceipt", [tx])
        with pytest.raises(NoEvidenceError) as raised:
            require(outcome)

    assert isinstance(outcome, NoEvidence)
    assert not isinstance(outcome, Answer)
    assert outcome.kind == kind
    shown = outcome.describe() + str(raised.value) + caplog.text
    assert PATH_KEY not in shown
    assert QUERY_KEY not in shown


def test_a_429_makes_every_worker_back_off_for_the_providers_window(proxy):
    worker_a, worker_b = RpcClient(proxy.url()), RpcClient(proxy.url())
    proxy.arm("eth_blockNumber", "status", status=429, retry_after=1)

    assert outcome_label(worker_a.call("eth_blockNumber")) == "rate-limited"
    asked = len(proxy.seen)
    backed_off = worker_b.call("eth_blockNumber")

    assert isinstance(backed_off, NoEvidence)
    assert backed_off.kind == "backoff"
    assert len(proxy.seen) == asked  # worker B did not ask at all
    time.sleep(1.1)
    assert isinstance(worker_b.call("eth_blockNumber"), Answer)


def test_posts_in_flight_to_one_provider_never_exceed_the_bound_shared_by_its_clients(proxy):
    proxy.arm("*", "hang", count=None, seconds=0.2)
    clients = [RpcClient(proxy.url(), max_in_flight=3), RpcClient(proxy.url(), max_in_flight=3)]
    threads = [threading.Thread(target=clients[i % 2].call, args=("eth_blockNumber",)) for i in range(9)]

    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)

    assert len(proxy.seen) == 9
    assert proxy.most_in_flight == 3  # side by side, never more, whichever client of the endpoint posts


def test_a_429_stops_the_posts_queued_behind_it_in_the_process(proxy):
    proxy.arm("*", "status", count=None, status=429, retry_after=1)
    client = RpcClient(proxy.url(), max_in_flight=2)
    outcomes: list = []
    threads = [threading.Thread(target=lambda: outcomes.append(client.call("eth_blockNumber"))) for _ in range(8)]

    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)

    assert proxy.most_in_flight <= 2
    assert len(proxy.seen) <= 2  # those in flight when the first 429 came back; the rest waited and saw the window
    assert sorted({outcome_label(o) for o in outcomes}) == ["backoff", "rate-limited"]


def test_a_rate_limit_error_object_opens_the_shared_window_too(proxy):
    worker_a, worker_b = RpcClient(proxy.url()), RpcClient(proxy.url())
    proxy.arm("eth_blockNumber", "error", code=-32005, message="Your app has exceeded its rate limit")

    assert outcome_label(worker_a.call("eth_blockNumber")) == "rate-limited"
    assert outcome_label(worker_b.call("eth_blockNumber")) == "backoff"
    assert worker_b.backoff_remaining() > 0


def _span(params: list) -> int:
    return int(params[0]["toBlock"], 16) - int(params[0]["fromBlock"], 16) + 1


def test_get_logs_shrinks_a_refused_range_and_grows_it_again(node, proxy):
    usdt = node.coins["usdt"]
    first = node.head() + 1
    node.mint(usdt, ACCOUNTS[1], 10**9)
    sent = [node.transfer_token(usdt, ACCOUNTS[1], DONATION_ADDRESS, 1000 + i) for i in range(30)]
    last = node.head()
    proxy.arm(
        "eth_getLogs", "error", count=None, message="block range is too large, max 10", when=lambda p: _span(p) > 10
    )
    client = RpcClient(proxy.url(), log_span=64)
    query = {"addresses": [usdt], "topics": [TRANSFER_TOPIC, None, address_topic(DONATION_ADDRESS)]}

    logs = client.get_logs(**query, from_block=first, to_block=last)

    assert [log["transactionHash"] for log in logs] == sent
    assert client.log_span <= 10
    refused = proxy.requests_for("eth_getLogs")
    client.get_logs(**query, from_block=first, to_block=last)
    assert proxy.requests_for("eth_getLogs") - refused <= 5  # the learned span is kept, not re-refused
    proxy.disarm()
    for _ in range(4):
        client.get_logs(**query, from_block=first, to_block=last)
    assert client.log_span > 10  # after a run of accepted ranges it probes larger ones again


def test_a_log_range_refused_even_at_one_block_is_no_evidence(proxy, node):
    proxy.arm("eth_getLogs", "error", count=None, message="query returned more than 10000 results")
    client = RpcClient(proxy.url())
    with pytest.raises(NoEvidenceError):
        client.get_logs(addresses=[node.coins["usdt"]], topics=[TRANSFER_TOPIC], from_block=0, to_block=3)


def test_a_provider_on_another_chain_is_refused_without_showing_the_key(proxy):
    client = RpcClient(keyed_url(proxy))
    anvil = settings.CONFIG.first_chain
    check_chain_id(client, dataclasses.replace(anvil, chain_id=31337))  # anvil's chain id
    with pytest.raises(ChainMismatchError) as raised:
        check_chain_id(client, dataclasses.replace(anvil, chain_id=1))
    assert f"127.0.0.1:{proxy.port}" in str(raised.value)
    assert PATH_KEY not in str(raised.value)
    assert QUERY_KEY not in str(raised.value)


@pytest.mark.parametrize("retry_after", ["\u00b2", "\u00b9"])  # '²', '¹': digits to str.isdigit, not to int
def test_a_429_whose_retry_after_is_a_non_ascii_digit_is_no_evidence_with_the_default_window(proxy, retry_after):
    client = RpcClient(proxy.url())
    proxy.arm("eth_blockNumber", "status", status=429, retry_after=retry_after)

    outcome = client.call("eth_blockNumber")

    assert isinstance(outcome, NoEvidence)
    assert outcome.kind == "rate-limited"
