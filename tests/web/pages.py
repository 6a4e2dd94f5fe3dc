"""What the browser tests share: the server as `make run` runs it on the test's anvil, the dev ETH
price, the crawlers' cycle, and reading who signed a delphi request."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from eth_account import Account
from eth_account.messages import encode_defunct
from playwright.sync_api import Page, expect

from crawlers.runs.crawl import crawl
from prices.services import fetch_prices
from tests.chain import ACCOUNTS, Anvil
from tests.configs import configured

WEI = 10**18
DONOR, REFERRER = ACCOUNTS[1], ACCOUNTS[2]
USDC = "0xe7f1725e7734ce288f8367e1bb143e90bb3f0512"  # deploy/env.local's USDC, where anvil_node deploys it


@pytest.fixture
def dev_chain(settings, anvil_node: Anvil) -> Anvil:
    """The server as `make run` runs it: on the local dev chain (DWS_CHAIN_ID=31337) with the dev ETH
    price, its crawlers reading the test's anvil from the next block on."""
    settings.CONFIG = configured(
        settings.CONFIG,
        chain_id=31337,
        rpc_url=anvil_node.url,
        start_block=anvil_node.head() + 1,
        dev_eth_price=Decimal("2000.12"),
    )
    settings.WEB_PENDING_REFRESH_SECONDS = 1
    return anvil_node


@pytest.fixture
def eth_price(dev_chain: Anvil) -> None:
    fetch_prices()  # this minute's ETH price, as beat's price cycle writes it (the dev price source)


def connect(page: Page, account: str) -> None:
    page.click("#connect")
    expect(page.locator("#account-address")).to_have_text(account)


def run_crawlers(chain: Anvil) -> None:
    """What beat does every 12 s and 60 s, once the chain has finalized the donation's block."""
    fetch_prices()
    crawl("latest")
    chain.mine(3)  # `finalized` trails the head by two blocks
    crawl("finalized")


def signer_of(call, words: str) -> str:
    """The address that signed a recorded delphi request over `words`."""
    ts = call.headers["delphi-ts"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\+00:00", ts)
    message = f"{words}, {call.headers['delphi-key']}, {ts}"
    return Account.recover_message(encode_defunct(text=message), signature=call.headers["delphi-signature"]).lower()
