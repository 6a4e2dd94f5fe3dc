"""One credited transfer's facts against a second provider's receipt and transaction (crawlers/scan/agreement.py).

For every transfer: a successful receipt in the transfer's block. For a coin: the Transfer log at that
index, of that contract, paying the donation address from the donor, of that amount. For a top-level ETH
transfer: the transaction's sender, recipient and value. ETH paid by an internal call is checked by its
receipt here, and by its block's balance change (or its trace) in the agreement. A transaction the
primary reports reverted: a receipt reporting the revert in that block.
"""

from __future__ import annotations

from typing import Any

from crawlers.chain.calls import TRANSFER_TOPIC
from crawlers.decode.amounts import ETH_DECIMALS, log_amount, scaled_amount
from crawlers.decode.mints import mint_depositor
from crawlers.decode.transfers import ZERO_ADDRESS, topic_address
from donations.sightings import Transfer, amount_scale
from dws_project.chain_settings import ChainSettings


def ours_and_theirs(ours: object, theirs: object) -> str:
    return f"ours says {ours}, the check provider says {theirs}"


def name(t: Transfer) -> str:
    where = "" if t.log_index is None else f" log {t.log_index}"
    where += "" if t.trace_address is None else f" frame {t.trace_address}"
    return f"{t.asset} transfer {t.tx_hash}{where}"


def _status(receipt: dict) -> tuple[str, str]:
    return str(receipt.get("status") or ""), str(receipt.get("blockHash") or "").lower()


def transfer_differs(chain: ChainSettings, t: Transfer, receipt: Any, tx: Any) -> str | None:
    """How the check provider's receipt (and, for a top-level ETH transfer, transaction) differs from `t`."""
    if not isinstance(receipt, dict):
        return ours_and_theirs("a receipt", "no receipt object")
    status, block_hash = _status(receipt)
    if (status, block_hash) != ("0x1", t.block_hash):
        return ours_and_theirs(f"success in {t.block_hash}", f"status {status or 'none'} in {block_hash or 'none'}")
    if t.log_index is not None:
        return _log_differs(chain, t, receipt)
    if t.trace_address is None:
        return _eth_differs(chain, t, tx)
    return None


def reverted_differs(block_hash: str, receipt: Any) -> str | None:
    """How the check provider's receipt differs from a revert in `block_hash`."""
    if not isinstance(receipt, dict):
        return ours_and_theirs("a receipt", "no receipt object")
    status, where = _status(receipt)
    if (status, where) != ("0x0", block_hash):
        return ours_and_theirs(f"status 0x0 in {block_hash}", f"status {status or 'none'} in {where or 'none'}")
    return None


def _log_differs(chain: ChainSettings, t: Transfer, receipt: dict) -> str | None:
    coin = chain.stable_coin(t.asset)
    log = next(
        (
            entry
            for entry in receipt.get("logs") or []
            if isinstance(entry, dict)
            and isinstance(entry.get("logIndex"), str)
            and int(entry["logIndex"], 16) == t.log_index
        ),
        None,
    )
    if coin is None or log is None:
        return ours_and_theirs(f"a Transfer at log {t.log_index}", "no such log")
    topics = [str(x).lower() for x in log.get("topics") or []]
    sender = topic_address(topics[1]) if len(topics) == 3 else None
    if sender == ZERO_ADDRESS:  # a mint: its donor is whom the mint rule names from the same receipt
        sender = mint_depositor(log, receipt.get("logs") or [], chain.donation_address) or sender
    seen = (
        str(log.get("address") or "").lower(),
        topics[0] if topics else None,
        sender,
        topic_address(topics[2]) if len(topics) == 3 else None,
        scaled_amount(log_amount(log), coin.scale, amount_scale(t.asset)),
    )
    expected = (coin.contract, TRANSFER_TOPIC, t.donor, chain.donation_address, t.amount)
    return None if seen == expected else ours_and_theirs(_describe(expected), _describe(seen))


def _eth_differs(chain: ChainSettings, t: Transfer, tx: Any) -> str | None:
    if not isinstance(tx, dict):
        return ours_and_theirs("a transaction", "no transaction object")
    try:
        wei = int(str(tx.get("value") or "0x0"), 16)
    except ValueError:
        return ours_and_theirs("a value", f"value {tx.get('value')!r}")
    seen = (
        str(tx.get("from") or "").lower(),
        str(tx.get("to") or "").lower(),
        scaled_amount(wei, ETH_DECIMALS, amount_scale("eth")),
    )
    expected = (t.donor, chain.donation_address, t.amount)
    return None if seen == expected else ours_and_theirs(_describe(expected), _describe(seen))


def _describe(parts: tuple[object, ...]) -> str:
    return "(" + ", ".join(str(p) for p in parts) + ")"
