"""Keccak-256 (Ethereum's hash, not NIST's SHA3-256) in plain Python, for short inputs at start-up.

The EIP-55 checksum of a configured address is one hash of 40 bytes at every process start. The
compiled implementations cost more to load than to use: pycryptodome's (behind eth_hash) parses its C
declarations with cffi and pycparser on first use (about 60 ms of every crawler run's start), eth_utils
brings pydantic. This one takes a few hundred microseconds for such an input; anything hashing in bulk
uses eth_hash. Checked against eth_hash in tests/foundation/test_keccak.py.
"""

from __future__ import annotations

_ROUND_CONSTANTS = (
    0x0000000000000001, 0x0000000000008082, 0x800000000000808A, 0x8000000080008000,
    0x000000000000808B, 0x0000000080000001, 0x8000000080008081, 0x8000000000008009,
    0x000000000000008A, 0x0000000000000088, 0x0000000080008009, 0x000000008000000A,
    0x000000008000808B, 0x800000000000008B, 0x8000000000008089, 0x8000000000008003,
    0x8000000000008002, 0x8000000000000080, 0x000000000000800A, 0x800000008000000A,
    0x8000000080008081, 0x8000000000008080, 0x0000000080000001, 0x8000000080008008,
)  # fmt: skip
_ROTATIONS = (
    (0, 36, 3, 41, 18),
    (1, 44, 10, 45, 2),
    (62, 6, 43, 15, 61),
    (28, 55, 25, 21, 56),
    (27, 20, 39, 8, 14),
)  # _ROTATIONS[x][y]
_MASK = (1 << 64) - 1
_RATE = 136  # bytes: 1600 - 2 * 256 bits


def _rotate(value: int, by: int) -> int:
    return ((value << by) | (value >> (64 - by))) & _MASK if by else value


def _permute(lanes: list[list[int]]) -> None:
    for constant in _ROUND_CONSTANTS:
        # theta
        parity = [lanes[x][0] ^ lanes[x][1] ^ lanes[x][2] ^ lanes[x][3] ^ lanes[x][4] for x in range(5)]
        for x in range(5):
            mix = parity[(x - 1) % 5] ^ _rotate(parity[(x + 1) % 5], 1)
            for y in range(5):
                lanes[x][y] ^= mix
        # rho and pi
        moved = [[0] * 5 for _ in range(5)]
        for x in range(5):
            for y in range(5):
                moved[y][(2 * x + 3 * y) % 5] = _rotate(lanes[x][y], _ROTATIONS[x][y])
        # chi
        for x in range(5):
            for y in range(5):
                lanes[x][y] = moved[x][y] ^ (~moved[(x + 1) % 5][y] & moved[(x + 2) % 5][y])
        # iota
        lanes[0][0] ^= constant


def keccak256(data: bytes) -> bytes:
    """The Keccak-256 digest of `data` (original Keccak padding, 0x01 ... 0x80)."""
    padded = bytearray(data)
    padded.append(0x01)
    padded.extend(b"\x00" * (-len(padded) % _RATE))
    padded[-1] |= 0x80
    lanes = [[0] * 5 for _ in range(5)]
    for block in range(0, len(padded), _RATE):
        for i in range(_RATE // 8):
            x, y = i % 5, i // 5
            lanes[x][y] ^= int.from_bytes(padded[block + 8 * i : block + 8 * i + 8], "little")
        _permute(lanes)
    return b"".join(lanes[i % 5][i // 5].to_bytes(8, "little") for i in range(4))
