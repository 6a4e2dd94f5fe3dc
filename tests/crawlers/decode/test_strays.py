"""Foreign Transfer logs decoded (crawlers/decode/strays.py): a well-known token's transfer is owed back,
anything else anyone can emit naming the address is counted, and nothing malformed raises."""

from __future__ import annotations

from crawlers.chain.calls import TRANSFER_TOPIC, address_topic
from crawlers.decode.strays import foreign_arrivals, token_payouts
from donations.refund_values import StrayTransfer, Token

US = "0x" + "a0" * 20
DONOR = "0x" + "d0" * 20
DAI = Token("dai", "0x" + "da" * 20, 18)
SPAM = "0x" + "5a" * 20


def log(contract: str, sender: str, to: str, raw: int, *, index: int = 0, **changes) -> dict:
    found = {
        "address": contract,
        "topics": [TRANSFER_TOPIC, address_topic(sender), address_topic(to)],
        "data": "0x" + raw.to_bytes(32, "big").hex(),
        "transactionHash": "0x" + "77" * 32,
        "logIndex": hex(index),
        "blockNumber": hex(9),
        "blockHash": "0x" + "99" * 32,
    }
    return {**found, **changes}


def test_a_known_token_from_a_sender_is_owed_and_the_rest_is_counted_per_block_and_contract():
    logs = [
        log(DAI.contract, DONOR, US, 5 * 10**18, index=1),
        log(DAI.contract, DONOR, US, 0, index=2),  # zero value: poisoning
        log(DAI.contract, "0x" + "00" * 20, US, 10**18, index=3),  # minted: no sender to pay back
        log(SPAM, DONOR, US, 10**30, index=4),
        log(SPAM, DONOR, US, 1, index=5, data="0xzz"),  # not a quantity
        log(
            SPAM,
            DONOR,
            US,
            1,
            index=6,
            topics=[TRANSFER_TOPIC, address_topic(DONOR), address_topic(US), "0x" + "0" * 64],
        ),
        log(SPAM, DONOR, US, 1, index=7, removed=True),  # taken back by a re-org: nothing
        log(SPAM, DONOR, US, 1, index=8, blockNumber=None, logIndex=None),
    ]
    found = foreign_arrivals(logs, {DAI.contract: DAI}, US)
    assert found.strays == [StrayTransfer("0x" + "77" * 32, 1, 9, DONOR, DAI, 5 * 10**18)]
    assert found.counted == {(9, DAI.contract): 2, (9, SPAM): 3, (0, SPAM): 1}


def test_only_a_known_token_leaving_the_address_to_someone_else_is_a_payout():
    logs = [
        log(DAI.contract, US, DONOR, 10**18, index=1),
        log(DAI.contract, US, US, 10**18, index=2),  # to itself
        log(SPAM, US, DONOR, 10**18, index=3),  # a token it may not owe (a fake event naming it)
        log(DAI.contract, DONOR, US, 10**18, index=4),  # arriving
    ]
    payouts = token_payouts(logs, {DAI.contract: DAI}, US)
    assert [(p.log_index, p.recipient, p.raw) for p in payouts] == [(1, DONOR, 10**18)]
