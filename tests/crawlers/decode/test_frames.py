"""The trace decoders on recorded answers: anvil's (= geth's) callTracer and trace_block shapes, geth
without `txHash`, a callTracer that lists precompile calls, Parity-style create/suicide/reward traces."""

from __future__ import annotations

from decimal import Decimal

import pytest

from crawlers.decode.frames import (
    MalformedTrace,
    call_tracer_frames,
    donation_frames,
    internal_transfers,
    own_coin_calls,
    own_frames,
    parity_frames,
    transaction_frames,
)

US = "0xa0ee7a142d267c1f36714e4a8f75612f20a79720"
WALLET = "0x8464135c8f25da09e49bc8782676a84730c318bc"
OWNER = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"
TX = "0x70948f89565c80bab3fe9cbcadd0f9621f5c064a1c7e492b3e9a9f26eaa04938"
BLOCK = "0xeff4e8e39784d190e83aaf980764c2e20460ed2e38ef4961ff0bc9266a6463f9"
ONE_ETH = "0xde0b6b3a7640000"
TWO_ETH = "0x1bc16d674ec80000"


def call(to, value="0x0", kind="CALL", sender=WALLET, calls=None, error=None):
    frame = {"from": sender, "to": to, "value": value, "type": kind, "gas": "0x0", "gasUsed": "0x0", "input": "0x"}
    if calls is not None:
        frame["calls"] = calls
    if error:
        frame["error"] = error
    return frame


# Recorded from anvil 1.7.1: forwardWithRevertedPart(us, 1 ETH, 2 ETH): sends 1 ETH, then a self-call
# that sends 2 ETH and reverts (caught).
CALL_TRACER_ANSWER = [
    {
        "txHash": TX,
        "result": call(
            WALLET,
            sender=OWNER,
            calls=[
                call(US, ONE_ETH),
                {
                    **call(WALLET, calls=[call(US, TWO_ETH)], error="execution reverted"),
                    "revertReason": "undone",
                },
            ],
        ),
    }
]


def parity(path, to, value="0x0", call_type="call", sender=WALLET, error=None, tx=TX):
    item = {
        "action": {"from": sender, "callType": call_type, "gas": "0x0", "input": "0x", "to": to, "value": value},
        "blockHash": BLOCK,
        "blockNumber": 3,
        "result": {"gasUsed": "0x0", "output": "0x"},
        "subtraces": 0,
        "traceAddress": path,
        "transactionHash": tx,
        "transactionPosition": 0,
        "type": "call",
    }
    if error:
        item["error"] = error
    return item


TRACE_BLOCK_ANSWER = [
    parity([], WALLET, sender=OWNER),
    parity([0], US, ONE_ETH),
    parity([1], WALLET, error="Reverted"),
    parity([1, 0], US, TWO_ETH),
]


def test_a_successful_sub_call_to_us_counts_and_one_under_a_reverted_frame_does_not():
    for frames in (call_tracer_frames(CALL_TRACER_ANSWER, [TX]), parity_frames(TRACE_BLOCK_ANSWER, BLOCK, [TX])):
        found = donation_frames(frames, US)
        assert [(f.tx_hash, f.trace_address, f.sender, f.wei) for f in found] == [(TX, "0", WALLET, 10**18)]
        inner = next(f for f in frames if f.trace_address == "1.0")
        assert inner.reverted
        assert not inner.failed


def test_both_shapes_give_every_frame_the_same_path():
    debug = call_tracer_frames(CALL_TRACER_ANSWER, [TX])
    trace = parity_frames(TRACE_BLOCK_ANSWER, BLOCK, [TX])
    assert [(f.trace_address, f.to, f.wei, f.reverted) for f in debug] == [
        (f.trace_address, f.to, f.wei, f.reverted) for f in trace
    ]


def test_transfers_carry_the_frame_path_the_wallet_as_donor_and_the_column_scale():
    frames = call_tracer_frames(CALL_TRACER_ANSWER, [TX])
    (transfer,) = internal_transfers(frames, donation_address=US, eth_scale=8, block_number=3, block_hash=BLOCK)
    assert (transfer.donor, transfer.amount, transfer.trace_address, transfer.log_index) == (
        WALLET,
        Decimal("1.00000000"),
        "0",
        None,
    )


def test_a_transfer_zero_at_the_column_scale_is_not_a_donation():
    answer = [{"txHash": TX, "result": call(WALLET, sender=OWNER, calls=[call(US, "0x1")])}]
    frames = call_tracer_frames(answer, [TX])
    assert internal_transfers(frames, donation_address=US, eth_scale=8, block_number=3, block_hash=BLOCK) == []


def test_the_top_level_call_is_left_to_the_eth_detector():
    answer = [{"txHash": TX, "result": call(US, ONE_ETH, sender=OWNER)}]
    assert donation_frames(call_tracer_frames(answer, [TX]), US) == []


def test_delegatecall_staticcall_callcode_create_and_selfdestruct_are_not_counted():
    answer = [
        {
            "txHash": TX,
            "result": call(
                WALLET,
                ONE_ETH,
                sender=OWNER,
                calls=[
                    call(US, ONE_ETH, kind="DELEGATECALL"),  # value echoes the parent's
                    call(US, kind="STATICCALL"),
                    call(US, ONE_ETH, kind="CALLCODE"),
                    call(US, ONE_ETH, kind="CREATE2"),
                    call(US, ONE_ETH, kind="SELFDESTRUCT"),
                ],
            ),
        }
    ]
    assert donation_frames(call_tracer_frames(answer, [TX]), US) == []


def test_callTracer_calls_to_precompiles_without_value_take_no_index():
    # geth lists a call to ecrecover (0x01); Parity-style traces do not: the next frame is "0" in both.
    answer = [
        {
            "txHash": TX,
            "result": call(
                WALLET,
                sender=OWNER,
                calls=[call("0x0000000000000000000000000000000000000001", kind="STATICCALL"), call(US, ONE_ETH)],
            ),
        }
    ]
    (frame,) = donation_frames(call_tracer_frames(answer, [TX]), US)
    assert frame.trace_address == "0"


def test_an_older_geth_answer_without_txHash_is_named_by_position():
    answer = [{"result": item["result"]} for item in CALL_TRACER_ANSWER]
    (frame,) = donation_frames(call_tracer_frames(answer, [TX]), US)
    assert frame.tx_hash == TX


@pytest.mark.parametrize(
    "answer",
    [
        [],  # a transaction of the block is missing
        [{"txHash": TX, "error": "execution timeout"}],  # geth: the tracer gave up on this transaction
        [{"txHash": "0x" + "11" * 32, "result": call(US, sender=OWNER)}],  # another transaction
        [{"txHash": TX, "result": {"from": OWNER}}],  # no type
        [{"txHash": TX, "result": call(WALLET, sender=OWNER, calls=[call(US, "zz")])}],  # not a quantity
    ],
)
def test_a_call_tracer_answer_that_cannot_be_read_with_certainty_is_malformed(answer):
    with pytest.raises(MalformedTrace):
        call_tracer_frames(answer, [TX])


@pytest.mark.parametrize(
    "answer",
    [
        [],  # anvil answers [] for a block it does not have
        [{**TRACE_BLOCK_ANSWER[0], "blockHash": "0x" + "22" * 32}, *TRACE_BLOCK_ANSWER[1:]],  # re-orged
        TRACE_BLOCK_ANSWER[1:],  # no top-level trace
        [{**TRACE_BLOCK_ANSWER[0], "traceAddress": None}],
    ],
)
def test_a_trace_block_answer_that_does_not_cover_the_block_is_malformed(answer):
    with pytest.raises(MalformedTrace):
        parity_frames(answer, BLOCK, [TX])


def test_trace_block_rewards_are_skipped_and_create_and_suicide_are_decoded():
    reward = {
        "action": {"author": US, "rewardType": "block", "value": ONE_ETH},
        "blockHash": BLOCK,
        "blockNumber": 3,
        "result": None,
        "subtraces": 0,
        "traceAddress": [],
        "transactionHash": None,
        "transactionPosition": None,
        "type": "reward",
    }
    create = {
        **parity([0], None, ONE_ETH),
        "type": "create",
        "action": {"from": WALLET, "value": ONE_ETH, "gas": "0x0", "init": "0x"},
        "result": {"address": US, "code": "0x", "gasUsed": "0x0"},
    }
    suicide = {
        **parity([1], None),
        "type": "suicide",
        "action": {"address": WALLET, "refundAddress": US, "balance": ONE_ETH},
        "result": None,
    }
    frames = parity_frames([parity([], WALLET, sender=OWNER), create, suicide, reward], BLOCK, [TX])
    assert [(f.trace_address, f.kind, f.to) for f in frames] == [
        ("", "call", WALLET),
        ("0", "create", US),
        ("1", "selfdestruct", US),
    ]
    assert donation_frames(frames, US) == []


def test_one_transaction_traces_decode_like_the_block_ones():
    debug = transaction_frames("debug", CALL_TRACER_ANSWER[0]["result"], TX)
    trace = transaction_frames("trace", TRACE_BLOCK_ANSWER, TX)
    assert [f.trace_address for f in donation_frames(debug, US)] == ["0"]
    assert [f.trace_address for f in donation_frames(trace, US)] == ["0"]


def test_trace_block_calls_to_precompiles_without_value_take_no_index_either():
    # anvil's trace_block lists the sha256 call (0x02) as [0]; OpenEthereum-style nodes leave it out.
    sha256 = "0x0000000000000000000000000000000000000002"
    listed = [parity([], WALLET, sender=OWNER), parity([0], sha256, call_type="staticcall"), parity([1], US, ONE_ETH)]
    left_out = [parity([], WALLET, sender=OWNER), parity([0], US, ONE_ETH)]
    for answer in (listed, left_out):
        (frame,) = donation_frames(parity_frames(answer, BLOCK, [TX]), US)
        assert frame.trace_address == "0"


# --- the donation address's own money (issue #19) --------------------------------------------------------

SINGLETON, ROUTER = "0x" + "5a" * 20, "0x" + "7e" * 20


def test_eth_a_safe_like_address_gets_back_from_a_call_it_made_is_returned_not_donated():
    # The owner signs; the Safe (us) runs its singleton by delegatecall, calls a router, the router pays back.
    answer = [
        {
            "txHash": TX,
            "result": call(
                US,
                sender=OWNER,
                calls=[
                    call(
                        SINGLETON,
                        kind="DELEGATECALL",
                        sender=US,
                        calls=[call(ROUTER, sender=US, calls=[call(US, ONE_ETH, sender=ROUTER)])],
                    )
                ],
            ),
        }
    ]
    frames = call_tracer_frames(answer, [TX])

    assert donation_frames(frames, US) == []
    assert [(m.tx_hash, m.asset, m.raw, m.kind) for m in own_frames(frames, US)] == [
        (TX, "eth", 10**18, "returned to the address")
    ]


def test_a_donation_to_a_safe_like_address_stays_a_donation_though_it_delegatecalls_its_singleton():
    # A wallet pays the Safe; the Safe's proxy delegatecalls its singleton to receive: it made no call out.
    answer = [
        {
            "txHash": TX,
            "result": call(
                WALLET, sender=OWNER, calls=[call(US, ONE_ETH, calls=[call(SINGLETON, kind="DELEGATECALL", sender=US)])]
            ),
        }
    ]
    frames = call_tracer_frames(answer, [TX])

    assert [(f.trace_address, f.sender) for f in donation_frames(frames, US)] == [("0", WALLET)]
    assert own_frames(frames, US) == []


HANDLER = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266"
COIN = "0x5fbdb2315678afecb367f032d7b9f3b32f5e8d1a"


def test_value_after_a_call_the_address_was_made_to_make_is_the_donors_not_the_addresss_own():
    # A donor's contract pokes the Safe (its fallback handler is called by the Safe), then pays it ETH and a
    # coin: only what is nested under the Safe's own call would be its own money.
    answer = [
        {
            "txHash": TX,
            "result": call(
                WALLET,
                sender=OWNER,
                calls=[call(US, calls=[call(HANDLER, sender=US)]), call(US, ONE_ETH), call(COIN, sender=WALLET)],
            ),
        }
    ]
    frames = call_tracer_frames(answer, [TX])

    assert [(f.trace_address, f.sender) for f in donation_frames(frames, US)] == [("1", WALLET)]
    assert own_frames(frames, US) == []
    assert own_coin_calls(frames, US, [COIN]) == set()


def test_a_coin_its_own_call_brings_in_is_own_money_unless_the_coin_also_runs_outside_that_call():
    inside = call(US, sender=OWNER, calls=[call(COIN, sender=US, calls=[call(US, ONE_ETH, sender=COIN)])])
    frames = call_tracer_frames([{"txHash": TX, "result": inside}], [TX])
    assert own_coin_calls(frames, US, [COIN]) == {(TX, COIN)}
    assert [(m.raw, m.kind) for m in own_frames(frames, US)] == [(10**18, "returned to the address")]

    both = call(WALLET, sender=OWNER, calls=[call(US, calls=[call(COIN, sender=US)]), call(COIN)])
    assert own_coin_calls(call_tracer_frames([{"txHash": TX, "result": both}], [TX]), US, [COIN]) == set()
