"""A Safe read by its events under attack: a failing or lying provider, a dishonest operator (crawlers/scan/safe.py).

Each test puts a real Safe 1.4.1 (tests/safe_wallet.py) on anvil and injects its fault at the provider's
boundary (tests/rpc_proxy.py); what is asserted is what the sale sees: every donation credited once, or the
chain held.
"""

from __future__ import annotations

import pytest

from crawlers.models import FINALIZED
from crawlers.runs.crawl import crawl
from donations.models import Donation
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER
from tests.crawlers.scan.test_safe_events import relay
from tests.safe_wallet import execute, install_safe

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]

OWNER, PAYEE = ACCOUNTS[1], ACCOUNTS[6]


def test_an_execution_block_the_provider_cannot_trace_costs_no_donation_before_it(node, proxy):
    """The execution block's trace fails (a null answer): the range holds there, and the blocks before it
    recorded meanwhile must be proven ones (an internal donation is found only by its block's trace)."""
    install_safe(node, DONATION_ADDRESS, [OWNER])
    node.mine(20)
    assert crawl(FINALIZED).held is None
    relayed = relay(node, ACCOUNTS[3], ETHER)  # an internal donation: SafeReceived, no transaction to us
    node.mine(5)
    paid = execute(node, DONATION_ADDRESS, OWNER, PAYEE, ETHER // 2)
    executed = int(node.receipt(paid)["blockNumber"], 16)
    node.mine(20)
    for method in ("trace_block", "debug_traceBlockByNumber"):
        proxy.arm(method, "null", count=None, when=lambda params: bool(params) and params[0] == hex(executed))

    assert crawl(FINALIZED).held is not None
    proxy.faults.clear()
    assert crawl(FINALIZED).held is None

    assert Donation.objects.get(tx_hash=relayed).status == "confirmed"
