"""A lying primary against an honest check provider (DWS_RPC_CHECK_URL): lies the first cross-check let
through (found by attacking issue 34's check, one test each).

The primary is the fault proxy in front of the test node (`lying`: crawlers/runs/test_second_provider_lies.py);
the check provider is the node itself.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from crawlers.models import CHAIN, FINALIZED
from crawlers.record.cursors import cursor_get
from crawlers.runs.crawl import crawl
from donations.models import Donation
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER
from tests.crawlers.runs.test_second_provider_lies import (  # noqa: F401 (the fixture)
    bend_coin_balance,
    bend_eth_balance,
    held_critically,
    in_block,
    lying,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]

USDT = 10**6


def test_a_transfer_hidden_by_a_bent_opening_balance_holds_the_chain(node, lying, caplog):
    """The range's opening balances come from the primary alone: dropping a coin donation's log and adding
    its amount to every balance before its block closes the range's identity (opening = closing), and the
    closing balance the check provider compares is the true one. The donation was skipped, the cursor past it."""
    usdt = node.coins["usdt"]
    node.mint(usdt, ACCOUNTS[2], 100 * USDT)
    tx = node.transfer_token(usdt, ACCOUNTS[2], DONATION_ADDRESS, 40 * USDT)
    block = int(node.receipt(tx)["blockNumber"], 16)
    node.mine(2)
    lying.arm(
        "eth_getLogs",
        "rewrite",
        count=None,
        rewrite=lambda logs, _params: [log for log in logs if log.get("transactionHash") != tx],
    )
    bend_coin_balance(lying, node, usdt, since=0, by=40 * USDT, until=block)  # every block before it: +40

    with caplog.at_level(logging.INFO):
        result = crawl(FINALIZED)

    held_critically(caplog, result, "balances before blocks", f"usdt: ours says {40 * USDT}, the check provider says 0")
    assert cursor_get(chain=CHAIN, label=FINALIZED).value < block
    assert not Donation.objects.exists()


def test_an_eth_donation_hidden_by_a_bent_opening_balance_holds_the_chain(node, lying, caplog):
    node.mine(1)
    tx = node.send_eth(ACCOUNTS[1], DONATION_ADDRESS, ETHER)
    block = int(node.receipt(tx)["blockNumber"], 16)
    node.mine(2)

    def dropped(result: Any, _params: list) -> Any:
        kept = [t for t in result["transactions"] if (t["hash"] if isinstance(t, dict) else t) != tx]
        return {**result, "transactions": kept}

    lying.arm("eth_getBlockByNumber", "rewrite", count=None, when=in_block(block), rewrite=dropped)
    bend_eth_balance(lying, node, since=0, by=ETHER, until=block)

    with caplog.at_level(logging.INFO):
        result = crawl(FINALIZED)

    held_critically(caplog, result, "balances before blocks", "eth: ours says")
    assert cursor_get(chain=CHAIN, label=FINALIZED).value < block
    assert not Donation.objects.exists()
