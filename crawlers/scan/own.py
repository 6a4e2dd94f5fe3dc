"""The donation address's own money among what a block's traces show (crawlers/decode/frames.py's rule):
coins that reached it inside a call it made itself are movements, not donations; stray tokens that did
are owed to nobody; and what is left of the coins minted to it with no depositor named is an open question
(`open_mints`)."""

from __future__ import annotations

import dataclasses

from crawlers.decode.balances import ETH
from crawlers.decode.transfers import MINTED, RETURNED, Movement
from crawlers.scan.results import ScannedBlock
from dws_project.chain_settings import ChainSettings


def drop_own_coin_transfers(chain: ChainSettings, block: ScannedBlock, own_coin_calls: set[tuple[str, str]]) -> None:
    """Coins that reached the address inside a call it made itself (a swap a Safe started; `own_coin_calls`
    names the transaction and the coin's contract) are its own money: movements, not donations (only the
    traces show a contract address calling out)."""
    decimals = {coin.asset: coin.scale for coin in chain.stable_coins}
    contracts = {coin.asset: coin.contract for coin in chain.stable_coins}
    own = [t for t in block.transfers if t.asset != ETH and (t.tx_hash, contracts[t.asset]) in own_coin_calls]
    for transfer in own:
        block.transfers.remove(transfer)
        raw = int(transfer.amount.scaleb(decimals[transfer.asset]))  # at the column's scale, rounded down
        block.own.append(Movement(transfer.tx_hash, transfer.asset, raw, RETURNED))
    # A coin minted to the address by its own call (it claimed, or bridged in, itself) is its own money.
    block.own[:] = [
        dataclasses.replace(m, kind=RETURNED)
        if m.kind == MINTED and m.asset in contracts and (m.tx_hash, contracts[m.asset]) in own_coin_calls
        else m
        for m in block.own
    ]


def open_mints(block: ScannedBlock) -> None:
    """The coins minted to the address that no depositor is named for (crawlers/decode/mints.py: not a CCTP
    mint we can read, not its own) leave its own movements and become unexplained inflows, with the reason:
    an open question the operator credits or dismisses, never closed silently. The block writer and
    reconcile both apply it to every final block."""
    for movement in [m for m in block.own if m.kind == MINTED]:
        block.own.remove(movement)
        why = (
            "its receipt is past DWS_RPC_MAX_ANSWER_MB even alone, so no CCTP message in it can be read"
            if movement.tx_hash in block.unread_receipts
            else "not a CCTP mint from a known MessageTransmitter naming the address and this amount"
        )
        block.add_unexplained(
            movement.asset,
            movement.raw,
            f"{movement.asset} minted to the donation address by transaction {movement.tx_hash} with no depositor "
            f"named ({why})",
        )


def drop_own_strays(block: ScannedBlock, own_calls: set[tuple[str, str]]) -> None:
    """Stray tokens that reached the address inside a call it made itself (a swap a Safe started: `own_calls`
    names the transaction and the token's contract) are its own money, owed back to nobody."""
    block.strays[:] = [s for s in block.strays if (s.tx_hash, s.token.contract) not in own_calls]
