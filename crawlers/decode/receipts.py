"""Receipts: the one reading of whether a transaction succeeded, and what it cost its sender."""

from __future__ import annotations

from crawlers.chain.calls import TRANSFER_TOPIC, address_topic


def receipt_succeeded(receipt: object, block_hash: str) -> bool | None:
    """True: the receipt, of the block we scanned, says the transaction succeeded; False: it says it
    reverted; None: it proves neither (another block's receipt, no status, not a receipt at all)."""
    if not isinstance(receipt, dict) or (receipt.get("blockHash") or "").lower() != block_hash:
        return None
    status = receipt.get("status")
    return {"0x1": True, "0x0": False}.get(status) if isinstance(status, str) else None


def receipt_fee(receipt: dict) -> int:
    """What a transaction cost its sender in wei: gas (and blob gas) at the price it really paid."""
    price = receipt.get("effectiveGasPrice") or receipt.get("gasPrice") or "0x0"
    fee = int(receipt.get("gasUsed") or "0x0", 16) * int(price, 16)
    if receipt.get("blobGasUsed") and receipt.get("blobGasPrice"):
        fee += int(receipt["blobGasUsed"], 16) * int(receipt["blobGasPrice"], 16)
    return fee


def receipt_has_transfer(receipt: dict, *, log_index: int, contract: str, recipient: str) -> bool:
    """Whether the receipt holds, at `log_index`, a Transfer log of `contract` paying `recipient`."""
    to = address_topic(recipient)
    for log in receipt.get("logs") or []:
        if not isinstance(log, dict) or not isinstance(log.get("logIndex"), str):
            continue
        topics = [t.lower() for t in log.get("topics") or [] if isinstance(t, str)]
        if (
            int(log["logIndex"], 16) == log_index
            and (log.get("address") or "").lower() == contract
            and len(topics) == 3
            and topics[0] == TRANSFER_TOPIC
            and topics[2] == to
        ):
            return True
    return False
