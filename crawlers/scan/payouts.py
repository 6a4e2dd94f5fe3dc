"""Payouts: value that left the donation address to someone else in a scanned block, for the refund register
(a finalized block hands them to donations/refunds.py, which marks paid the owed refund each one matches).

What a refund is paid by, as the chain shows it (crawlers/decode/strays.py decides):

* ETH sent by a transaction of the address's own (an externally owned treasury), its receipt a success;
* ETH sent by a call the address made (a Safe executing a batch: the MultiSend's calls), from its traces
  (crawlers/scan/with_code.py adds those, where an address with code has its calls read);
* a token's Transfer log from the address: a donation coin's or a stray token's (DAI, USDC.e, ...).

Nothing here is a flow of the balance proof (crawlers/scan/flows.py accounts those) or a donation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from crawlers.chain.outcomes import Answer, RpcOutcome
from crawlers.decode.receipts import receipt_succeeded
from crawlers.decode.strays import eth_payouts, token_payouts
from crawlers.decode.transfers import EthMove
from crawlers.scan.results import ScannedBlock
from donations.refund_values import chain_tokens
from dws_project.chain_settings import ChainSettings


def _number(log: dict) -> int:
    try:
        return int(log.get("blockNumber") or "0x0", 16)
    except (TypeError, ValueError):
        return -1


def account_payouts(
    chain: ChainSettings,
    scanned: dict[int, ScannedBlock],
    from_us: Sequence[dict],
    moves: Sequence[EthMove],
    receipts: Mapping[str, RpcOutcome],
) -> None:
    """Put each scanned block's transfers out of the address (its tokens' logs `from_us`, its transactions'
    ETH in `moves`, proven by `receipts`) into its `payouts`."""
    us = chain.donation_address
    # A log of another block than the one scanned (a re-org between our requests) pays nothing here.
    here = [
        log
        for log in from_us
        if (block := scanned.get(_number(log))) is not None
        and str(log.get("blockHash") or "").lower() == block.header.hash.lower()
    ]
    for payout in token_payouts(here, chain_tokens(chain), us):
        block = scanned.get(payout.block_number)
        if block is not None:
            block.payouts.append(payout)
    succeeded = {}
    for move in moves:
        outcome = receipts.get(move.tx_hash)
        if move.sender == us and isinstance(outcome, Answer):
            succeeded[move.tx_hash] = receipt_succeeded(outcome.value, move.block_hash) is True
    for payout in eth_payouts(moves, succeeded, us):
        block = scanned.get(payout.block_number)
        if block is not None:
            block.payouts.append(payout)
