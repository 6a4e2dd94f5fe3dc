"""EIP-7702 authorizations: how many in a block the donation address signed (each moves its nonce by one).

A type-4 transaction carries an `authorizationList`; each entry is signed by its *authority* over
keccak(0x05 || rlp([chain_id, address, nonce])). The authority is recovered from the signature (it is
not in the transaction's JSON). A valid authorization by the donation address raises its nonce without
any transaction from it, so the balance proof counts them beside the transactions it sent. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable

SET_CODE_TX = "0x4"
MAGIC = b"\x05"
DELEGATION_PREFIX = "0xef0100"  # the code of an account delegated by EIP-7702: 0xef0100 || address


def _rlp_length(size: int, offset: int) -> bytes:
    if size < 56:
        return bytes([offset + size])
    raw = size.to_bytes((size.bit_length() + 7) // 8, "big")
    return bytes([offset + 55 + len(raw)]) + raw


def _rlp(item: int | bytes | list) -> bytes:
    """RLP of what an authorization signs: integers, byte strings, lists of them."""
    if isinstance(item, list):
        body = b"".join(_rlp(i) for i in item)
        return _rlp_length(len(body), 0xC0) + body
    data = item.to_bytes((item.bit_length() + 7) // 8, "big") if isinstance(item, int) else item
    if len(data) == 1 and data[0] < 0x80:
        return data
    return _rlp_length(len(data), 0x80) + data


def _int(value: object) -> int:
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.startswith("0x"):
        return int(value, 16) if len(value) > 2 else 0
    raise ValueError(f"not a quantity: {str(value)[:40]}")


def authority(entry: dict) -> str | None:
    """The lower-case address that signed one authorization entry, or None if it cannot be recovered
    (the EVM skips such an entry too). eth_keys (and the eth_utils and pydantic it brings, a third of a
    second of every crawler process's start) is imported here, where a type-4 transaction needs it."""
    from eth_keys import keys
    from eth_keys.exceptions import BadSignature, ValidationError
    from eth_utils import keccak

    try:
        chain_id, nonce = _int(entry["chainId"]), _int(entry["nonce"])
        target = bytes.fromhex(str(entry["address"]).removeprefix("0x"))
        digest = keccak(MAGIC + _rlp([chain_id, target, nonce]))
        signature = keys.Signature(vrs=(_int(entry["yParity"]), _int(entry["r"]), _int(entry["s"])))
        return signature.recover_public_key_from_msg_hash(digest).to_address().lower()
    except (KeyError, TypeError, ValueError, BadSignature, ValidationError):
        return None


def authorizations_by(transactions: Iterable[object], address: str, chain_id: int) -> int:
    """How many authorizations in these (full) transactions `address` signed for this chain (or any: 0)."""
    count = 0
    for tx in transactions:
        if not isinstance(tx, dict) or tx.get("type") != SET_CODE_TX:
            continue
        for entry in tx.get("authorizationList") or []:
            if not isinstance(entry, dict):
                continue
            try:
                if _int(entry.get("chainId")) not in (0, chain_id):
                    continue
            except ValueError:
                continue
            if authority(entry) == address:
                count += 1
    return count


def address_mode(code: str) -> str:
    """What the donation address is, from its code: `plain` (none), `delegated` (an EIP-7702 delegation)
    or `contract` (a Safe, any other code)."""
    code = code.lower()
    if code in ("", "0x", "0x0"):
        return "plain"
    return "delegated" if code.startswith(DELEGATION_PREFIX) and len(code) == 48 else "contract"
