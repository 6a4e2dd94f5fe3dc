"""Receipts: the one reading of whether a transaction succeeded, and what it cost its sender on any of our
chains (Ethereum, the OP-stack rollups, Arbitrum)."""

from __future__ import annotations

from crawlers.chain.calls import TRANSFER_TOPIC, address_topic
from crawlers.decode.amounts import UnreadableAmount, quantity, required_quantity

DEPOSIT_TX_TYPE = 0x7E  # an OP-stack deposit: made on L1, its gas bought there
BLOB_TX_TYPE = 0x03  # EIP-4844: the only transactions that pay for blob gas
OPERATOR_FEE_SCALAR_UNIT = 1_000_000  # Isthmus: operatorFeeScalar has six decimals
OPERATOR_FEE_JOVIAN_FACTOR = 100  # Jovian: the scalar is applied x 100 instead


def receipt_succeeded(receipt: object, block_hash: str) -> bool | None:
    """True: the receipt, of the block we scanned, says the transaction succeeded; False: it says it
    reverted; None: it proves neither (another block's receipt, no status, not a receipt at all)."""
    if not isinstance(receipt, dict) or (receipt.get("blockHash") or "").lower() != block_hash:
        return None
    status = receipt.get("status")
    return {"0x1": True, "0x0": False}.get(status) if isinstance(status, str) else None


def receipt_fee(receipt: dict) -> int:
    """What a transaction cost its sender in wei, as its receipt says it was charged, on every chain we take
    donations on (docs/detection.md, "What a transaction costs its sender, chain by chain"):

    * the gas: `gasUsed` x `effectiveGasPrice` (`gasPrice` from a node older than London). On Arbitrum
      `gasUsed` already holds the L1 part (`gasUsedForL1` only says how much of it): nothing is added;
    * blob gas, for a blob transaction (type 3) only: `blobGasUsed` x `blobGasPrice`. An OP-stack receipt
      from Jovian on carries `blobGasUsed` on every transaction as its DA footprint, which nobody pays;
    * an OP-stack chain's L1 data fee, `l1Fee`, and its operator fee (`operator_fee`);
    * nothing for an OP-stack deposit (type 0x7e): its gas was bought on L1, and it pays no L1 fee and no
      operator fee whatever its receipt's other fields say.

    Raises UnreadableAmount where a field it needs is missing (`gasUsed`, the price, a blob transaction's
    blob fields) or there but not a quantity: the caller holds the block.
    """
    kind = quantity(receipt, "type")
    if kind == DEPOSIT_TX_TYPE:
        return 0
    gas_used = required_quantity(receipt, "gasUsed")
    price = quantity(receipt, "effectiveGasPrice")
    fee = gas_used * (price if price is not None else required_quantity(receipt, "gasPrice"))
    if kind == BLOB_TX_TYPE:
        fee += required_quantity(receipt, "blobGasUsed") * required_quantity(receipt, "blobGasPrice")
    fee += quantity(receipt, "l1Fee") or 0
    return fee + operator_fee(receipt, gas_used)


def operator_fee(receipt: dict, gas_used: int) -> int:
    """The OP-stack operator fee (Isthmus on) a receipt's sender paid: `operatorFee` where the node reports
    it. op-geth and op-reth report only the block's `operatorFeeScalar` and `operatorFeeConstant` (both, and
    only where one is not zero), so there it is derived as op-revm charges it, on the gas the receipt says
    was used: `gasUsed x scalar / 1e6 + constant` (Isthmus), `gasUsed x scalar x 100 + constant` from
    Jovian, which a receipt shows by its `daFootprintGasScalar`. A derivation that is wrong cannot pass:
    the balances must agree with it (too little held as ETH that left unexplained, too much an inflow)."""
    reported = quantity(receipt, "operatorFee")
    if reported is not None:
        return reported
    scalar, constant = quantity(receipt, "operatorFeeScalar"), quantity(receipt, "operatorFeeConstant")
    if scalar is None and constant is None:
        return 0
    if scalar is None or constant is None:  # op-geth and op-reth write both or neither
        raise UnreadableAmount("it gives only one of operatorFeeScalar and operatorFeeConstant")
    if quantity(receipt, "daFootprintGasScalar") is not None:
        return gas_used * scalar * OPERATOR_FEE_JOVIAN_FACTOR + constant
    return gas_used * scalar // OPERATOR_FEE_SCALAR_UNIT + constant


def is_deposit(source: dict) -> bool:
    """Whether a transaction or its receipt is an OP-stack deposit (type 0x7e; a node may write 0x7E).
    Raises UnreadableAmount for a type that is not a quantity."""
    return quantity(source, "type") == DEPOSIT_TX_TYPE


def deposit_mint(tx: dict) -> int:
    """The ETH an OP-stack deposit transaction mints to its `from` (bridged from L1), whether or not the
    deposit then succeeds; 0 for any other transaction and for a deposit without `mint` (op-geth leaves a
    zero mint out). Raises UnreadableAmount for a type or mint that is not a quantity."""
    return (quantity(tx, "mint") or 0) if is_deposit(tx) else 0


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
