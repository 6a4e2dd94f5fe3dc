"""The mint rule's decoding (crawlers/decode/mints.py) on hand-built logs in Circle's layouts: the events'
topics are the hashes of their signatures, a burn message is read in its version's layout only, and a
mint is a depositor's only when the first MessageReceived after it, from a known transmitter, names the
recipient and exactly the amount minted."""

from __future__ import annotations

from eth_abi import encode
from eth_utils import keccak

from crawlers.decode.mints import MESSAGE_RECEIVED_V1, MESSAGE_RECEIVED_V2, burn_message, mint_depositor
from tests.cctp import V1_TOKEN_MESSENGER, V1_TRANSMITTER, V2_TOKEN_MESSENGER, V2_TRANSMITTER
from tests.cctp import burn_message as burn_body

US, DEPOSITOR, TX = "0x" + "11" * 20, "0x" + "22" * 20, "0x" + "aa" * 32


def test_the_event_topics_are_circles_signatures():
    assert "0x" + keccak(text="MessageReceived(address,uint32,uint64,bytes32,bytes)").hex() == MESSAGE_RECEIVED_V1
    assert (
        "0x" + keccak(text="MessageReceived(address,uint32,bytes32,bytes32,uint32,bytes)").hex() == MESSAGE_RECEIVED_V2
    )


def test_a_burn_message_is_read_in_its_versions_layout_only():
    v1 = burn_body(v2=False, recipient=US, amount=5, depositor=DEPOSITOR)
    v2 = burn_body(v2=True, recipient=US, amount=5, depositor=DEPOSITOR, fee=2)
    assert burn_message(v1, v2=False) is not None
    assert (burn_message(v2, v2=True).minted, burn_message(v2, v2=True).depositor) == (3, DEPOSITOR)
    assert burn_message(v1, v2=True) is None
    assert burn_message(v2, v2=False) is None
    dirty = bytearray(v1)
    dirty[100] = 1  # a messageSender with a high byte set is no EVM address
    assert burn_message(bytes(dirty), v2=False) is None


def mint(index: int, amount: int) -> dict:
    zero, to = "0x" + "00" * 32, "0x" + US[2:].rjust(64, "0")
    return {
        "transactionHash": TX,
        "logIndex": hex(index),
        "topics": ["0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef", zero, to],
        "data": hex(amount),
    }


def received(
    index: int, *, v2: bool, amount: int, recipient: str = US, address: str | None = None, sender: str | None = None
) -> dict:
    body = burn_body(v2=v2, recipient=recipient, amount=amount, depositor=DEPOSITOR)
    sender = sender or (V2_TOKEN_MESSENGER if v2 else V1_TOKEN_MESSENGER)
    data = encode(["uint32", "bytes32", "bytes"], [6, bytes.fromhex(sender[2:].rjust(64, "0")), body])
    return {
        "transactionHash": TX,
        "logIndex": hex(index),
        "address": address or (V2_TRANSMITTER if v2 else V1_TRANSMITTER),
        "topics": [MESSAGE_RECEIVED_V2 if v2 else MESSAGE_RECEIVED_V1],
        "data": "0x" + data.hex(),
    }


def test_a_mint_is_the_depositors_only_when_the_message_after_it_names_it():
    assert mint_depositor(mint(0, 9), [mint(0, 9), received(1, v2=True, amount=9)], US) == DEPOSITOR
    assert mint_depositor(mint(0, 9), [mint(0, 9), received(1, v2=False, amount=9)], US) == DEPOSITOR
    assert mint_depositor(mint(0, 9), [mint(0, 9), received(1, v2=False, amount=8)], US) is None
    assert mint_depositor(mint(0, 9), [mint(0, 9), received(1, v2=False, amount=9, recipient=DEPOSITOR)], US) is None
    elsewhere = received(1, v2=False, amount=9, address="0x" + "33" * 20)
    assert mint_depositor(mint(0, 9), [mint(0, 9), elsewhere], US) is None  # not Circle's transmitter
    assert mint_depositor(mint(2, 9), [received(1, v2=False, amount=9), mint(2, 9)], US) is None  # before it
    # the first message after the mint is the one that minted it: a later one naming us does not count
    first_elsewhere = [mint(0, 9), received(1, v2=False, amount=9, recipient=DEPOSITOR), received(2, v2=True, amount=9)]
    assert mint_depositor(mint(0, 9), first_elsewhere, US) is None


def test_one_message_names_the_depositor_of_the_one_mint_just_before_it():
    """A stranger's transaction: a mint by another minter (an unknown bridge's claim he relayed), then his claim
    of his own CCTP burn of the same amount. The message is the second mint's; read as the first's too, he
    was credited twice for one burn (found by attack32)."""
    logs = [mint(0, 9), mint(1, 9), received(2, v2=False, amount=9)]
    assert mint_depositor(mint(0, 9), logs, US) is None
    assert mint_depositor(mint(1, 9), logs, US) == DEPOSITOR


def test_a_message_a_token_messenger_did_not_send_is_no_burn():
    """Anyone can send a CCTP message with any body (sendMessage), and Circle's transmitter emits
    MessageReceived for it: a burn-shaped body after a mint by another minter named its sender the depositor
    of someone else's coins. Only a source domain's TokenMessenger sends burns."""
    for v2 in (False, True):
        generic = received(1, v2=v2, amount=9, sender="0x" + "cd" * 20)
        assert mint_depositor(mint(0, 9), [mint(0, 9), generic], US) is None
