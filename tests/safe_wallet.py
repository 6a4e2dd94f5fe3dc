"""A real Safe 1.4.1 on anvil: the singleton's runtime code at its canonical address, a SafeProxy's runtime
code at the address given (anvil_setCode) with slot 0 naming the singleton, then the Safe's own setup().

The code is @safe-global/safe-contracts 1.4.1's (tests/contracts/artifacts/Safe141.json names the source).
Owners execute without signing: a Safe takes a "pre-validated" signature (r = the owner, s = 0, v = 1) from
a transaction the owner sends itself; a module (any account the Safe enabled) executes with no signature.
"""

from __future__ import annotations

from eth_abi import encode

from tests.chain import Anvil, load_artifact, selector

ZERO = "0x" + "0" * 40
EXEC_TRANSACTION = (
    "execTransaction(address,uint256,bytes,uint8,uint256,uint256,uint256,address,address,bytes)",
    ["address", "uint256", "bytes", "uint8", "uint256", "uint256", "uint256", "address", "address", "bytes"],
)


def install_safe(node: Anvil, address: str, owners: list[str]) -> str:
    """`address` becomes a Safe 1.4.1 of `owners` (threshold 1); returns its singleton."""
    artifact = load_artifact("Safe141")
    singleton = artifact["singleton"]
    node.set_code(singleton, artifact["singletonRuntime"])
    node.set_code(address, artifact["proxyRuntime"])
    node.rpc("anvil_setStorageAt", address, "0x0", "0x" + singleton[2:].rjust(64, "0"))
    setup = node.call_data(
        "setup(address[],uint256,address,bytes,address,address,uint256,address)",
        ["address[]", "uint256", "address", "bytes", "address", "address", "uint256", "address"],
        [owners, 1, ZERO, b"", ZERO, ZERO, 0, ZERO],
    )
    node.send({"from": owners[0], "to": address, "data": setup, "gas": hex(500_000)})
    return singleton


def exec_data(owner: str, to: str, wei: int, data: bytes = b"", *, safe_tx_gas: int = 0) -> str:
    """execTransaction's call data with the owner's pre-validated signature (the owner must send it).
    `safe_tx_gas` above 0 lets the inner call fail without reverting the transaction (ExecutionFailure)."""
    signature = bytes.fromhex(owner[2:].rjust(64, "0")) + b"\x00" * 32 + b"\x01"
    args = [to, wei, data, 0, safe_tx_gas, 0, 0, ZERO, ZERO, signature]
    return "0x" + (selector(EXEC_TRANSACTION[0]) + encode(EXEC_TRANSACTION[1], args)).hex()


def execute(node: Anvil, safe: str, owner: str, to: str, wei: int, data: bytes = b"", *, safe_tx_gas: int = 0) -> str:
    """The owner has the Safe send `wei` (and `data`) to `to`: one transaction, ExecutionSuccess/Failure."""
    payload = exec_data(owner, to, wei, data, safe_tx_gas=safe_tx_gas)
    return node.send({"from": owner, "to": safe, "data": payload, "gas": hex(400_000)})


def enable_module(node: Anvil, safe: str, owner: str, module: str) -> str:
    """A Safe transaction to itself: enableModule(module)."""
    data = bytes.fromhex(node.call_data("enableModule(address)", ["address"], [module])[2:])
    return execute(node, safe, owner, safe, 0, data)


def module_execute(node: Anvil, safe: str, module: str, to: str, wei: int) -> str:
    """The module has the Safe send `wei` to `to` (execTransactionFromModule: no signature, no nonce)."""
    data = node.call_data(
        "execTransactionFromModule(address,uint256,bytes,uint8)",
        ["address", "uint256", "bytes", "uint8"],
        [to, wei, b"", 0],
    )
    return node.send({"from": module, "to": safe, "data": data, "gas": hex(300_000)})


def pay_by_selfdestruct(node: Anvil, sender: str, to: str, wei: int, bomb: str) -> str:
    """`wei` to `to` by a contract's SELFDESTRUCT (code installed at `bomb`): no call, no event."""
    node.set_code(bomb, "0x73" + to[2:] + "ff")  # PUSH20 to; SELFDESTRUCT
    return node.send({"from": sender, "to": bomb, "value": hex(wei), "gas": hex(100_000)})
