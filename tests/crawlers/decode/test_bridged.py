"""ETH bridged from L1 through the OP-stack standard bridge: who sent it (resources/bridged_deposits.json,
recorded by record_bridged.py on anvil with the stand-in predeploys; what each must decode to is what the
recording did).

On L2 the ETH reaches its recipient in a CALL from L2StandardBridge (0x4200...0010), under the relayed
`finalizeBridgeETH(_from, _to, _amount, _extraData)` (or the legacy `finalizeDeposit`) call from
L2CrossDomainMessenger. The donor is `_from`, the L1 account that bridged it, never the bridge contract;
`_from` being the donation address makes it the address's own money (an internal movement, "bridged by the
address"). Whatever does not decode cleanly stays as before: the bridge contract is the donor, never an
exception, never dropped. Both trace shapes (callTracer and trace_transaction) give the same answer, and the
public verifier (deploy/verify_proof.py, which cannot import project code) gives it too.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from crawlers.decode.frames import internal_transfers, own_frames, transaction_frames
from tests.crawlers.decode.test_fees import VERIFIER
from tests.crawlers.golden import answer

GOLDEN = answer("bridged_deposits.json")
US = GOLDEN["donation_address"]
BRIDGE = GOLDEN["l2_standard_bridge"]
MESSENGER = "0x4200000000000000000000000000000000000007"
OWN = "the address's own money"
CASES = {case["name"]: case for case in GOLDEN["cases"]}
SOMEONE = "0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc"


def _word(value: int) -> str:
    return f"{value:064x}"


def _relayed_frames(case: dict) -> list[dict]:
    """The relayed call into the bridge in both shapes (the callTracer frame, the trace_transaction action):
    the CALL to the bridge proxy, which carries the finalize calldata."""
    found = []

    def walk(frame: dict) -> None:
        if frame.get("type") == "CALL" and frame.get("to") == BRIDGE:
            found.append(frame)
        for child in frame.get("calls") or []:
            walk(child)

    walk(case["callTracer"])
    found += [
        item["action"]
        for item in case["trace_transaction"]
        if item["action"].get("callType") == "call" and item["action"].get("to") == BRIDGE
    ]
    assert len(found) == 2, case["name"]
    return found


def _rewritten(case: dict, change: Callable[[dict], None]) -> dict:
    changed = copy.deepcopy(case)
    for frame in _relayed_frames(changed):
        change(frame)
    return changed


def _input(edit: Callable[[str], str]) -> Callable[[dict], None]:
    def change(frame: dict) -> None:
        frame["input"] = edit(frame["input"])

    return change


def _set_word(index: int, value: str) -> Callable[[str], str]:
    def edit(data: str) -> str:
        start = 10 + 64 * index
        return data[:start] + value + data[start + 64 :]

    return edit


def _sender(frame: dict) -> None:
    frame["from"] = SOMEONE


def _no_input(frame: dict) -> None:
    del frame["input"]


def _null_input(frame: dict) -> None:
    frame["input"] = None


# What does not decode cleanly, each made from a recorded case: the bridge contract stays the donor.
UNREADABLE: dict[str, tuple[str, Callable[[dict], None]]] = {
    "truncated": ("finalizeBridgeETH", _input(lambda d: d[: 10 + 64 * 3])),
    "short head": ("finalizeBridgeETH", _input(lambda d: d[:74])),
    "odd length": ("finalizeBridgeETH", _input(lambda d: d + "0")),
    "not hex": ("finalizeBridgeETH", _input(lambda d: d[:-2] + "zz")),
    "no 0x": ("finalizeBridgeETH", _input(lambda d: d[2:])),
    "no input": ("finalizeBridgeETH", _no_input),
    "null input": ("finalizeBridgeETH", _null_input),
    "another selector": ("finalizeBridgeETH", _input(lambda d: "0x0166a07a" + d[10:])),  # finalizeBridgeERC20
    "dirty _from": (
        "finalizeBridgeETH",
        _input(_set_word(0, "ff" + "0" * 22 + CASES["finalizeBridgeETH"]["donor"][2:])),
    ),
    "_to another": ("finalizeBridgeETH", _input(_set_word(1, "0" * 24 + SOMEONE[2:]))),
    "_amount another": ("finalizeBridgeETH", _input(_set_word(2, _word(10**18 + 1)))),
    "bytes past the end": ("finalizeBridgeETH", _input(_set_word(3, _word(0x1000)))),
    "not from the messenger": ("finalizeBridgeETH", _sender),
    "legacy, a token": ("finalizeDeposit", _input(_set_word(0, "0" * 24 + SOMEONE[2:]))),
    "legacy, another l2 token": ("finalizeDeposit", _input(_set_word(1, "0" * 24 + SOMEONE[2:]))),
    "own, truncated": ("own", _input(lambda d: d[: 10 + 64 * 2])),
}


def _frames(case: dict, shape: str) -> list[Any]:
    if shape == "callTracer":
        return transaction_frames("debug", case["callTracer"], case["tx_hash"])
    return transaction_frames("trace", case["trace_transaction"], case["tx_hash"], case["block_hash"].lower())


def _crawler_reads(case: dict, shape: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """What the crawler makes of the transaction: its donations (frame, donor) and its own movements."""
    frames = _frames(case, shape)
    donations = internal_transfers(frames, donation_address=US, eth_scale=8, block_number=1, block_hash="0x")
    own = own_frames(frames, US)
    return [(t.trace_address or "", t.donor) for t in donations], [(m.tx_hash, m.kind) for m in own]


def _verifier_reads(case: dict) -> str:
    return VERIFIER._sender(case["callTracer"], [int(i) for i in case["path"].split(".")])


@pytest.mark.parametrize("shape", ["callTracer", "trace_transaction"])
@pytest.mark.parametrize("name", list(CASES))
def test_the_crawler_and_the_verifier_name_the_same_sender_of_bridged_eth(name, shape):
    case = CASES[name]
    donations, own = _crawler_reads(case, shape)

    if case["donor"] == OWN:
        assert donations == [], case["why"]
        assert own == [(case["tx_hash"], "bridged by the address")], case["why"]
        assert _verifier_reads(case) == US
    else:
        assert donations == [(case["path"], case["donor"])], case["why"]
        assert own == [], case["why"]
        assert _verifier_reads(case) == case["donor"]


@pytest.mark.parametrize("shape", ["callTracer", "trace_transaction"])
@pytest.mark.parametrize("name", list(UNREADABLE))
def test_a_relayed_call_that_does_not_decode_cleanly_leaves_the_bridge_the_donor(name, shape):
    recorded, change = UNREADABLE[name]
    case = _rewritten(CASES[recorded], change)

    donations, own = _crawler_reads(case, shape)  # never raises

    assert donations == [(case["path"], BRIDGE)]
    assert own == []
    assert _verifier_reads(case) == BRIDGE


def test_the_relayed_call_is_recorded_from_the_messenger_with_the_finalize_calldata():
    """The recording is what the rule reads: the messenger's CALL into the bridge proxy carries the
    finalize calldata (the same as the proxy's DELEGATECALL to its implementation), with the value."""
    for name in ("finalizeBridgeETH", "finalizeDeposit", "own"):
        for frame in _relayed_frames(CASES[name]):
            assert frame["from"] == MESSENGER
            assert frame["input"][:10] in ("0x1635f5fd", "0x662a633a")
