"""The donation address's own money among what a block's traces show (crawlers/decode/frames.py's rule):
coins that reached it in a transaction it called out in are movements, not donations."""

from __future__ import annotations

from crawlers.decode.balances import ETH
from crawlers.decode.transfers import RETURNED, Movement
from crawlers.scan.results import ScannedBlock
from dws_project.chain_settings import ChainSettings


def drop_own_coin_transfers(chain: ChainSettings, block: ScannedBlock, own_txs: set[str]) -> None:
    """Coins that reached the address in a transaction it called out in (a swap a Safe started) are its
    own money: movements, not donations (only the traces show a contract address calling out)."""
    decimals = {coin.asset: coin.scale for coin in chain.stable_coins}
    for transfer in [t for t in block.transfers if t.asset != ETH and t.tx_hash in own_txs]:
        block.transfers.remove(transfer)
        raw = int(transfer.amount.scaleb(decimals[transfer.asset]))  # at the column's scale, rounded down
        block.own.append(Movement(transfer.tx_hash, transfer.asset, raw, RETURNED))
