"""What a transaction cost its sender, on every chain (issue #24, "the proof per chain"): the crawler's
`receipt_fee` and the public verifier's `_fee` (deploy/verify_proof.py, which cannot import project code)
give the same answer on the same receipts, in the shapes geth, op-geth, op-reth, Nitro and anvil return
(resources/fee_receipts.json, each fee worked out by hand); both refuse the same unreadable ones. Likewise
what an OP-stack deposit minted to its sender."""

from __future__ import annotations

import pytest

from crawlers.decode.amounts import UnreadableAmount
from crawlers.decode.receipts import deposit_mint, receipt_fee
from tests.crawlers.golden import answer
from tests.hostile_site import verifier_module

GOLDEN = answer("fee_receipts.json")


VERIFIER = verifier_module("verify_proof_under_test")


@pytest.mark.parametrize("case", GOLDEN["receipts"], ids=lambda c: c["name"])
def test_the_crawler_and_the_verifier_charge_a_receipt_the_same_fee(case):
    receipt = case["receipt"]
    if case["fee"] is None:
        with pytest.raises(UnreadableAmount):
            receipt_fee(receipt)
        with pytest.raises(VERIFIER.UnreadableAmount):
            VERIFIER._fee(receipt)
    else:
        assert receipt_fee(receipt) == int(case["fee"]), case["why"]
        assert VERIFIER._fee(receipt) == int(case["fee"]), case["why"]


@pytest.mark.parametrize("case", GOLDEN["deposits"], ids=lambda c: c["name"])
def test_the_crawler_and_the_verifier_read_the_same_deposit_mint(case):
    tx = case["tx"]
    if case["mint"] is None:
        with pytest.raises(UnreadableAmount):
            deposit_mint(tx)
        with pytest.raises(VERIFIER.UnreadableAmount):
            VERIFIER._mint(tx)
    else:
        assert deposit_mint(tx) == int(case["mint"]) == VERIFIER._mint(tx), case["why"]


def test_the_golden_receipts_cover_every_chain_and_refusal():
    nodes = " ".join(c["node"] for c in GOLDEN["receipts"])
    for shape in ("geth (Ethereum)", "op-geth", "op-reth", "Nitro", "anvil"):
        assert shape in nodes
    assert sum(c["fee"] is None for c in GOLDEN["receipts"]) >= 10
