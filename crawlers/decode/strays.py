"""Transfers at the donation address that are not the sale's: coins it does not take, and what leaves it.

Pure functions over `eth_getLogs` answers, block transactions and call frames (no I/O):

* `foreign_arrivals`: the Transfer logs to the address of any token that is not one of its donation coins.
  A well-known token (the chain's DWS_STRAY_TOKENS: DAI, USDC.e, WETH, ...) with a sender and a non-zero
  amount is a *stray transfer* (`stray_transfer`), owed back to its sender once its block shows it and it
  is not the address's own money (crawlers/scan/strays.py); everything else (airdrop spam, address-poisoning
  tokens, zero-value transfers, a mint with no sender, a log that is not a plain ERC-20 Transfer) is only
  counted, per contract: anyone can emit a Transfer event naming us, and a row for each would let them
  fill the register.
* `token_payouts`, `eth_payouts`, `frame_payouts`: value leaving the address to someone else (a token's
  Transfer log from it; ETH by a transaction it sent; ETH by a call it made, as a Safe pays): what may pay
  an owed refund (donations/refunds.py matches it).

Nothing here changes what is credited: the donation coins' logs are decoded by crawlers/decode/transfers.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from crawlers.chain.calls import TRANSFER_TOPIC
from crawlers.decode.frames import Frame
from crawlers.decode.transfers import ZERO_ADDRESS, EthMove, topic_address
from donations.refund_values import ETH_TOKEN, Payout, StrayTransfer, Token

_WORD = re.compile(r"0x[0-9a-fA-F]{64}")
_TOPIC = re.compile(r"0x[0-9a-fA-F]{64}")


@dataclass(frozen=True)
class TransferLog:
    """A log read as a plain ERC-20 Transfer: three topics, a one-word amount."""

    contract: str
    tx_hash: str
    log_index: int
    block_number: int
    sender: str
    recipient: str
    raw: int


def transfer_log(log: dict) -> TransferLog | None:
    """`log` as an ERC-20 Transfer, or None for anything else (an ERC-721 Transfer has its token id in a fourth
    topic and no data; a removed log; a field that is not what the node always sends)."""
    topics = log.get("topics")
    data, tx_hash = log.get("data"), log.get("transactionHash")
    if log.get("removed") or not isinstance(topics, list) or len(topics) != 3:
        return None
    if not all(isinstance(t, str) and _TOPIC.fullmatch(t) for t in topics) or topics[0].lower() != TRANSFER_TOPIC:
        return None
    if not isinstance(data, str) or not _WORD.fullmatch(data) or not isinstance(tx_hash, str):
        return None
    try:
        log_index, block_number = int(log["logIndex"], 16), int(log["blockNumber"], 16)
    except (KeyError, TypeError, ValueError):
        return None
    return TransferLog(
        contract=str(log.get("address") or "").lower(),
        tx_hash=tx_hash.lower(),
        log_index=log_index,
        block_number=block_number,
        sender=topic_address(topics[1]),
        recipient=topic_address(topics[2]),
        raw=int(data, 16),
    )


@dataclass(frozen=True)
class ForeignArrivals:
    """What `foreign_arrivals` found: the stray transfers owed back, and per (block, contract) how many other
    Transfers named the address (counted, never recorded one by one)."""

    strays: list[StrayTransfer]
    counted: dict[tuple[int, str], int]


def stray_transfer(log: dict, stray_tokens: Mapping[str, Token], donation_address: str) -> StrayTransfer | None:
    """`log` as a stray transfer: a stray token's (by contract) Transfer to the address, from a sender other
    than the address itself and the zero address, non-zero, not taken back by a re-org; else None."""
    found = transfer_log(log)
    token = stray_tokens.get(found.contract) if found is not None else None
    if (
        found is None
        or token is None
        or found.recipient != donation_address
        or found.sender in (donation_address, ZERO_ADDRESS)
        or found.raw <= 0
    ):
        return None
    return StrayTransfer(found.tx_hash, found.log_index, found.block_number, found.sender, token, found.raw)


def foreign_arrivals(logs: Iterable[dict], stray_tokens: Mapping[str, Token], donation_address: str) -> ForeignArrivals:
    """The Transfer logs to the address of tokens that are not its donation coins (the caller leaves those
    out): the stray transfers (`stray_transfer`) are owed back; the rest is counted per block and contract."""
    strays: list[StrayTransfer] = []
    counted: dict[tuple[int, str], int] = {}
    for log in logs:
        if log.get("removed"):
            continue  # taken back by a re-org: it never happened on this chain
        stray = stray_transfer(log, stray_tokens, donation_address)
        if stray is not None:
            strays.append(stray)
            continue
        found = transfer_log(log)
        where = found.block_number if found is not None else _block_of(log)
        contract = found.contract if found is not None else str(log.get("address") or "").lower()[:42]
        counted[(where, contract)] = counted.get((where, contract), 0) + 1
    return ForeignArrivals(strays, counted)


def _block_of(log: dict) -> int:
    try:
        return int(log.get("blockNumber") or "0x0", 16)
    except (TypeError, ValueError):
        return 0


def token_payouts(logs: Iterable[dict], tokens: Mapping[str, Token], donation_address: str) -> list[Payout]:
    """Transfer logs from the address, of a token it may owe (`tokens` by contract: its coins and stray
    tokens), to someone else, non-zero."""
    found = []
    for log in logs:
        moved = transfer_log(log)
        if moved is None or moved.sender != donation_address or moved.recipient == donation_address:
            continue
        token = tokens.get(moved.contract)
        if token is None or not token.contract or moved.raw <= 0:
            continue
        found.append(Payout(moved.tx_hash, moved.log_index, "", moved.block_number, moved.recipient, token, moved.raw))
    return found


def eth_payouts(moves: Sequence[EthMove], succeeded: Mapping[str, bool], donation_address: str) -> list[Payout]:
    """ETH the address sent by its own transactions (`succeeded` by hash: what their receipts say) to
    someone else: value > 0, not a contract creation, not to itself."""
    return [
        Payout(m.tx_hash, None, "", m.block_number, m.to, ETH_TOKEN, m.wei)
        for m in moves
        if m.sender == donation_address
        and m.to not in ("", donation_address)
        and m.wei > 0
        and succeeded.get(m.tx_hash)
    ]


def frame_payouts(frames: Iterable[Frame], donation_address: str, block_number: int) -> list[Payout]:
    """ETH the address sent by a call it made (a Safe's execution, a MultiSend's calls), below the top level,
    in frames that stand (neither failed nor under one that failed), to someone else."""
    return [
        Payout(f.tx_hash, None, f.trace_address, block_number, f.to, ETH_TOKEN, f.wei)
        for f in frames
        if f.path
        and not f.reverted
        and f.wei > 0
        and f.kind == "call"
        and f.sender == donation_address
        and f.to != donation_address
    ]
