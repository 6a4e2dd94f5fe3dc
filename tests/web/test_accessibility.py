"""Accessibility: axe-core finds no serious or critical violation at desktop (1280 px) and phone (390 px)
sizes in every state of the widget, and the whole donation path works with the keyboard alone.

axe-core is the npm package (devDependencies), injected into the page by the test through the
browser's debugging protocol (so the page's Content-Security-Policy, which refuses inline scripts, is
left as it is); the page is the real one, served by the live server against the real API and chain.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from donations.models import DonationStats
from tests.api.support import make_donation, refresh_user_data
from tests.chain import ACCOUNTS
from tests.web.browser import DESKTOP, PHONE, AnnouncedWallet, assert_no_script_errors, switch_wallet

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("campaign_row", "eth_price")]

AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"
DONOR = ACCOUNTS[6]
TWO_WALLETS = [
    AnnouncedWallet(
        name="Alpha Wallet", rdns="io.alpha", uuid="00000000-0000-4000-8000-00000000000a", account=ACCOUNTS[3]
    ),
    AnnouncedWallet(name="Beta Wallet", rdns="io.beta", uuid="00000000-0000-4000-8000-00000000000b", account=DONOR),
]


def serious_violations(page: Page) -> list[str]:
    """axe-core's serious and critical violations on the page as it is now: "rule: selector" lines."""
    if not page.evaluate("typeof window.axe === 'object'"):
        page.evaluate(AXE.read_text())
    result = page.evaluate("axe.run(document, { resultTypes: ['violations'] })")
    return [
        f"{violation['id']} ({violation['impact']}): {' '.join(node['target'][0] for node in violation['nodes'])}"
        for violation in result["violations"]
        if violation["impact"] in ("serious", "critical")
    ]


def assert_accessible_at_both_sizes(page: Page) -> None:
    for size in (DESKTOP, PHONE):
        page.set_viewport_size(size)
        page.wait_for_timeout(100)  # layout settles
        assert serious_violations(page) == [], size


def with_donations(address: str) -> None:
    """Two of the donor's donations, one confirmed and one pending, so their table is on the page."""
    make_donation(address, asset="usdc", amount="25", usd_amount="25.00", tokens=25_000)
    make_donation(address, status="unconfirmed")
    refresh_user_data(address)


def test_no_wallet_idle_and_with_a_payment_request(live_server, plain_page, dev_chain) -> None:
    page = plain_page(DESKTOP)
    page.goto(live_server.url)
    expect(page.locator("#sale-status")).to_have_text("Sale open")
    assert_accessible_at_both_sizes(page)
    page.fill("#amount", "0.5")
    expect(page.locator("#pay-code")).to_be_visible()
    page.fill("#lookup-address", "0x1234")  # an error shown
    page.click("#lookup")
    expect(page.locator("#lookup-error")).to_be_visible()
    assert_accessible_at_both_sizes(page)
    assert_no_script_errors(page)


def test_connected_with_donations(live_server, wallet_page, dev_chain) -> None:
    with_donations(DONOR)
    page = wallet_page(rpc_url=dev_chain.url, account=DONOR, connected=True)
    page.goto(live_server.url)
    expect(page.locator("#donations-body tr[data-tx-hash]")).to_have_count(2)
    page.fill("#amount", "abc")  # the amount's error shown
    expect(page.locator("#amount-error")).to_be_visible()
    assert_accessible_at_both_sizes(page)


def test_on_the_wrong_chain(live_server, wallet_page, dev_chain) -> None:
    page = wallet_page(rpc_url=dev_chain.url, account=DONOR, connected=True, chain_id="0x1")
    page.goto(live_server.url)
    expect(page.locator("#network-status")).to_have_attribute("data-state", "wrong-network")
    expect(page.locator("#switch-network")).to_be_visible()
    assert_accessible_at_both_sizes(page)


@pytest.mark.parametrize(
    ("status", "tokens", "pill"), [("paused", 0, "Sale paused"), ("closed", 500_000_000, "Sale closed (sold out)")]
)
def test_paused_and_sold_out(live_server, wallet_page, dev_chain, status, tokens, pill) -> None:
    DonationStats.objects.update(status=status, tokens=tokens)
    page = wallet_page(rpc_url=dev_chain.url, account=DONOR, connected=True)
    page.goto(live_server.url)
    expect(page.locator("#sale-status")).to_have_text(pill)
    assert_accessible_at_both_sizes(page)


def test_the_wallet_chooser(live_server, wallets_page, dev_chain) -> None:
    page = wallets_page(rpc_url=dev_chain.url, wallets=TWO_WALLETS)
    page.goto(live_server.url)
    page.click("#connect")
    expect(page.locator("#wallet-chooser")).to_be_visible()
    assert_accessible_at_both_sizes(page)


def test_the_network_choice_on_two_chains_by_keyboard(live_server, wallet_page, dev_chain, two_chains) -> None:
    """Two networks offered: the choice is a labelled group of buttons, picked with Tab and Enter (the wallet
    adds and switches to the rollup); then the wallet moves elsewhere and the switch button is offered."""
    page = wallet_page(rpc_url=dev_chain.url, account=DONOR, connected=True, viewport=PHONE)
    page.goto(live_server.url)
    expect(page.locator("#network-status")).to_have_attribute("data-state", "ok")
    assert_accessible_at_both_sizes(page)

    tab_to(page, '#network-choice button[data-chain="rollup"]')
    page.keyboard.press("Enter")
    expect(page.locator('#network-choice button[data-chain="rollup"]')).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#network-status")).to_contain_text("Connected to Local rollup")
    switch_wallet(page, 31337)
    expect(page.locator("#switch-network")).to_be_visible()
    expect(page.locator("#switch-network")).to_have_text("Switch to Local rollup")
    assert_accessible_at_both_sizes(page)
    assert_no_script_errors(page)


def tab_to(page: Page, selector: str, *, limit: int = 80) -> None:
    """Press Tab until `selector` has the focus, as a keyboard user would; fail if it never does."""
    for _ in range(limit):
        if page.evaluate("(s) => document.activeElement?.matches(s) ?? false", selector):
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"{selector} never got the keyboard focus in {limit} Tab presses")


def test_the_whole_donation_path_works_by_keyboard(live_server, wallets_page, dev_chain) -> None:
    """Connect (choosing a wallet), pick the asset, type the amount, donate: keys only, no click."""
    dev_chain.mint("0xe7f1725e7734ce288f8367e1bb143e90bb3f0512", DONOR, 50 * 10**6)
    page = wallets_page(rpc_url=dev_chain.url, wallets=TWO_WALLETS, viewport=PHONE)
    page.goto(live_server.url)
    expect(page.locator("#sale-status")).to_have_text("Sale open")

    tab_to(page, "#connect")
    page.keyboard.press("Enter")
    expect(page.locator("#wallet-chooser")).to_be_visible()
    # the focus moved into the chooser, on the first wallet
    assert page.evaluate("document.activeElement.textContent") == "Alpha Wallet"
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    expect(page.locator("#account-address")).to_have_text(DONOR)

    tab_to(page, 'input[name="asset"]:checked')
    page.keyboard.press("ArrowRight")  # ETH -> USDT
    page.keyboard.press("ArrowRight")  # USDT -> USDC
    expect(page.locator('input[name="asset"][value="usdc"]')).to_be_checked()
    tab_to(page, "#amount")
    page.keyboard.type("12.5")
    expect(page.locator("#estimate")).to_have_text("12,500")
    tab_to(page, "#donate")
    page.keyboard.press("Enter")
    expect(page.locator("#tx-hash")).to_have_text(re.compile(r"^0x[0-9a-f]{64}$"))
    assert len(page.wallets["Beta Wallet"].sent) == 1
    assert page.wallets["Alpha Wallet"].sent == []
    assert_no_script_errors(page)
