"""The start-up keccak (dws_project/keccak.py) against eth_hash's, on every padding boundary."""

from __future__ import annotations

import random

import pytest
from eth_hash.auto import keccak

from dws_project.config_values import parse_address
from dws_project.keccak import keccak256


@pytest.mark.parametrize("size", [0, 1, 20, 40, 135, 136, 137, 271, 272, 273, 1000])
def test_it_hashes_as_eth_hash_does(size: int) -> None:
    data = random.Random(size).randbytes(size)

    assert keccak256(data) == keccak(data)


def test_a_checksummed_address_is_still_accepted_and_a_wrong_checksum_refused() -> None:
    good = "0xa0Ee7A142d267C1f36714E4a8F75612F20a79720"  # anvil's last development account, EIP-55

    assert parse_address(good) == good.lower()
    with pytest.raises(ValueError, match="invalid EIP-55 checksum"):
        parse_address(good.replace("a0Ee", "a0EE"))
