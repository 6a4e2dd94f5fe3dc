"""A provider's answer is bounded: in size, in nesting, in total time, and never followed elsewhere.

The faults come from the proxy in front of anvil (tests/rpc_proxy.py): an answer past the size cap, a
result nested past json's recursion limit, a body dripped a byte at a time (each read well inside the
read time-out), a 307 that would re-POST the request to another server. Each is "no evidence": the call
says so, the crawler holds, and once the provider behaves the same blocks are crawled.
"""

from __future__ import annotations

import sys
import time

import pytest

from crawlers.chain.outcomes import NoEvidence
from crawlers.chain.rpc import LOG_SPAN_MAX, RpcClient
from crawlers.models import LATEST
from crawlers.runs.crawl import crawl
from donations.models import Donation
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER
from tests.configs import configured
from tests.rpc_proxy import RpcProxy

MB = 1_000_000


@pytest.fixture
def provider(node):
    with RpcProxy(node.url) as running:
        yield running


def test_an_answer_past_the_size_cap_is_no_evidence(provider):
    client = RpcClient(provider.url(), max_answer_bytes=1 * MB)
    provider.arm("eth_blockNumber", "huge", size=2 * MB)

    outcome = client.call("eth_blockNumber")

    assert isinstance(outcome, NoEvidence)
    assert outcome.kind == "too-large"
    assert "1000000 bytes" in outcome.detail
    assert client.call("eth_blockNumber") == client.call("eth_blockNumber")  # the next answer is taken again


def test_a_deep_but_real_answer_is_taken(provider):
    client = RpcClient(provider.url())
    provider.arm("eth_blockNumber", "deep", size=500)  # a trace of a call chain 250 frames deep nests so

    assert not isinstance(client.call("eth_blockNumber"), NoEvidence)


def test_an_answer_under_the_cap_is_taken(provider):
    client = RpcClient(provider.url(), max_answer_bytes=3 * MB)
    provider.arm("eth_blockNumber", "huge", size=2 * MB)

    assert not isinstance(client.call("eth_blockNumber"), NoEvidence)


@pytest.fixture
def recursion_limit_raised():
    """What importing py_ecc (eth signatures) does to every process that loads it: json would then recurse
    until the C stack overflows (a segmentation fault), not raise RecursionError."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(max(100_000, before))
    yield
    sys.setrecursionlimit(before)


@pytest.mark.usefixtures("recursion_limit_raised")
def test_a_result_nested_past_the_recursion_limit_is_no_evidence_not_a_recursion_error(provider):
    client = RpcClient(provider.url())
    provider.arm("eth_blockNumber", "deep", size=100_000)
    provider.arm("eth_getBlockByNumber", "deep", size=100_000)

    single = client.call("eth_blockNumber")
    batched = client.batch([("eth_getBlockByNumber", ["latest", False])])

    assert isinstance(single, NoEvidence)
    assert single.kind == "malformed"
    assert "nested deeper than 2100" in single.detail
    assert [o.kind for o in batched if isinstance(o, NoEvidence)] == ["malformed"]


@pytest.mark.alone
def test_an_answer_dripped_a_byte_at_a_time_ends_at_the_total_deadline(provider):
    client = RpcClient(provider.url(), read_timeout=1.0)  # the whole answer within 1 s
    provider.arm("eth_blockNumber", "drip", seconds=0.1)  # ~50 bytes: 5 s, each read within 0.1 s

    started = time.monotonic()
    outcome = client.call("eth_blockNumber")
    took = time.monotonic() - started

    assert isinstance(outcome, NoEvidence)
    assert outcome.kind == "timeout"
    assert took < 2.5
    assert not isinstance(client.call("eth_blockNumber"), NoEvidence)  # a fresh connection afterwards


def test_a_redirect_is_not_followed(node, provider):
    with RpcProxy(node.url) as elsewhere:
        client = RpcClient(provider.url())
        provider.arm("eth_blockNumber", "redirect", location=elsewhere.url("/stolen"))

        outcome = client.call("eth_blockNumber")

        assert isinstance(outcome, NoEvidence)
        assert outcome.kind == "http"
        assert "307" in outcome.detail
        assert elsewhere.seen == []  # the request (and whatever key its URL carried) went nowhere else


@pytest.mark.django_db
@pytest.mark.usefixtures("crawl_config", "eth_prices")
@pytest.mark.usefixtures("recursion_limit_raised")
@pytest.mark.parametrize(("kind", "size"), [("huge", 2 * MB), ("deep", 100_000), ("drip", 0), ("redirect", 0)])
def test_an_unbounded_answer_holds_the_crawler_and_the_block_is_crawled_once_it_behaves(
    node, provider, settings, kind, size
):
    settings.CONFIG = configured(settings.CONFIG, rpc_url=provider.url("/rpc"), rpc_max_answer_bytes=MB)
    settings.CRAWLER_RPC_READ_TIMEOUT = 1.0
    tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    provider.arm("*", kind, count=None, size=size, seconds=0.1, location=provider.url("/elsewhere"))

    held = crawl(LATEST)

    assert held.held is not None
    assert "no evidence" in held.held
    assert not Donation.objects.exists()
    provider.disarm()
    assert crawl(LATEST).inserted == 1
    assert Donation.objects.get().tx_hash == tx


def test_a_batch_refused_for_its_size_is_asked_again_in_halves(provider):
    """Issue 32: each answer fits, their sum did not; the batch is asked again in smaller parts, down to one
    call a post, and every call is answered."""
    client = RpcClient(provider.url(), max_answer_bytes=1 * MB)
    provider.arm("eth_chainId", "huge", count=1, size=2 * MB)  # the first post (all four calls) is past the cap

    outcomes = client.batch(
        [("eth_blockNumber", []), ("eth_chainId", []), ("eth_blockNumber", []), ("net_version", [])]
    )

    assert not [o for o in outcomes if isinstance(o, NoEvidence)]
    assert client.round_trips == 3  # the four, then two and two


def test_a_log_answer_past_the_cap_halves_the_span(provider, node):
    client = RpcClient(provider.url(), max_answer_bytes=1 * MB)
    provider.arm("eth_getLogs", "huge", count=1, size=2 * MB)

    logs = client.get_logs(addresses=[node.coins["usdt"]], topics=[], from_block=0, to_block=node.head())

    assert logs == []
    assert client.log_span < LOG_SPAN_MAX
