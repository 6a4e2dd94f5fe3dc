"""What counts as a donation, on hand-written JSON-RPC objects (the mappers are pure)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from crawlers.chain.calls import TRANSFER_TOPIC
from crawlers.decode.amounts import scaled_amount
from crawlers.decode.transfers import eth_candidates, token_transfers
from donations.sightings import amount_scale
from dws_project.config_values import StableCoin

US = "0xa0ee7a142d267c1f36714e4a8f75612f20a79720"
DONOR = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"
USDT = StableCoin("usdt", "0xdac17f958d2ee523a2206206994597c13d831ec7", 6)


def topic(address: str) -> str:
    return "0x" + "0" * 24 + address[2:]


def transfer_log(**changes) -> dict:
    log = {
        "address": USDT.contract,
        "topics": [TRANSFER_TOPIC, topic(DONOR), topic(US)],
        "data": hex(1_500_000),
        "transactionHash": "0x" + "11" * 32,
        "logIndex": "0x3",
        "blockNumber": "0x10",
        "blockHash": "0x" + "22" * 32,
        "removed": False,
    }
    return {**log, **changes}


def test_amounts_are_rounded_down_to_the_scale_never_up():
    assert scaled_amount(19_999_999_999, 18, 8) == Decimal("0.00000001")
    assert scaled_amount(9_999_999_999, 18, 8) == 0
    assert scaled_amount(1, 6, 10) == Decimal("0.000001")


def test_the_coin_scale_is_read_from_the_model_field():
    assert amount_scale("usdt") == 10
    assert amount_scale("eth") == 8


def test_a_transfer_log_to_us_is_a_donation_from_its_from_address():
    (found,) = token_transfers([transfer_log()], [USDT], US, 10)
    assert (found.donor, found.asset, found.amount, found.log_index, found.block_number) == (
        DONOR,
        "usdt",
        Decimal("1.5"),
        3,
        16,
    )


@pytest.mark.parametrize(
    "changes",
    [
        {"removed": True},  # dropped by a re-org
        {"address": "0x" + "99" * 20},  # another token
        {"topics": [TRANSFER_TOPIC, topic(DONOR), topic(DONOR)]},  # to someone else
        {"topics": ["0x" + "ab" * 32, topic(DONOR), topic(US)]},  # another event
        {"topics": [TRANSFER_TOPIC, topic(DONOR)]},  # malformed (not an indexed Transfer)
        {"data": "0x0"},  # zero
    ],
)
def test_logs_that_are_not_donations_are_ignored(changes):
    assert token_transfers([transfer_log(**changes)], [USDT], US, 10) == []


def test_eth_candidates_are_transfers_to_us_that_are_not_zero_at_eight_decimals():
    block = {
        "number": "0x5",
        "hash": "0x" + "33" * 32,
        "transactions": [
            {"hash": "0x" + "01" * 32, "from": DONOR, "to": US, "value": hex(10**18)},
            {"hash": "0x" + "02" * 32, "from": DONOR, "to": US, "value": "0x1"},
            {"hash": "0x" + "03" * 32, "from": DONOR, "to": DONOR, "value": hex(10**18)},
            {"hash": "0x" + "04" * 32, "from": DONOR, "to": None, "value": hex(10**18)},  # contract creation
        ],
    }
    assert [c.tx_hash for c in eth_candidates(block, US, 8)] == ["0x" + "01" * 32]
