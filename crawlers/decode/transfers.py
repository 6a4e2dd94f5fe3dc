"""What counts as a donation, as pure functions from JSON-RPC objects to frozen values.

Nothing here talks to the node or the database. Two kinds of donation found here (internal ETH
transfers come from call frames, crawlers/decode/frames.py):

* native ETH: a transaction whose `to` is the donation address, with a receipt of status 1;
* ERC-20: a `Transfer` log of a configured coin whose recipient is the donation address. A Transfer
  log exists only for a transfer that happened, whoever called the token (a direct `transfer`,
  `transferFrom`, a Safe, an ERC-4337 account), so the donor is the Transfer's `from`.

Amounts are written at the scale of `donation.amount` (ETH at 8 decimals), rounded down: we never
record more than arrived. A transfer that is zero at that scale is not a donation.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from crawlers.chain.calls import TRANSFER_TOPIC
from crawlers.decode.amounts import ETH_DECIMALS, log_amount, scaled_amount
from donations.sightings import Transfer
from dws_project.config import StableCoin


@dataclass(frozen=True)
class EthCandidate:
    """A transaction sending ETH to the donation address; a donation only if its receipt says status 1."""

    tx_hash: str
    sender: str
    wei: int
    block_number: int
    block_hash: str


def eth_candidates(block: dict, donation_address: str, eth_scale: int) -> list[EthCandidate]:
    """Transactions of a full block (`eth_getBlockByNumber(n, true)`) that send ETH to us.

    Transfers that would be written down as zero (1 wei, or 0 value) are left out here, before any
    receipt is asked for.
    """
    number = int(block["number"], 16)
    block_hash = block["hash"].lower()
    found = []
    for tx in block.get("transactions") or ():
        if not isinstance(tx, dict) or (tx.get("to") or "").lower() != donation_address:
            continue
        wei = int(tx.get("value") or "0x0", 16)
        if scaled_amount(wei, ETH_DECIMALS, eth_scale) == 0:
            continue
        found.append(EthCandidate(tx["hash"].lower(), tx["from"].lower(), wei, number, block_hash))
    return found


def eth_transfer(candidate: EthCandidate, eth_scale: int) -> Transfer:
    return Transfer(
        tx_hash=candidate.tx_hash,
        log_index=None,
        donor=candidate.sender,
        asset="eth",
        amount=scaled_amount(candidate.wei, ETH_DECIMALS, eth_scale),
        block_number=candidate.block_number,
        block_hash=candidate.block_hash,
    )


def topic_address(topic: str) -> str:
    return "0x" + topic[-40:].lower()


def token_transfers(
    logs: Iterable[dict], coins: Sequence[StableCoin], donation_address: str, coin_scale: int
) -> list[Transfer]:
    """Transfer logs of the configured coins that pay the donation address, non-zero at `coin_scale`."""
    by_contract = {coin.contract: coin for coin in coins}
    found = []
    for log in logs:
        coin = by_contract.get((log.get("address") or "").lower())
        topics = log.get("topics") or []
        if coin is None or log.get("removed") or len(topics) != 3 or topics[0].lower() != TRANSFER_TOPIC:
            continue
        if topic_address(topics[2]) != donation_address:
            continue
        amount = scaled_amount(log_amount(log), coin.scale, coin_scale)
        if amount == 0:
            continue
        found.append(
            Transfer(
                tx_hash=log["transactionHash"].lower(),
                log_index=int(log["logIndex"], 16),
                donor=topic_address(topics[1]),
                asset=coin.asset,
                amount=amount,
                block_number=int(log["blockNumber"], 16),
                block_hash=log["blockHash"].lower(),
            )
        )
    return found


@dataclass(frozen=True)
class EthMove:
    """A transaction sending ETH to the donation address, or any transaction sent from it: what moves
    the address's ETH balance and nonce at the top level (the balance proof's raw flows)."""

    tx_hash: str
    sender: str
    to: str
    wei: int
    block_number: int
    block_hash: str


def eth_moves(block: dict, donation_address: str) -> list[EthMove]:
    """The transactions of a full block that move ETH at the donation address (or spend from it)."""
    number, block_hash = int(block["number"], 16), block["hash"].lower()
    found = []
    for tx in block.get("transactions") or ():
        if not isinstance(tx, dict):
            continue
        sender, to = (tx.get("from") or "").lower(), (tx.get("to") or "").lower()
        wei = int(tx.get("value") or "0x0", 16)
        if sender == donation_address or (to == donation_address and wei > 0):
            found.append(EthMove(tx["hash"].lower(), sender, to, wei, number, block_hash))
    return found
