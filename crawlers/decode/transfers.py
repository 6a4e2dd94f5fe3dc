"""What counts as a donation, as pure functions from JSON-RPC objects to frozen values.

Nothing here talks to the node or the database. Two kinds of donation:

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
from datetime import UTC, datetime
from decimal import ROUND_DOWN, Decimal

from dws_project.config import StableCoin

# keccak("Transfer(address,address,uint256)")
TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"
ETH_DECIMALS = 18


@dataclass(frozen=True)
class BlockHeader:
    number: int
    hash: str
    parent_hash: str
    time: datetime


@dataclass(frozen=True)
class Transfer:
    """A donation as the chain shows it, before any price or token count is applied."""

    tx_hash: str
    log_index: int | None  # None for native ETH
    donor: str  # lower case
    asset: str
    amount: Decimal
    block_number: int
    block_hash: str
    # ETH moved by an internal call: the call frame's position in its transaction's call tree (see
    # crawlers/scan/traces.py); None for a top-level ETH transaction and for coin Transfer logs.
    trace_address: str | None = None


@dataclass(frozen=True)
class EthCandidate:
    """A transaction sending ETH to the donation address; a donation only if its receipt says status 1."""

    tx_hash: str
    sender: str
    wei: int
    block_number: int
    block_hash: str


def scaled_amount(raw: int, decimals: int, scale: int) -> Decimal:
    """`raw` smallest units of a token with `decimals`, written at `scale` decimals (rounded down)."""
    quantum = Decimal(1).scaleb(-scale)
    return (Decimal(raw).scaleb(-decimals)).quantize(quantum, rounding=ROUND_DOWN)


def block_header(block: dict) -> BlockHeader:
    return BlockHeader(
        number=int(block["number"], 16),
        hash=block["hash"].lower(),
        parent_hash=block["parentHash"].lower(),
        time=datetime.fromtimestamp(int(block["timestamp"], 16), tz=UTC),
    )


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


def receipt_succeeded(receipt: dict) -> bool:
    return receipt.get("status") == "0x1"


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


def _topic_address(topic: str) -> str:
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
        if _topic_address(topics[2]) != donation_address:
            continue
        data = log.get("data") or "0x"
        raw = int(data, 16) if data not in ("0x", "") else 0
        amount = scaled_amount(raw, coin.scale, coin_scale)
        if amount == 0:
            continue
        found.append(
            Transfer(
                tx_hash=log["transactionHash"].lower(),
                log_index=int(log["logIndex"], 16),
                donor=_topic_address(topics[1]),
                asset=coin.asset,
                amount=amount,
                block_number=int(log["blockNumber"], 16),
                block_hash=log["blockHash"].lower(),
            )
        )
    return found


def donation_address_topic(donation_address: str) -> str:
    return "0x" + "0" * 24 + donation_address.removeprefix("0x").lower()
