"""Flow accounting: what each scanned block's logs and receipts say arrived at the donation address and
left it (raw units, for the balance proof), and which of it is a donation."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from crawlers.chain.outcomes import Answer, NoEvidence, RpcOutcome
from crawlers.decode.amounts import UnreadableAmount, log_amount, log_block_number
from crawlers.decode.balances import ETH, NONCE
from crawlers.decode.receipts import is_deposit, receipt_fee, receipt_succeeded
from crawlers.decode.transfers import (
    BRIDGED,
    SELF_TRANSFER,
    Depositors,
    EthCandidate,
    EthMove,
    Movement,
    eth_transfer,
    token_movements,
    token_transfers,
)
from crawlers.scan.results import BlockHeld, ScannedBlock
from donations.sightings import amount_scale
from dws_project.chain_settings import ChainSettings

logger = logging.getLogger("dws.crawlers")


def account_logs(
    chain: ChainSettings,
    scanned: dict[int, ScannedBlock],
    to_us: list[dict],
    from_us: list[dict],
    last: int,
    signed: set[str] | frozenset[str] = frozenset(),
    *,
    depositors: Depositors | None = None,
) -> BlockHeld | None:
    """The coins' flows and Transfer donations of the range's logs; a hold at the earliest block a log names
    that we did not scan (a re-org between our requests), the blocks before it accounted in full (they are
    recorded). What arrives from the address itself, or in a transaction it `signed`, is its own money: a
    movement, not a donation. A coin minted to the address is the donation of the depositor `depositors`
    names (crawlers/decode/mints.py), else a movement."""
    held: BlockHeld | None = None
    for log in (*to_us, *from_us):
        number, block_hash = log_block_number(log), (log.get("blockHash") or "").lower()
        block = scanned.get(number)
        if (block is None or block.header.hash != block_hash) and (held is None or min(number, last) < held.number):
            tx = (log.get("transactionHash") or "").lower()
            held = BlockHeld(
                min(number, last), f"Transfer log of tx '{tx}' names another block hash (re-org under way)"
            )
    if held is not None:  # every log of a block before the hold names a block we scanned
        to_us = [log for log in to_us if log_block_number(log) < held.number]
        from_us = [log for log in from_us if log_block_number(log) < held.number]
    coins = {c.contract: c.asset for c in chain.stable_coins}
    for logs, sign in ((to_us, 1), (from_us, -1)):
        for log in logs:
            block = scanned[log_block_number(log)]
            asset = coins.get((log.get("address") or "").lower())
            if asset is not None and not log.get("removed"):
                block.add_flow(asset, sign * log_amount(log))
    us = chain.donation_address
    for transfer in token_transfers(to_us, chain.stable_coins, us, amount_scale("usdt"), signed, depositors):
        scanned[transfer.block_number].transfers.append(transfer)
    blocks_of = {(log.get("transactionHash") or "").lower(): log_block_number(log) for log in to_us}
    for movement in token_movements(to_us, chain.stable_coins, us, signed, depositors):
        scanned[blocks_of[movement.tx_hash]].own.append(movement)
    return held


def account_receipts(
    chain: ChainSettings,
    scanned: dict[int, ScannedBlock],
    candidates: Sequence[EthCandidate],
    moves: Sequence[EthMove],
    receipts: Mapping[str, RpcOutcome],
) -> BlockHeld | None:
    """The ETH flows (value and fees, and what a deposit the address made minted to it) and ETH donations
    the receipts prove; a hold at the first transaction whose receipt says neither success nor revert for
    the block we scanned, or, for one the address sent, not readably what it cost."""
    us = chain.donation_address
    recordable = {c.tx_hash: c for c in candidates}
    for move in moves:
        outcome = receipts[move.tx_hash]
        receipt = outcome.value if isinstance(outcome, Answer) else None
        succeeded = receipt_succeeded(receipt, move.block_hash)
        if succeeded is None or not isinstance(receipt, dict):  # a receipt that proves either is an object
            why = (
                outcome.describe() if isinstance(outcome, NoEvidence) else "receipt of another block or without status"
            )
            logger.warning("receipt of tx %s in block %d unusable: %s", move.tx_hash, move.block_number, why)
            usable = _usable(moves, receipts, move.block_number)
            count = sum(m.block_number == move.block_number for m in moves)
            return BlockHeld(
                move.block_number,
                f"no tx receipt for tx '{move.tx_hash}' ({usable} usable receipt(s) for {count} tx(s))",
            )
        block = scanned[move.block_number]
        if move.sender == us:
            cost = _cost(move, receipt)
            if isinstance(cost, BlockHeld):
                return cost
            block.add_flow(NONCE, 1)  # a deposit it made moves its nonce too, even one that failed
            block.add_flow(ETH, -(move.wei if succeeded else 0) - cost)
            if move.mint:  # minted to it from L1 whether the deposit succeeded or not: its own money
                block.add_flow(ETH, move.mint)
                block.own.append(Movement(move.tx_hash, ETH, move.mint, BRIDGED))
        if move.to == us and succeeded:
            block.add_flow(ETH, move.wei)
            if move.sender == us and move.wei > 0:
                block.own.append(Movement(move.tx_hash, ETH, move.wei, SELF_TRANSFER))
        candidate = recordable.get(move.tx_hash)
        if candidate is None:
            continue
        if succeeded:
            block.transfers.append(eth_transfer(candidate, amount_scale("eth")))
        else:
            block.reverted.append(candidate.tx_hash)
    return None


def _cost(move: EthMove, receipt: dict) -> int | BlockHeld:
    """What a transaction the donation address sent cost it (`receipt_fee`, every chain's rules), or a hold
    where the block or the receipt does not say it readably: a type, mint or fee field that is not a
    quantity, or the block and the receipt disagreeing on whether it is a deposit (which pays no fee)."""
    sent = f"tx '{move.tx_hash}', sent by the donation address"
    try:
        if move.unreadable:
            reason = f"{sent}, is unreadable in its block: {move.unreadable}"
        elif is_deposit(receipt) != move.deposit:
            reason = f"the block and the receipt of {sent} disagree on whether it is an OP-stack deposit"
        else:
            return receipt_fee(receipt)
    except UnreadableAmount as exc:
        reason = f"the receipt of {sent} does not say readably what it cost: {exc}"
    logger.warning("block %d: %s", move.block_number, reason)
    return BlockHeld(move.block_number, reason)


def _usable(moves: Sequence[EthMove], receipts: Mapping[str, RpcOutcome], number: int) -> int:
    """How many of block `number`'s receipts we did get (for the stuck line)."""
    return sum(
        receipt_succeeded(outcome.value, m.block_hash) is not None
        for m in moves
        if m.block_number == number and isinstance(outcome := receipts[m.tx_hash], Answer)
    )
