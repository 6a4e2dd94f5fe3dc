"""Internal ETH transfers found in real anvil traces, by both methods, behind the fault proxy.

The wallet is a deployed EthForwarder (tests/contracts/EthForwarder.sol): its owner makes it send ETH to
the donation address in an internal call, in several calls, or in a sub-call that reverts (caught).
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal

import pytest

from crawlers.chain.outcomes import NoEvidenceError
from crawlers.chain.rpc import RpcClient
from crawlers.scan.traces import TracesUnavailable, internal_eth_transfers, memory_key, remembered_family
from dws_project.chain_settings import ChainSettings
from dws_project.redis_client import get_redis
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER

pytestmark = pytest.mark.django_db  # amount_scale reads the model; no row is written

OWNER = ACCOUNTS[1]
REFUSED_CODE, REFUSED_MESSAGE = -32601, "the method {} does not exist/is not available"


@pytest.fixture
def wallet(node) -> str:
    address = node.deploy("EthForwarder", sender=OWNER)
    node.send_eth(OWNER, address, 10 * ETHER)
    return address


def wallet_tx(node, wallet: str, signature: str, types: list[str], args: list) -> tuple[str, int, str]:
    """Send a wallet call from its owner; (tx hash, block number, block hash) of the mined transaction."""
    tx = {"from": OWNER, "to": wallet, "data": node.call_data(signature, types, args), "gas": hex(500_000)}
    tx_hash = node.send(tx)
    receipt = node.receipt(tx_hash)
    assert receipt["status"] == "0x1"
    return tx_hash, int(receipt["blockNumber"], 16), receipt["blockHash"]


def forward(node, wallet, wei=ETHER):
    return wallet_tx(node, wallet, "forward(address,uint256)", ["address", "uint256"], [DONATION_ADDRESS, wei])


def forward_many(node, wallet, values):
    return wallet_tx(
        node, wallet, "forwardMany(address,uint256[])", ["address", "uint256[]"], [DONATION_ADDRESS, values]
    )


def forward_with_reverted_part(node, wallet, kept, undone):
    types = ["address", "uint256", "uint256"]
    return wallet_tx(
        node, wallet, "forwardWithRevertedPart(address,uint256,uint256)", types, [DONATION_ADDRESS, kept, undone]
    )


def config_for(settings, mode: str) -> ChainSettings:
    """The chain's settings with DWS_TRACE set to `mode`."""
    return dataclasses.replace(settings.CONFIG.first_chain, trace_mode=mode)


def found(client, config, number, block_hash):
    return [
        (t.tx_hash, t.trace_address, t.donor, t.asset, t.amount, t.log_index, t.block_number, t.block_hash)
        for t in internal_eth_transfers(client, config, block_number=number, block_hash=block_hash)
    ]


@pytest.mark.parametrize("mode", ["debug", "trace"])
def test_eth_forwarded_by_a_contract_wallet_is_found_with_the_wallet_as_donor(node, wallet, settings, mode):
    tx_hash, number, block_hash = forward(node, wallet, ETHER // 2)

    result = found(RpcClient(node.url), config_for(settings, mode), number, block_hash)

    assert result == [(tx_hash, "0", wallet, "eth", Decimal("0.50000000"), None, number, block_hash)]


def test_both_methods_give_identical_identities_for_several_calls_in_one_transaction(node, wallet, settings):
    tx_hash, number, block_hash = forward_many(node, wallet, [ETHER, 2 * ETHER, 3 * ETHER])
    assert node.receipt(tx_hash)["status"] == "0x1"
    client = RpcClient(node.url)

    debug = found(client, config_for(settings, "debug"), number, block_hash)
    trace = found(client, config_for(settings, "trace"), number, block_hash)

    assert debug == trace
    assert [(t[0], t[1], t[4]) for t in debug] == [
        (tx_hash, "0", Decimal(1)),
        (tx_hash, "1", Decimal(2)),
        (tx_hash, "2", Decimal(3)),
    ]


def test_both_methods_agree_when_a_precompile_is_called_before_the_transfer(node, wallet, settings):
    signature, types = "forwardAfterPrecompile(address,uint256)", ["address", "uint256"]
    tx_hash, number, block_hash = wallet_tx(node, wallet, signature, types, [DONATION_ADDRESS, ETHER])
    client = RpcClient(node.url)
    # anvil lists the sha256 call in both shapes: it is the wallet's first sub-call as the node numbers them.
    listed = node.rpc("trace_block", hex(number))
    assert [t["traceAddress"] for t in listed if t["action"].get("to") == DONATION_ADDRESS] == [[1]]

    debug = found(client, config_for(settings, "debug"), number, block_hash)
    trace = found(client, config_for(settings, "trace"), number, block_hash)

    assert debug == trace
    assert [(t[0], t[1]) for t in debug] == [(tx_hash, "0")]


@pytest.mark.parametrize("mode", ["debug", "trace"])
def test_a_sub_call_that_reverted_does_not_count(node, wallet, settings, mode):
    tx_hash, number, block_hash = forward_with_reverted_part(node, wallet, ETHER, 2 * ETHER)

    result = found(RpcClient(node.url), config_for(settings, mode), number, block_hash)

    assert [(t[0], t[1], t[4]) for t in result] == [(tx_hash, "0", Decimal(1))]
    # What the chain itself says arrived: the kept part only.
    assert node.rpc("eth_getBalance", DONATION_ADDRESS, hex(number)) == hex(
        int(node.rpc("eth_getBalance", DONATION_ADDRESS, hex(number - 1)), 16) + ETHER
    )


def test_a_direct_transaction_to_us_is_not_an_internal_transfer(node, settings):
    tx = node.send_eth(ACCOUNTS[2], DONATION_ADDRESS, ETHER)
    receipt = node.receipt(tx)
    number, block_hash = int(receipt["blockNumber"], 16), receipt["blockHash"]
    for mode in ("debug", "trace"):
        assert found(RpcClient(node.url), config_for(settings, mode), number, block_hash) == []


def test_auto_discovers_the_method_remembers_it_and_finds_another_when_it_is_refused(node, wallet, proxy, settings):
    _, number, block_hash = forward(node, wallet)
    config = config_for(settings, "auto")
    client = RpcClient(proxy.url("/rpc"))

    assert len(found(client, config, number, block_hash)) == 1
    assert remembered_family(client) == "debug"
    # Another worker, another client: the discovery is shared, so it asks debug only.
    assert len(found(RpcClient(proxy.url("/rpc")), config, number, block_hash)) == 1
    assert (proxy.requests_for("debug_traceBlockByNumber"), proxy.requests_for("trace_block")) == (2, 0)

    # The provider stops serving debug_*: auto finds trace_block and remembers it.
    proxy.arm("debug_traceBlockByNumber", "error", count=None, **_refusal("debug_traceBlockByNumber"))
    assert len(found(client, config, number, block_hash)) == 1
    assert remembered_family(client) == "trace"
    found(client, config, number, block_hash)
    assert (proxy.requests_for("debug_traceBlockByNumber"), proxy.requests_for("trace_block")) == (3, 2)


def _refusal(method: str) -> dict:
    return {"code": REFUSED_CODE, "message": REFUSED_MESSAGE.format(method)}


def test_a_provider_refusing_every_trace_method_makes_traces_unavailable(node, wallet, proxy, settings):
    _, number, block_hash = forward(node, wallet)
    # A node without the callTracer (older Erigon) refuses the call as we make it.
    proxy.arm("debug_traceBlockByNumber", "error", count=None, code=-32000, message="tracer not found")
    # Alchemy's wording on a plan without traces, with a code that is not -32601.
    proxy.arm("trace_block", "error", count=None, code=-32600, message="trace_block is not available on the Free tier")
    client = RpcClient(proxy.url("/rpc"))

    with pytest.raises(TracesUnavailable, match="refuses every trace method"):
        internal_eth_transfers(client, config_for(settings, "auto"), block_number=number, block_hash=block_hash)
    assert remembered_family(client) is None
    with pytest.raises(TracesUnavailable):
        internal_eth_transfers(client, config_for(settings, "trace"), block_number=number, block_hash=block_hash)


def test_dws_trace_off_asks_nothing(node, wallet, proxy, settings):
    _, number, block_hash = forward(node, wallet)
    with pytest.raises(TracesUnavailable, match="DWS_TRACE=off"):
        internal_eth_transfers(
            RpcClient(proxy.url("/rpc")), config_for(settings, "off"), block_number=number, block_hash=block_hash
        )
    assert proxy.seen == []


@pytest.mark.parametrize(
    "fault",
    [
        {"kind": "null"},
        {"kind": "error", "message": "execution timeout"},
        {"kind": "error", "code": -32001, "message": "Resource not found"},
        {"kind": "status", "status": 429},
        {"kind": "status", "status": 503},
        {"kind": "drop"},
        {"kind": "rewrite", "rewrite": lambda result, params: []},  # an empty answer for a block with transactions
    ],
)
@pytest.mark.parametrize("mode", ["auto", "debug", "trace"])
def test_a_provider_failure_is_no_evidence_never_unavailable_or_empty(node, wallet, proxy, settings, mode, fault):
    _, number, block_hash = forward(node, wallet)
    method = "trace_block" if mode == "trace" else "debug_traceBlockByNumber"
    get_redis().delete(memory_key(RpcClient(proxy.url("/rpc"))))
    proxy.arm(method, count=None, **fault)

    with pytest.raises(NoEvidenceError):
        internal_eth_transfers(
            RpcClient(proxy.url("/rpc")), config_for(settings, mode), block_number=number, block_hash=block_hash
        )
    assert proxy.requests_for("trace_block") == 0 or mode == "trace"  # auto does not fall back on a failure


@pytest.mark.parametrize("mode", ["debug", "trace"])
def test_a_block_that_changed_between_calls_is_no_evidence(node, wallet, settings, mode):
    _, number, block_hash = forward(node, wallet)
    node.reorg(1, [])  # the block we scanned is replaced by an empty one

    with pytest.raises(NoEvidenceError, match="no longer"):
        internal_eth_transfers(
            RpcClient(node.url), config_for(settings, mode), block_number=number, block_hash=block_hash
        )


def test_a_trace_that_times_out_is_no_evidence_and_auto_does_not_fall_back(node, wallet, proxy, settings):
    _, number, block_hash = forward(node, wallet)
    proxy.arm("debug_traceBlockByNumber", "hang", count=None, seconds=1.5)
    client = RpcClient(proxy.url("/rpc"), read_timeout=0.5)

    with pytest.raises(NoEvidenceError, match="timeout"):
        internal_eth_transfers(client, config_for(settings, "auto"), block_number=number, block_hash=block_hash)
    assert proxy.requests_for("trace_block") == 0
    assert remembered_family(client) is None
