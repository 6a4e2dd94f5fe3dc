"""What counts as a donation, as pure functions from JSON-RPC objects to frozen values.

Nothing here talks to the node or the database. Two kinds of donation found here (internal ETH
transfers come from call frames, crawlers/decode/frames.py):

* native ETH: a transaction whose `to` is the donation address, with a receipt of status 1 (on an OP-stack
  chain also a deposit made on L1, type 0x7e: its `from` is the donor, an L1 contract's aliased address
  as the chain shows it; its `mint` went to that `from`, not to us);
* ERC-20: a `Transfer` log of a configured coin whose recipient is the donation address. A Transfer
  log exists only for a transfer that happened, whoever called the token (a direct `transfer`,
  `transferFrom`, a Safe, an ERC-4337 account), so the donor is the Transfer's `from`.

Amounts are written at the scale of `donation.amount` (ETH at 8 decimals), rounded down: we never
record more than arrived. A transfer that is zero at that scale is not a donation.

The donation address's own money is never a donation (DESIGN.md, "Crediting"): a transaction it signed
and everything in it, a self-transfer, a Transfer whose `from` is the address, and the ETH a deposit it
made on L1 minted to it (or the standard bridge relayed to it from its L1 account: frames.py). A
coin minted to it (a Transfer from the zero address: a bridge or Circle's CCTP bringing a coin in, the
sale's own USDC moved to its rollup address as likely as anyone's) has no sender to credit: its depositor
is whom its bridge names (crawlers/decode/mints.py: a CCTP burn message's `messageSender`), the address
itself (bridged by the address), or nobody (an open question for the operator). The address's own value
still closes the balance identity, and is handed on as a `Movement` (recorded for the admin, never
credited).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from crawlers.chain.calls import TRANSFER_TOPIC
from crawlers.decode.amounts import ETH_DECIMALS, UnreadableAmount, log_amount, scaled_amount
from crawlers.decode.receipts import deposit_mint, is_deposit
from donations.sightings import Transfer
from dws_project.config_values import StableCoin

SELF_TRANSFER = "self-transfer"  # the address paid itself
RETURNED = "returned to the address"  # value came back in a transaction the address signed or called out in
BRIDGED = "bridged by the address"  # ETH it bridged from L1 itself: its deposit's mint, or relayed by the bridge
MINTED = "minted to the address"  # a coin minted to it that no depositor is named for: the operator's question
ZERO_ADDRESS = "0x" + "0" * 40


@dataclass(frozen=True)
class Movement:
    """Value that reached the donation address by its own doing, or minted to it with no sender: it closes
    the balance identity and is shown as an internal movement, never credited."""

    tx_hash: str
    asset: str
    raw: int  # wei, or the coin's base units
    kind: str  # SELF_TRANSFER, RETURNED, BRIDGED or MINTED


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
    receipt is asked for, and so is a transaction the donation address signed (a self-transfer).
    """
    number = int(block["number"], 16)
    block_hash = block["hash"].lower()
    found = []
    for tx in block.get("transactions") or ():
        if not isinstance(tx, dict) or (tx.get("to") or "").lower() != donation_address:
            continue
        if (tx.get("from") or "").lower() == donation_address:
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


def _coin_arrivals(
    logs: Iterable[dict], coins: Sequence[StableCoin], donation_address: str
) -> Iterable[tuple[dict, StableCoin]]:
    """The Transfer logs of the configured coins whose recipient is the donation address."""
    by_contract = {coin.contract: coin for coin in coins}
    for log in logs:
        coin = by_contract.get((log.get("address") or "").lower())
        topics = log.get("topics") or []
        if coin is None or log.get("removed") or len(topics) != 3 or topics[0].lower() != TRANSFER_TOPIC:
            continue
        if topic_address(topics[2]) == donation_address:
            yield log, coin


Depositors = Mapping[tuple[str, int], str]  # (tx hash, log index) of a mint -> who deposited it (mints.py)


def coin_mints(logs: Iterable[dict], coins: Sequence[StableCoin], donation_address: str) -> list[dict]:
    """The Transfer logs of the configured coins from the zero address to the donation address: mints,
    whose depositor only their transaction's receipt can name (crawlers/decode/mints.py)."""
    return [log for log, _ in _coin_arrivals(logs, coins, donation_address) if _sender(log) == ZERO_ADDRESS]


def _sender(log: dict) -> str:
    return topic_address(log["topics"][1])


def _log_key(log: dict) -> tuple[str, int]:
    return (log.get("transactionHash") or "").lower(), int(log.get("logIndex") or "0x0", 16)


def _own_arrival(log: dict, donation_address: str, own_txs: Collection[str], depositors: Depositors) -> str | None:
    """Why a coin arrival is not a donation (a Movement kind: the address's own money, or a mint nobody
    can be named for), or None: a donation (for a mint, its depositor's)."""
    sender = _sender(log)
    if sender == donation_address:
        return SELF_TRANSFER
    depositor = depositors.get(_log_key(log)) if sender == ZERO_ADDRESS else None
    if depositor is not None:
        # The burn message names where the value came from, whoever relayed it: a donor's burn the address
        # itself claimed is the donor's (a sale relaying its donors' messages keeps nothing by it).
        return BRIDGED if depositor == donation_address else None
    if (log.get("transactionHash") or "").lower() in own_txs:
        return RETURNED
    return MINTED if sender == ZERO_ADDRESS else None


def token_movements(
    logs: Iterable[dict],
    coins: Sequence[StableCoin],
    donation_address: str,
    own_txs: Collection[str] = (),
    depositors: Depositors | None = None,
) -> list[Movement]:
    """The coin arrivals that are not donations: the address's own money (from itself, or in `own_txs`:
    transactions it signed or, with code, called out in; or bridged by itself) and coins minted to it that
    no depositor is named for (MINTED: open questions for the operator, crawlers/scan/own.py)."""
    found = []
    for log, coin in _coin_arrivals(logs, coins, donation_address):
        kind = _own_arrival(log, donation_address, own_txs, depositors or {})
        if kind is not None and log_amount(log) > 0:
            found.append(Movement(log["transactionHash"].lower(), coin.asset, log_amount(log), kind))
    return found


def token_transfers(
    logs: Iterable[dict],
    coins: Sequence[StableCoin],
    donation_address: str,
    coin_scale: int,
    own_txs: Collection[str] = (),
    depositors: Depositors | None = None,
) -> list[Transfer]:
    """Transfer logs of the configured coins that pay the donation address, non-zero at `coin_scale`;
    the address's own money (`token_movements`) left out. A mint whose depositor `depositors` names is
    that depositor's donation."""
    found = []
    named = depositors or {}
    for log, coin in _coin_arrivals(logs, coins, donation_address):
        if _own_arrival(log, donation_address, own_txs, named) is not None:
            continue
        amount = scaled_amount(log_amount(log), coin.scale, coin_scale)
        if amount == 0:
            continue
        found.append(
            Transfer(
                tx_hash=log["transactionHash"].lower(),
                log_index=int(log["logIndex"], 16),
                donor=named[_log_key(log)] if _sender(log) == ZERO_ADDRESS else _sender(log),
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
    the address's ETH balance and nonce at the top level (the balance proof's raw flows).

    For one the address sent: `deposit` says it is an OP-stack deposit (made on L1: no L2 fee), `mint` what
    that deposit minted to the address (its own money, bridged), and `unreadable` why its type or mint
    could not be read (the block is held)."""

    tx_hash: str
    sender: str
    to: str
    wei: int
    block_number: int
    block_hash: str
    deposit: bool = False
    mint: int = 0
    unreadable: str = ""


def eth_moves(block: dict, donation_address: str) -> list[EthMove]:
    """The transactions of a full block that move ETH at the donation address (or spend from it)."""
    number, block_hash = int(block["number"], 16), block["hash"].lower()
    found = []
    for tx in block.get("transactions") or ():
        if not isinstance(tx, dict):
            continue
        sender, to = (tx.get("from") or "").lower(), (tx.get("to") or "").lower()
        if donation_address not in (sender, to):
            continue  # most of a busy block: nothing of ours, nothing more to decode
        wei = int(tx.get("value") or "0x0", 16)
        if sender == donation_address:
            # A deposit's mint lands at its `from` whether it succeeds or not; another's `from` gets it, never
            # us, so only ours is read.
            try:
                deposit, mint, unreadable = is_deposit(tx), deposit_mint(tx), ""
            except UnreadableAmount as exc:
                deposit, mint, unreadable = False, 0, str(exc)
            found.append(EthMove(tx["hash"].lower(), sender, to, wei, number, block_hash, deposit, mint, unreadable))
        elif to == donation_address and wei > 0:
            found.append(EthMove(tx["hash"].lower(), sender, to, wei, number, block_hash))
    return found
