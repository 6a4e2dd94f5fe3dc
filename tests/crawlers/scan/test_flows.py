"""Flow accounting on the recorded block of tests/crawlers/decode/resources: what the logs and receipts
explain, plus the two traced frames, is exactly the balance change the recorded balances show."""

from __future__ import annotations

from crawlers.chain.outcomes import Answer
from crawlers.decode.balances import balances_from
from crawlers.decode.blocks import block_header
from crawlers.decode.receipts import receipt_fee
from crawlers.decode.transfers import eth_candidates, eth_moves
from crawlers.scan.flows import account_logs, account_receipts
from crawlers.scan.results import ScannedBlock
from tests.crawlers.golden import BLOCK, ETH_SCALE, EXPECTED, RECEIPTS, answer, golden_chain

CHAIN = golden_chain()


def test_the_flows_of_logs_and_receipts_leave_only_the_internal_donations_unexplained():
    """The balance proof's arithmetic on the recorded block: what logs and receipts explain, plus the two
    traced frames, is exactly the balance change; and the fee it charges is what the balances lost."""
    header = block_header(BLOCK)
    scanned = {header.number: ScannedBlock(header=header)}
    to_us, from_us = answer("eth_getLogs.json")
    candidates = eth_candidates(BLOCK, CHAIN.donation_address, ETH_SCALE)
    moves = eth_moves(BLOCK, CHAIN.donation_address)

    assert account_logs(CHAIN, scanned, to_us, from_us, header.number) is None
    held = account_receipts(CHAIN, scanned, candidates, moves, {h: Answer(r) for h, r in RECEIPTS.items()})

    assert held is None
    batches = answer("balances.json")
    before = balances_from(CHAIN, header.number - 1, [Answer(v) for v in batches["before"]])
    after = balances_from(CHAIN, header.number, [Answer(v) for v in batches["after"]])
    residual = {a: after.values[a] - before.values[a] - scanned[header.number].flows.get(a, 0) for a in before.values}
    assert residual == {"eth": sum(d["wei"] for d in EXPECTED["internal_donations"]), "nonce": 0, "usdt": 0, "usdc": 0}
    assert receipt_fee(RECEIPTS[EXPECTED["sent"]["tx_hash"]]) > 0
    assert [t.tx_hash for t in scanned[header.number].transfers] == [
        EXPECTED["usdt_donation"]["tx_hash"],
        EXPECTED["eth_donation"]["tx_hash"],
    ]
