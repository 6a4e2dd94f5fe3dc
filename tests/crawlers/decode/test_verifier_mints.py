"""The public verifier's mint rule (deploy/verify_proof.py `mint_depositor`, which cannot import project code) on
hand-built logs in Circle's CCTP layouts: a coin minted to the address is a depositor's only when the first
MessageReceived of a known transmitter after it names the address and exactly the amount minted (v2: less the
fee executed); its depositor is the burn message's messageSender. Once the crawler's rule
(crawlers/decode/mints.py, issue 32) is in the tree, the two give the same answers on the same logs."""

from __future__ import annotations

import pytest
from eth_abi import encode
from eth_utils import keccak

from crawlers.decode import mints
from tests.cctp import burn_message, word
from tests.hostile_site import verifier_module

US, DEPOSITOR, TX = "0x" + "11" * 20, "0x" + "22" * 20, "0x" + "aa" * 32
V1_TRANSMITTER = "0x0a992d191deec32afe36203ad87d7d289a738f81"  # Circle's, on Ethereum
V2_TRANSMITTER = "0x81d40f21f12a8f0e3252bccb954d722d4c464b64"  # Circle's, on every mainnet
V1_TOKEN_MESSENGER = "0x1682ae6375c4e4a97e4b583bc394c861a46d8962"  # Circle's, on Base: who sends a v1 burn there
V2_TOKEN_MESSENGER = "0x28b5a0e9c621a5badaa536219b3a228c8168cf5d"  # Circle's, on every mainnet
TRANSFER = "0x" + keccak(text="Transfer(address,address,uint256)").hex()


VERIFIER = verifier_module("verify_proof_mints_under_test")


def mint(index: int, amount: int) -> dict:
    return {
        "transactionHash": TX,
        "logIndex": hex(index),
        "topics": [TRANSFER, "0x" + "00" * 32, "0x" + US[2:].rjust(64, "0")],
        "data": hex(amount),
    }


def received(
    index: int,
    *,
    v2: bool,
    amount: int,
    recipient: str = US,
    address: str | None = None,
    fee: int = 0,
    sender: str | None = None,
) -> dict:
    body = burn_message(v2=v2, recipient=recipient, amount=amount, depositor=DEPOSITOR, fee=fee)
    default_sender = V2_TOKEN_MESSENGER if v2 else V1_TOKEN_MESSENGER
    signature = (
        "MessageReceived(address,uint32,bytes32,bytes32,uint32,bytes)"
        if v2
        else "MessageReceived(address,uint32,uint64,bytes32,bytes)"
    )
    return {
        "transactionHash": TX,
        "logIndex": hex(index),
        "address": address or (V2_TRANSMITTER if v2 else V1_TRANSMITTER),
        "topics": ["0x" + keccak(text=signature).hex()],
        "data": "0x" + encode(["uint32", "bytes32", "bytes"], [6, word(sender or default_sender), body]).hex(),
    }


CASES = [
    pytest.param(mint(0, 9), [mint(0, 9), received(1, v2=True, amount=9)], DEPOSITOR, id="v2"),
    pytest.param(mint(0, 9), [mint(0, 9), received(1, v2=False, amount=9)], DEPOSITOR, id="v1"),
    pytest.param(mint(0, 7), [mint(0, 7), received(1, v2=True, amount=9, fee=2)], DEPOSITOR, id="v2 less its fee"),
    pytest.param(mint(0, 9), [mint(0, 9), received(1, v2=False, amount=8)], None, id="another amount"),
    pytest.param(
        mint(0, 9), [mint(0, 9), received(1, v2=False, amount=9, recipient=DEPOSITOR)], None, id="another recipient"
    ),
    pytest.param(
        mint(0, 9),
        [mint(0, 9), received(1, v2=False, amount=9, address="0x" + "33" * 20)],
        None,
        id="not Circle's transmitter",
    ),
    pytest.param(mint(2, 9), [received(1, v2=False, amount=9), mint(2, 9)], None, id="the message before the mint"),
    pytest.param(
        mint(0, 9),
        [mint(0, 9), received(1, v2=False, amount=9, recipient=DEPOSITOR), received(2, v2=True, amount=9)],
        None,
        id="the first message after it names another",
    ),
    pytest.param(mint(0, 9), [mint(0, 9)], None, id="no message: an unknown bridge"),
    pytest.param(
        mint(0, 9),
        [mint(0, 9), mint(1, 9), received(2, v2=False, amount=9)],
        None,
        id="another mint nearer the message: it is that mint's",
    ),
    pytest.param(
        mint(1, 9), [mint(0, 9), mint(1, 9), received(2, v2=False, amount=9)], DEPOSITOR, id="the mint just before"
    ),
    pytest.param(
        mint(0, 9),
        [mint(0, 9), received(1, v2=False, amount=9, sender="0x" + "cd" * 20)],
        None,
        id="v1: a message no TokenMessenger sent",
    ),
    pytest.param(
        mint(0, 9),
        [mint(0, 9), received(1, v2=True, amount=9, sender="0x" + "cd" * 20)],
        None,
        id="v2: a message no TokenMessenger sent",
    ),
]


def test_the_event_topics_are_circles_signatures():
    v1 = "0x" + keccak(text="MessageReceived(address,uint32,uint64,bytes32,bytes)").hex()
    v2 = "0x" + keccak(text="MessageReceived(address,uint32,bytes32,bytes32,uint32,bytes)").hex()
    assert (v1, v2) == (VERIFIER.MESSAGE_RECEIVED_V1, VERIFIER.MESSAGE_RECEIVED_V2)


@pytest.mark.parametrize(("minted", "logs", "depositor"), CASES)
def test_a_mint_is_the_depositors_only_when_the_message_after_it_names_it(minted, logs, depositor):
    assert VERIFIER.mint_depositor(minted, logs, US) == depositor


def test_a_burn_message_with_an_address_word_not_an_address_names_nobody():
    body = bytearray(burn_message(v2=False, recipient=US, amount=9, depositor=DEPOSITOR))
    body[100] = 1
    assert VERIFIER._burn_message(bytes(body), False) is None
    assert VERIFIER._burn_message(burn_message(v2=False, recipient=US, amount=9, depositor=DEPOSITOR), True) is None


@pytest.mark.parametrize(("minted", "logs", "depositor"), CASES)
def test_the_crawler_and_the_verifier_read_a_mint_alike(minted, logs, depositor):
    assert mints.mint_depositor(minted, logs, US) == VERIFIER.mint_depositor(minted, logs, US) == depositor
    assert mints.CCTP_TRANSMITTERS == VERIFIER.CCTP_TRANSMITTERS
    assert mints.CCTP_TOKEN_MESSENGERS == VERIFIER.CCTP_TOKEN_MESSENGERS
