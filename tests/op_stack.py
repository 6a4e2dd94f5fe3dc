"""An OP-stack chain on anvil for tests: `anvil --network optimism` executes deposit transactions (type 0x7e,
sent through eth_sendTransaction with `sourceHash` and `mint`) and charges every other transaction the L1
data fee and the Isthmus operator fee its L1Block predeploy's storage sets, paying them into the fee
vaults, as op-revm does on Base or OP Mainnet.

What anvil (1.7) does not do is say so in the receipt: it writes no `l1Fee`, no operator fee scalars. The
balances are real, so the tests measure what each transaction was charged from the vaults (one fee-paying
transaction per block: anvil mines each one alone) and have the proxy add the fields op-geth writes
(`op_geth_receipt_fields`). Anvil charges the Isthmus operator fee formula even under `--hardfork jovian`,
so the Jovian formula is held by the golden receipts (tests/crawlers/decode/test_fees.py) only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import rlp
from eth_abi import encode
from eth_utils import keccak

from tests.chain import Anvil, selector

L1_BLOCK = "0x4200000000000000000000000000000000000015"
L1_FEE_VAULT = "0x420000000000000000000000000000000000001a"
OPERATOR_FEE_VAULT = "0x420000000000000000000000000000000000001b"
ALIAS_OFFSET = 0x1111000000000000000000000000000000001111  # an L1 contract's address on L2 is offset by this
# The standard bridge's path on L2 (predeploys) and its L1 ends on OP Mainnet (what the relayed message names).
L2_CROSS_DOMAIN_MESSENGER = "0x4200000000000000000000000000000000000007"
L2_STANDARD_BRIDGE = "0x4200000000000000000000000000000000000010"
LEGACY_ERC20_ETH = "0xdeaddeaddeaddeaddeaddeaddeaddeaddead0000"
L1_CROSS_DOMAIN_MESSENGER = "0x25ace71c97b33cc4729cf772ae268934f7ab5fa1"
L1_STANDARD_BRIDGE = "0x99c9fc46f92e8a1c0dec1b1747d010903e884be1"


@dataclass(frozen=True)
class L1Fees:
    """The L1Block storage that makes anvil charge fees (Ecotone's L1 fee, Isthmus's operator fee)."""

    l1_base_fee: int = 20 * 10**9
    base_fee_scalar: int = 1368
    blob_base_fee: int = 5
    blob_base_fee_scalar: int = 810_949
    operator_fee_scalar: int = 2_500_000  # x 1e-6 per gas: 2.5 wei a gas
    operator_fee_constant: int = 1_000


def _word(value: int) -> str:
    return f"0x{value:064x}"


def charge_l1_fees(node: Anvil, fees: L1Fees = L1Fees()) -> L1Fees:
    """Write the L1Block slots op-revm reads (1: L1 base fee; 3: the Ecotone scalars, big-endian at byte
    offsets 16 and 20; 7: the blob base fee; 8: the operator fee scalar and constant at byte offsets 20 and 24)."""
    slots = {
        "0x1": fees.l1_base_fee,
        "0x3": (fees.base_fee_scalar << 96) | (fees.blob_base_fee_scalar << 64),
        "0x7": fees.blob_base_fee,
        "0x8": (fees.operator_fee_scalar << 64) | fees.operator_fee_constant,
    }
    for slot, value in slots.items():
        node.rpc("anvil_setStorageAt", L1_BLOCK, slot, _word(value))
    return fees


def aliased(l1_address: str) -> str:
    """How an L1 contract appears as the `from` of its deposit on L2."""
    return f"0x{(int(l1_address, 16) + ALIAS_OFFSET) % 2**160:040x}"


def deposit(
    node: Anvil,
    sender: str,
    to: str,
    *,
    value: int,
    mint: int,
    gas: int = 100_000,
    source: int = 1,
    data: bytes = b"",
) -> str:
    """A deposit transaction as the sequencer includes one for a deposit made on L1 (`sender` is its `from`,
    any address: a deposit is not signed), sent raw: 0x7e || rlp([sourceHash, from, to, mint, value, gas,
    isSystemTx, data]); its hash is the keccak of that, as on op-geth. (Anvil's eth_sendTransaction
    answers another hash than its block shows for a deposit from an impersonated account.)"""
    fields = [bytes.fromhex(_word(source)[2:]), bytes.fromhex(sender[2:]), bytes.fromhex(to[2:])]
    envelope = b"\x7e" + rlp.encode([*fields, mint, value, gas, False, data])
    tx_hash = node.rpc("eth_sendRawTransaction", "0x" + envelope.hex())
    assert tx_hash == "0x" + keccak(envelope).hex()
    node.wait_receipt(tx_hash)
    return tx_hash


def _balance(node: Anvil, address: str, block: int) -> int:
    return int(node.rpc("eth_getBalance", address, hex(block)), 16)


@dataclass(frozen=True)
class Charged:
    """What one transaction paid beside its gas, measured from the fee vaults."""

    l1_fee: int
    operator_fee: int


def charged(node: Anvil, tx_hash: str) -> Charged:
    receipt = node.receipt(tx_hash)
    number = int(receipt["blockNumber"], 16)
    assert len(node.block(number)["transactions"]) == 1, "the vaults measure one transaction per block"
    return Charged(
        l1_fee=_balance(node, L1_FEE_VAULT, number) - _balance(node, L1_FEE_VAULT, number - 1),
        operator_fee=_balance(node, OPERATOR_FEE_VAULT, number) - _balance(node, OPERATOR_FEE_VAULT, number - 1),
    )


def op_geth_receipt_fields(node: Anvil, tx_hash: str, fees: L1Fees, *, operator_fee_reported: bool = False) -> dict:
    """The fields op-geth (Isthmus) adds to the receipt of a transaction that is not a deposit, with what the
    chain really charged: `l1Fee` and the block's operator fee scalars (or, as some node might, the operator
    fee itself). The scalars must give exactly what anvil charged (the Isthmus formula)."""
    paid = charged(node, tx_hash)
    gas_used = int(node.receipt(tx_hash)["gasUsed"], 16)
    assert paid.l1_fee > 0
    assert paid.operator_fee == gas_used * fees.operator_fee_scalar // 1_000_000 + fees.operator_fee_constant
    fields: dict[str, Any] = {
        "l1GasPrice": hex(fees.l1_base_fee),
        "l1Fee": hex(paid.l1_fee),
        "l1BaseFeeScalar": hex(fees.base_fee_scalar),
        "l1BlobBaseFee": hex(fees.blob_base_fee),
        "l1BlobBaseFeeScalar": hex(fees.blob_base_fee_scalar),
    }
    if operator_fee_reported:
        fields["operatorFee"] = hex(paid.operator_fee)
    else:
        fields["operatorFeeScalar"] = hex(fees.operator_fee_scalar)
        fields["operatorFeeConstant"] = hex(fees.operator_fee_constant)
    return fields


# --- the standard bridge: ETH deposited through L1StandardBridge, relayed on L2 -----------------------------


def install_bridge(node: Anvil) -> None:
    """Put the stand-in L2CrossDomainMessenger and L2StandardBridge (tests/contracts/OpBridge.sol) at their
    predeploy addresses, each behind a proxy as on Base and OP Mainnet (anvil --network optimism has no code
    there). The proxies' runtime code names their implementation (an immutable), so it is copied as is."""
    for predeploy, implementation in (
        (L2_CROSS_DOMAIN_MESSENGER, "MessengerStandIn"),
        (L2_STANDARD_BRIDGE, "StandardBridgeStandIn"),
    ):
        proxy = node.deploy("PredeployProxy", ["address"], [node.deploy(implementation)])
        node.set_code(predeploy, node.rpc("eth_getCode", proxy, "latest"))


def finalize_call(l1_sender: str, to: str, wei: int, *, legacy: bool = False) -> bytes:
    """What L1StandardBridge has the messenger relay to L2StandardBridge for an ETH deposit: finalizeBridgeETH
    (`bridgeETHTo`, `depositETH`), or the legacy finalizeDeposit with the ETH placeholder token."""
    if legacy:
        types = ["address", "address", "address", "address", "uint256", "bytes"]
        args = ["0x" + "0" * 40, LEGACY_ERC20_ETH, l1_sender, to, wei, b""]
        return selector("finalizeDeposit(address,address,address,address,uint256,bytes)") + encode(types, args)
    return selector("finalizeBridgeETH(address,address,uint256,bytes)") + encode(
        ["address", "address", "uint256", "bytes"], [l1_sender, to, wei, b""]
    )


def bridge_eth(
    node: Anvil, l1_sender: str, to: str, wei: int, *, source: int, legacy: bool = False, message: bytes | None = None
) -> str:
    """ETH `l1_sender` bridged to `to` through the standard bridge, as it arrives on L2: a deposit from the
    aliased L1CrossDomainMessenger to L2CrossDomainMessenger minting `wei`, whose relayMessage calls
    L2StandardBridge with `message` (default: the finalize call for this deposit), which pays `to`."""
    relayed = finalize_call(l1_sender, to, wei, legacy=legacy) if message is None else message
    types = ["uint256", "address", "address", "uint256", "uint256", "bytes"]
    nonce = (1 << 240) | source  # version 1 in the top bytes, as the L1 messenger numbers its messages
    data = selector("relayMessage(uint256,address,address,uint256,uint256,bytes)") + encode(
        types, [nonce, L1_STANDARD_BRIDGE, L2_STANDARD_BRIDGE, wei, 200_000, relayed]
    )
    sender = aliased(L1_CROSS_DOMAIN_MESSENGER)
    return deposit(node, sender, L2_CROSS_DOMAIN_MESSENGER, value=wei, mint=wei, gas=500_000, source=source, data=data)
