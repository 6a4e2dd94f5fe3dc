"""Request builders: the JSON-RPC calls the crawlers post, as plain `(method, params)` pairs.

Pure: nothing here talks to the node.
"""

from __future__ import annotations

from collections.abc import Iterable

from crawlers.chain.outcomes import Call
from dws_project.chain_settings import ChainSettings

# keccak("Transfer(address,address,uint256)")
TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"
BALANCE_OF = "0x70a08231"  # balanceOf(address)


def address_topic(address: str) -> str:
    """An address as a 32-byte log topic (how a Transfer names its sender and recipient)."""
    return "0x" + "0" * 24 + address.removeprefix("0x").lower()


def block_calls(numbers: Iterable[int]) -> list[Call]:
    """Full blocks (with their transactions) by number."""
    return [("eth_getBlockByNumber", [hex(n), True]) for n in numbers]


def header_call(block: int | str) -> Call:
    """A block without its transactions' bodies, by number or tag ("latest", "finalized")."""
    return ("eth_getBlockByNumber", [hex(block) if isinstance(block, int) else block, False])


def receipt_calls(tx_hashes: Iterable[str]) -> list[Call]:
    return [("eth_getTransactionReceipt", [h]) for h in tx_hashes]


def transaction_calls(tx_hashes: Iterable[str]) -> list[Call]:
    return [("eth_getTransactionByHash", [h]) for h in tx_hashes]


def code_call(address: str, block: int) -> Call:
    return ("eth_getCode", [address, hex(block)])


def balance_calls(chain: ChainSettings, block: int | str) -> list[Call]:
    """The donation address's ETH balance, nonce and each coin's balanceOf at `block` (a number, or a
    hash to pin the answer to exactly that block); `decode.balances` reads the answers in this order."""
    us = chain.donation_address
    at = hex(block) if isinstance(block, int) else {"blockHash": block}
    data = BALANCE_OF + address_topic(us)[2:]
    return [("eth_getBalance", [us, at]), ("eth_getTransactionCount", [us, at])] + [
        ("eth_call", [{"to": coin.contract, "data": data}, at]) for coin in chain.stable_coins
    ]


def edge_calls(chain: ChainSettings, start: int, end: int) -> list[Call]:
    """The balances at the block before a range and at its end (none before the genesis block)."""
    return balance_calls(chain, start - 1) + balance_calls(chain, end) if start else []


def transfer_filters(chain: ChainSettings) -> tuple[list, list]:
    """The topics of a coin Transfer to the donation address, and of one from it."""
    us = address_topic(chain.donation_address)
    return [TRANSFER_TOPIC, None, us], [TRANSFER_TOPIC, us]


def transfer_log_contracts(chain: ChainSettings) -> tuple[list[str] | None, list[str] | None]:
    """Which contracts' logs each filter asks: to us, every contract (no filter: a coin the sale does not
    take is seen too, crawlers/decode/strays.py); from us, the donation coins and the stray tokens (what a
    refund is paid in: anyone can emit a Transfer event naming us as its sender, only these are ours)."""
    return None, [c.contract for c in (*chain.stable_coins, *chain.stray_tokens)] or None


def logs_filter(contracts: list[str] | None, topics: list, start: int, end: int) -> dict:
    """An eth_getLogs filter over start..end; `contracts` None asks every contract."""
    found: dict = {"topics": topics, "fromBlock": hex(start), "toBlock": hex(end)}
    return {"address": contracts, **found} if contracts is not None else found


def transfer_log_calls(chain: ChainSettings, start: int, end: int) -> list[Call]:
    """The two eth_getLogs filters (to and from us) over start..end, for one batch."""
    return [
        ("eth_getLogs", [logs_filter(contracts, topics, start, end)])
        for contracts, topics in zip(transfer_log_contracts(chain), transfer_filters(chain), strict=True)
    ]
