"""Record the call traces of ETH bridged from L1 through the OP-stack standard bridge (the golden answers
of tests/crawlers/decode/test_bridged.py). Run it to regenerate `resources/bridged_deposits.json`:

    .venv/bin/python -m tests.crawlers.decode.record_bridged

On `anvil --network optimism` with the stand-in predeploys (tests/op_stack.py `install_bridge`: each behind a
proxy, as on Base and OP Mainnet), four deposits, each traced with `debug_traceTransaction` (callTracer) and
`trace_transaction`: a donor bridging ETH to the donation address by `finalizeBridgeETH` and by the legacy
`finalizeDeposit`, the donation address bridging its own ETH to itself, and a payment from the bridge that
no relayed deposit explains (anyone calling the stand-in's `payOut`). What each case must decode to is
written from what this script did (who bridged, to whom, at which frame), never from our decoders.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER, Anvil
from tests.op_stack import L2_STANDARD_BRIDGE, bridge_eth, install_bridge

RESOURCES = Path(__file__).resolve().parent / "resources"
DONOR = ACCOUNTS[1]
OWN = "the address's own money"
# The frame that pays the address: deposit -> messenger proxy -> (delegatecall) messenger -> bridge proxy ->
# (delegatecall) bridge -> the address; and an account calling the bridge proxy directly -> (delegatecall) -> it.
RELAYED_PATH, DIRECT_PATH = "0.0.0.0", "0.0"


def _case(node: Anvil, name: str, why: str, tx: str, path: str, donor: str) -> dict:
    receipt = node.receipt(tx)
    assert receipt["status"] == "0x1", name
    return {
        "name": name,
        "why": why,
        "tx_hash": tx,
        "block_hash": receipt["blockHash"],
        "path": path,
        "donor": donor,
        "callTracer": node.rpc("debug_traceTransaction", tx, {"tracer": "callTracer"}),
        "trace_transaction": node.rpc("trace_transaction", tx),
    }


def record(node: Anvil) -> dict:
    install_bridge(node)
    bridged = bridge_eth(node, DONOR, DONATION_ADDRESS, ETHER, source=1)
    legacy = bridge_eth(node, DONOR, DONATION_ADDRESS, 2 * ETHER, source=2, legacy=True)
    own = bridge_eth(node, DONATION_ADDRESS, DONATION_ADDRESS, 3 * ETHER, source=3)
    pay_out = {"from": DONOR, "to": L2_STANDARD_BRIDGE, "value": hex(ETHER // 2), "gas": hex(200_000)}
    paid = node.send({**pay_out, "data": node.call_data("payOut(address)", ["address"], [DONATION_ADDRESS])})
    cases = [
        ("finalizeBridgeETH", "bridgeETHTo or depositETH on L1: the donor is _from", bridged, RELAYED_PATH, DONOR),
        ("finalizeDeposit", "the legacy relayed call, the ETH placeholder token: _from", legacy, RELAYED_PATH, DONOR),
        ("own", "the address bridged its own ETH to itself: not a donation", own, RELAYED_PATH, OWN),
        ("payOut", "a payment no relayed deposit explains: the bridge", paid, DIRECT_PATH, L2_STANDARD_BRIDGE),
    ]
    return {
        "donation_address": DONATION_ADDRESS,
        "l2_standard_bridge": L2_STANDARD_BRIDGE,
        "cases": [_case(node, *case) for case in cases],
    }


def main() -> None:
    with Anvil(extra_args=["--network", "optimism"]) as node:
        recorded = record(node)
    (RESOURCES / "bridged_deposits.json").write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    print(f"recorded {len(recorded['cases'])} bridged deposits into {RESOURCES}")


if __name__ == "__main__":
    main()
