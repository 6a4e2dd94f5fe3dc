"""Every wallet on a desktop: wallets that announce themselves (EIP-6963) are offered in a chooser, the
donor's pick is the one that connects, signs and sends; `window.ethereum` stays the fallback.

The wallets are EIP-1193 providers injected before the page's scripts (tests/web/browser.py), each with
its own dev account on the same anvil node, so the transfer the picked wallet sends is real.
"""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from playwright.sync_api import expect

from tests.chain import ACCOUNTS, DONATION_ADDRESS
from tests.web.browser import AnnouncedWallet, assert_no_script_errors

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("campaign_row", "eth_price")]

ALPHA = AnnouncedWallet(
    name="Alpha Wallet", rdns="io.alpha", uuid="0b1c2d3e-0000-4000-8000-000000000001", account=ACCOUNTS[3]
)
BETA = AnnouncedWallet(
    name="Beta Wallet", rdns="io.beta", uuid="0b1c2d3e-0000-4000-8000-000000000002", account=ACCOUNTS[4]
)


@pytest.mark.parametrize("alpha_won_window_ethereum", [True, False])
def test_with_two_wallets_the_donor_picks_one_and_only_that_one_is_used(
    live_server, wallets_page, dev_chain, alpha_won_window_ethereum
) -> None:
    # When Alpha also won window.ethereum, the page without EIP-6963 would have used it; when neither
    # did, it would have found no wallet at all.
    page = wallets_page(rpc_url=dev_chain.url, wallets=[replace(ALPHA, is_ethereum=alpha_won_window_ethereum), BETA])
    page.goto(live_server.url)
    expect(page.locator("#sale-status")).to_have_text("Sale open")
    expect(page.locator("#wallet-chooser")).to_be_hidden()

    page.click("#connect")
    chooser = page.locator("#wallet-chooser")
    expect(chooser).to_be_visible()
    expect(chooser.get_by_role("button")).to_have_text(["Alpha Wallet", "Beta Wallet"])
    assert page.wallets["Alpha Wallet"].calls == page.wallets["Beta Wallet"].calls == []  # nothing asked yet

    chooser.get_by_role("button", name="Beta Wallet").click()
    expect(page.locator("#account-address")).to_have_text(BETA.account)
    expect(page.locator("#wallet-name")).to_have_text("(Beta Wallet)")
    expect(chooser).to_be_hidden()
    expect(page.locator("#network-status")).to_have_attribute("data-state", "ok")

    before = int(dev_chain.rpc("eth_getBalance", DONATION_ADDRESS, "latest"), 16)
    page.fill("#amount", "0.5")
    page.click("#donate")
    expect(page.locator("#tx-hash")).to_have_text(re.compile(r"^0x[0-9a-f]{64}$"))
    [sent] = page.wallets["Beta Wallet"].sent
    assert page.locator("#tx-hash").inner_text() == sent
    assert int(dev_chain.rpc("eth_getBalance", DONATION_ADDRESS, "latest"), 16) - before == 5 * 10**17
    assert dev_chain.rpc("eth_getTransactionByHash", sent)["from"].lower() == BETA.account
    assert page.wallets["Alpha Wallet"].calls == []  # the other wallet was never asked anything
    assert_no_script_errors(page)

    # The pick is remembered: the next visit talks to Beta without asking again.
    page.reload()
    page.click("#connect")
    expect(page.locator("#account-address")).to_have_text(BETA.account)
    expect(page.locator("#wallet-chooser")).to_be_hidden()
    assert page.wallets["Alpha Wallet"].calls == []


def test_one_announced_wallet_is_used_without_a_chooser_even_without_window_ethereum(
    live_server, wallets_page, dev_chain
) -> None:
    page = wallets_page(rpc_url=dev_chain.url, wallets=[BETA])
    page.goto(live_server.url)
    assert page.evaluate("typeof window.ethereum") == "undefined"
    expect(page.locator("#donate-reason")).to_have_text("Connect your wallet to donate.")
    page.click("#connect")
    expect(page.locator("#account-address")).to_have_text(BETA.account)
    expect(page.locator("#wallet-chooser")).to_be_hidden()
    assert ("eth_getCode", [BETA.account, "latest"]) in page.wallets["Beta Wallet"].calls  # the page asked this wallet
    assert_no_script_errors(page)
