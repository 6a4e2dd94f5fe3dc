"""Stray coins under attack, on anvil (issue 38's review): what may be owed back is only a Transfer the
finalized blocks hold, from someone else than the donation address's own doing, recorded with its block so
a payment back in a later block of the same range finds its row, and never twice when an operator added it
by hand first."""

from __future__ import annotations

from decimal import Decimal

import pytest
from eth_abi import encode

from crawlers.chain.calls import TRANSFER_TOPIC
from crawlers.models import FINALIZED, LATEST
from crawlers.runs.crawl import crawl
from donations.refund_models import Refund, UnmatchedPayout
from donations.refunds import refund_add_by_hand
from dws_project.config_values import StableCoin
from tests.chain import ACCOUNTS, DONATION_ADDRESS, selector
from tests.configs import configured
from tests.crawlers.runs.test_stray_transfers import finalized_crawl, owed

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]

OWNER, DONOR, OTHER, ATTACKER = ACCOUNTS[1], ACCOUNTS[2], ACCOUNTS[3], ACCOUNTS[4]
UNIT = 10**6  # the test coins' decimals


@pytest.fixture
def dai(node, settings) -> str:
    """A DAI-like token on the chain's stray list."""
    token = node.deploy("TestStableCoin", ["string", "string"], ["DAI (test)", "DAI"])
    settings.CONFIG = configured(
        settings.CONFIG, stray_tokens=(StableCoin("dai", token, 6),), start_block=node.head() + 1
    )
    node.mint(token, DONOR, 1000 * UNIT)
    node.mint(token, OTHER, 1000 * UNIT)
    return token


def test_a_stray_coin_that_came_back_in_the_addresses_own_transaction_is_not_owed(node, dai):
    """A swap's leg or a pull the address made (DESIGN: a transaction it signed and everything under it is its
    own money): the counterparty is owed nothing; a donor's mistaken DAI still is."""
    node.approve(dai, OTHER, DONATION_ADDRESS, 40 * UNIT)  # a counterparty (a pool) lets the address take it
    node.transfer_from(dai, DONATION_ADDRESS, OTHER, DONATION_ADDRESS, 40 * UNIT)
    node.transfer_token(dai, DONOR, DONATION_ADDRESS, 25 * UNIT)
    finalized_crawl(node)
    assert owed() == {(DONOR, "dai", Decimal(25), "stray-coin", "owed")}


def test_a_stray_coin_that_came_back_under_a_safes_own_call_is_not_owed(node, dai):
    """The same for a Safe: what reaches it under a call it made (its owners signed) is its own money."""
    template = node.deploy("BatchSafe", ["address"], [OWNER])
    node.set_code(DONATION_ADDRESS, node.rpc("eth_getCode", template, "latest"))
    node.approve(dai, OTHER, DONATION_ADDRESS, 40 * UNIT)
    pull = bytes.fromhex(
        node.call_data(
            "transferFrom(address,address,uint256)",
            ["address", "address", "uint256"],
            [OTHER, DONATION_ADDRESS, 40 * UNIT],
        )[2:]
    )
    packed = b"\x00" + bytes.fromhex(dai[2:]) + (0).to_bytes(32, "big") + len(pull).to_bytes(32, "big") + pull
    data = "0x" + (selector("multiSend(bytes)") + encode(["bytes"], [packed])).hex()
    executed = node.send({"from": OWNER, "to": DONATION_ADDRESS, "data": data, "gas": hex(500_000)})
    assert node.receipt(executed)["status"] == "0x1"
    node.transfer_token(dai, DONOR, DONATION_ADDRESS, 25 * UNIT)
    finalized_crawl(node)
    assert owed() == {(DONOR, "dai", Decimal(25), "stray-coin", "owed")}


def test_a_stray_paid_back_before_its_block_was_final_closes_its_row(node, dai):
    """The treasury sends a mistaken DAI back at once: arrival and payment reach the finalized crawler in one
    range, and the payment pays the row its arrival made (it is not listed unmatched, the row not left owed
    to be paid again)."""
    node.transfer_token(dai, DONOR, DONATION_ADDRESS, 25 * UNIT)
    back = node.transfer_token(dai, DONATION_ADDRESS, DONOR, 25 * UNIT)
    finalized_crawl(node)
    row = Refund.objects.get()
    assert (row.donor, row.amount, row.status, row.paid_tx_hash) == (DONOR, Decimal(25), "paid", back)
    assert not UnmatchedPayout.objects.exists()


def test_a_stray_added_by_hand_first_is_not_owed_twice(node, dai, settings):
    """An operator saw the DAI arrive and added its refund by hand before the finalized crawler reached it: the
    rule finds that row and makes no second one (both would be exported and paid)."""
    tx = node.transfer_token(dai, DONOR, DONATION_ADDRESS, 25 * UNIT)
    chain = settings.CONFIG.first_chain.name
    by_hand = refund_add_by_hand(
        chain=chain, donor=DONOR, asset="dai", amount=Decimal(25), tx_hash=tx, note="the donor wrote in", operator="op"
    )
    finalized_crawl(node)
    row = Refund.objects.get()
    assert (row.pk, row.reason, row.source_log_index) == (by_hand.pk, "by-hand", 0)  # it names the Transfer now


def _word(value: int | str) -> str:
    body = value[2:] if isinstance(value, str) else f"{value:x}"
    return "0x" + body.rjust(64, "0")


@pytest.mark.parametrize("lie", ["another block hash", "a transaction its block does not hold"])
def test_a_stray_transfer_the_finalized_block_does_not_hold_is_never_owed(node, proxy, dai, lie):
    """A provider answers eth_getLogs with a Transfer of a listed token that its blocks do not hold (a stale
    fork's log, or one made up): no balance the proof reads shows a stray token, so the block itself is the
    only evidence, and the crawler holds instead of owing the "sender" a million DAI."""
    real = node.transfer_token(dai, DONOR, DONATION_ADDRESS, 25 * UNIT)
    receipt = node.receipt(real)
    forged = {
        "address": dai,
        "topics": [TRANSFER_TOPIC, _word(ATTACKER), _word(DONATION_ADDRESS)],
        "data": _word(10**6 * UNIT),
        "blockNumber": receipt["blockNumber"],
        "blockHash": "0x" + "cd" * 32 if lie == "another block hash" else receipt["blockHash"],
        "transactionHash": "0x" + "ab" * 32,
        "transactionIndex": "0x7",
        "logIndex": "0x9",
        "removed": False,
    }
    node.mine(2)
    assert crawl(LATEST).held is None
    proxy.arm(
        "eth_getLogs",
        "rewrite",
        count=None,
        when=lambda params: "address" not in params[0],  # the filter to us: every contract
        rewrite=lambda logs, _: [*logs, forged],
    )
    held = crawl(FINALIZED).held
    assert held is not None
    forged_tx = forged["transactionHash"]
    assert f"block: {int(receipt['blockNumber'], 16)} -- Transfer log of tx '{forged_tx}' (dai, a stray token)" in held
    assert not Refund.objects.exists()

    proxy.disarm()
    assert crawl(FINALIZED).held is None
    assert owed() == {(DONOR, "dai", Decimal(25), "stray-coin", "owed")}
