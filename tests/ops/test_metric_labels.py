"""Hold reasons and dropped-quote reasons become a small fixed set of labels (free text would make a
new series per block number)."""

from __future__ import annotations

import pytest

from dws_project.metrics import drop_reason, held_reason


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("provider gave no evidence: eth_blockNumber: timeout (http://x: ReadTimeout)", "no-evidence"),
        ("block: 7 -- no block from the provider (null: http://x returned null); if this persists", "no-evidence"),
        ("block: 7 -- no Transfer logs for blocks 7..9 (eth_getLogs: error (code -32000))", "no-evidence"),
        ("block: 7 -- no tx receipt for tx '0xab' (0 usable receipt(s) for 1 tx(s))", "no-evidence"),
        (
            "block: 7 -- no ETH price within 1.5 minutes of 2026-11-30 18:00 UTC; a price request is filed",
            "price-missing",
        ),
        ("block: 7 -- block does not build on the previous one fetched (re-org under way)", "reorg"),
        ("finalized block 8 does not build on the finalized block 7 we recorded", "finalized-mismatch"),
        ("block: 7 -- DWS_BLOCK_CACHE: could not write the block (disk full)", "block-cache"),
        ("block: 7 -- the provider's block is malformed (wrong number, no hash or no transactions)", "malformed"),
        ("provider's latest block 5 is behind our cursor 9 (lagging or re-syncing node); waiting", "node-behind"),
        ("shutdown requested; stopped between blocks at 120, the next run continues", "shutdown"),
        (
            "block: 7 -- the usdt balance rose by 250000000 raw units more than the Transfer logs show and the block's "
            "logsBloom says a Transfer involving us may be there: eth_getLogs answered short, retrying",
            "logs-short",
        ),
        (
            "block: 7 -- no balance evidence for blocks 7..9 (eth_getBalance: timeout (http://x: ReadTimeout))",
            "no-evidence",
        ),
        (
            "block: 7 -- 5 raw units of usdt left the donation address that no transaction or log shows",
            "balance-mismatch",
        ),
        ("block: 7 -- the donation address's nonce moved by 1 more than the transactions it sent", "balance-mismatch"),
        (
            "block: 7 -- ETH arrived that no transaction explains and the call traces gave no evidence (x)",
            "no-evidence",
        ),
        (
            "block: 7 -- the receipt of tx '0xab', sent by the donation address, does not say readably what it cost: "
            "its l1Fee is '0xzz', not a hex quantity",
            "malformed",
        ),
        (
            "block: 7 -- tx '0xab', sent by the donation address, is unreadable in its block: its mint is 'x', not a "
            "hex quantity",
            "malformed",
        ),
        (
            "block: 7 -- the block and the receipt of tx '0xab', sent by the donation address, disagree on whether it "
            "is an OP-stack deposit",
            "malformed",
        ),
        ("another run of the latest crawler (eth) holds its PostgreSQL lock; skipped", "overlap"),
        ("block: 7 -- another session holds the PostgreSQL lock of finalized (eth); nothing of the block", "overlap"),
        ("something new", "other"),
    ],
)
def test_a_hold_is_labelled_by_what_it_asks_of_an_operator(text, label):
    assert held_reason(text) == label


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("timed out", "no-quote"),
        ("non-positive price 0", "non-positive"),
        ("cycle below quorum", "below-quorum"),
        ("deviates 3.10% from the median 2000", "deviation"),
        ("too few quotes survived the deviation check", "too-few-survived"),
    ],
)
def test_a_dropped_quote_is_labelled_by_its_reason(text, label):
    assert drop_reason(text) == label
