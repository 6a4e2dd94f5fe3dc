"""A block's logsBloom: whether a Transfer involving the donation address may be in the block.

A bloom can only rule a log out; "may" is never proof that a log is there.
"""

from __future__ import annotations

from eth_hash.auto import keccak

from crawlers.chain.calls import TRANSFER_TOPIC, address_topic


def _bloom_bits(item: bytes) -> list[int]:
    digest = keccak(item)
    return [((digest[i] << 8) | digest[i + 1]) & 0x7FF for i in (0, 2, 4)]


def bloom_contains(bloom: str, item: bytes) -> bool:
    """Whether a 2048-bit logsBloom may contain `item` (an address or a topic); False only when it cannot."""
    try:
        data = bytes.fromhex(bloom.removeprefix("0x"))
    except ValueError:
        return True  # an unreadable bloom proves nothing: assume it may
    if len(data) != 256:
        return True
    return all(data[255 - bit // 8] & (1 << (bit % 8)) for bit in _bloom_bits(item))


def bloom_may_hold_transfer(bloom: str, contract: str, donation_address: str) -> bool:
    """A Transfer log of `contract` with the donation address as sender or recipient may be in the block."""
    us = bytes.fromhex(address_topic(donation_address)[2:])
    return (
        bloom_contains(bloom, bytes.fromhex(contract.removeprefix("0x")))
        and bloom_contains(bloom, bytes.fromhex(TRANSFER_TOPIC[2:]))
        and bloom_contains(bloom, us)
    )
