"""Contract wallets on anvil for the API tests: an ERC-1271 OwnedWallet, deployed or counterfactual."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from eth_abi import encode
from eth_account import Account
from eth_account.messages import _hash_eip191_message, encode_defunct

from tests.api.support import _unused_second, wallet_ts
from tests.chain import ETHER, Anvil

ERC6492_SUFFIX = bytes.fromhex("6492" * 16)


def owner_signature(owner, message: str) -> bytes:
    """What the wallet's owner contributes: a raw signature of the personal_sign hash (no prefix)."""
    digest = _hash_eip191_message(encode_defunct(text=message))
    return bytes(Account.unsafe_sign_hash(digest, owner.key).signature)


def contract_headers(wallet: str, owner, path_words: str, *, wrap=None) -> dict[str, Any]:
    ts = wallet_ts(_unused_second())
    message = f"{path_words}, {wallet.lower()}, {ts}"
    signature = owner_signature(owner, message)
    if wrap is not None:
        signature = wrap(signature)
    return {"HTTP_DELPHI_KEY": wallet.lower(), "HTTP_DELPHI_TS": ts, "HTTP_DELPHI_SIGNATURE": "0x" + signature.hex()}


def act_as(node: Anvil, account) -> str:
    """An eth_account key made a funded, impersonated sender on the node."""
    address = account.address.lower()
    node.set_balance(address, 10 * ETHER)
    node.impersonate(address)
    return address


def deploy_wallet(node: Anvil, owner) -> str:
    return node.deploy("OwnedWallet", ["address"], [owner.address])


def set_owner(node: Anvil, wallet: str, current_owner, new_owner) -> None:
    sender = act_as(node, current_owner)
    node.send(
        {"from": sender, "to": wallet, "data": node.call_data("setOwner(address)", ["address"], [new_owner.address])}
    )


@dataclass(frozen=True)
class Counterfactual:
    factory: str
    address: str
    deploy_calldata: bytes

    def wrap(self, signature: bytes) -> bytes:
        """ERC-6492: abi.encode(factory, factoryCalldata, signature) ++ the 32-byte suffix."""
        return encode(["address", "bytes", "bytes"], [self.factory, self.deploy_calldata, signature]) + ERC6492_SUFFIX


def counterfactual_wallet(node: Anvil, owner, salt: bytes = b"\x01" * 32) -> Counterfactual:
    factory = node.deploy("OwnedWalletFactory")
    address = node.rpc(
        "eth_call",
        {
            "to": factory,
            "data": node.call_data("addressOf(address,bytes32)", ["address", "bytes32"], [owner.address, salt]),
        },
        "latest",
    )
    calldata = bytes.fromhex(
        node.call_data("deploy(address,bytes32)", ["address", "bytes32"], [owner.address, salt])[2:]
    )
    return Counterfactual(factory=factory, address="0x" + address[-40:], deploy_calldata=calldata)


def place_wallet(node: Anvil, address: str, owner) -> None:
    """An OwnedWallet of `owner` at `address` on `node`, whatever is there: the same address being two
    wallets on two chains (a Safe set up differently per chain, a counterfactual address collision)."""
    template = deploy_wallet(node, owner)
    node.set_code(address, node.rpc("eth_getCode", template, "latest"))
    node.rpc("anvil_setStorageAt", address, "0x0", "0x" + owner.address[2:].lower().rjust(64, "0"))  # owner
