"""What the browser tests share: the server as `make run` runs it on the test's anvil (and on two local
chains), the dev ETH price, the crawlers' cycle, and reading who signed a delphi request."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest
from eth_account import Account
from eth_account.messages import encode_defunct
from playwright.sync_api import Page, expect

from crawlers.runs.address_code import check_address_codes
from crawlers.runs.crawl import crawl
from dws_project.config_values import parse_stable_coins
from prices.services import fetch_prices
from tests.chain import ACCOUNTS, PORT_RANGE, Anvil, free_port
from tests.configs import configured, with_chains
from web.dev_chain import DevChain, dev_chain_setup

WEI = 10**18
DONOR, REFERRER = ACCOUNTS[1], ACCOUNTS[2]
USDC = "0xe7f1725e7734ce288f8367e1bb143e90bb3f0512"  # deploy/env.local's USDC, where anvil_node deploys it
# make run's second chain, as deploy/env.local-chain configures it: the local rollup and its own coins
LOCAL_CHAINS = dict(
    line.split("=", 1)
    for line in (Path(__file__).resolve().parents[2] / "deploy" / "env.local-chain").read_text().splitlines()
    if line.strip() and not line.startswith("#")
)
ROLLUP = "rollup"
ROLLUP_CHAIN_ID = int(LOCAL_CHAINS["DWS_ROLLUP_CHAIN_ID"])
ROLLUP_LABEL = LOCAL_CHAINS["DWS_ROLLUP_LABEL"]
ROLLUP_COINS = parse_stable_coins(LOCAL_CHAINS["DWS_ROLLUP_STABLE_COINS"])
ROLLUP_USDC = next(c.contract for c in ROLLUP_COINS if c.asset == "usdc")
ROLLUP_EXPLORER = "https://rollup-explorer.example/tx/{tx}"


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
def rollup_node() -> Iterator[Anvil]:
    """A second anvil, on the other development chain id: make run's local rollup."""
    with Anvil(port=free_port(PORT_RANGE), extra_args=["--chain-id", str(ROLLUP_CHAIN_ID)]) as node:
        yield node


@pytest.fixture
def two_chains(settings, dev_chain: Anvil, rollup_node: Anvil) -> Anvil:
    """The server as `make run` runs it on two chains: eth on the test's anvil, then the local rollup with its
    own coins where deploy/env.local-chain names them (deployed by `dev_chain_setup`), its public RPC URL for
    wallets and an explorer; both crawled from their next block. Returns the rollup's node."""
    eth = settings.CONFIG.first_chain
    rollup = dataclasses.replace(
        eth,
        name=ROLLUP,
        chain_id=ROLLUP_CHAIN_ID,
        rpc_url=rollup_node.url,
        rpc_check_url=None,
        label=ROLLUP_LABEL,
        stable_coins=ROLLUP_COINS,
        wallet_rpc_url=rollup_node.url,
        explorer_url=ROLLUP_EXPLORER,
    )
    dev_chain_setup(DevChain(rollup_node.url), rollup)
    rollup = dataclasses.replace(rollup, start_block=rollup_node.head() + 1)
    settings.CONFIG = with_chains(settings.CONFIG, eth, rollup)
    check_address_codes("test")  # as a worker's start does: both chains' donation address read (plain)
    return rollup_node


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
