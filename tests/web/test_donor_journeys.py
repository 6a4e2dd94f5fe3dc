"""The donor's journeys through the page, one test each, in headless Chromium against the real stack:
the live Django server (page and delphi API), PostgreSQL, Redis, the crawlers and a wallet on anvil.
Donations are real transfers on anvil that the real crawlers record and confirm. Screenshots go to
var/screenshots/ (see tests/web/browser.py)."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from playwright.sync_api import expect

from affiliates.models import AffiliateDonation
from affiliates.services import affiliate_donations_resolve
from crawlers.runs.crawl import crawl
from donations.models import Donation, DonationStatus, UserData
from donations.repair import totals_repair
from prices.services import fetch_prices
from tests.api.support import make_donation, make_donor
from tests.chain import DONATION_ADDRESS
from tests.invariants import assert_ledger_invariants
from tests.web.browser import PHONE, ApiLog, assert_no_script_errors, screenshot
from tests.web.pages import DONOR, REFERRER, USDC, WEI, connect, run_crawlers, signer_of

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("campaign_row")]


def test_an_eth_and_a_usdc_donation_go_from_click_to_confirmed_tokens(
    live_server, wallet_page, dev_chain, eth_price
) -> None:
    """ETH then USDC: sent from the widget, pending as soon as the latest crawler has them, confirmed with
    their tokens once finalized, the campaign and the donor's totals following; desktop screenshots."""
    chain = dev_chain
    chain.mint(USDC, DONOR, 1_000 * 10**6)
    page = wallet_page(rpc_url=chain.url, account=DONOR)
    api = ApiLog(page)
    page.goto(live_server.url)
    expect(page.locator("#dev-chain-badge")).to_contain_text("chain id 31337")
    expect(page.locator("#sale-status")).to_have_text("Sale open")
    expect(page.locator("#raised")).to_have_text("$0.00")
    expect(page.locator("#tokens-sold")).to_have_text("0")
    expect(page.locator("#tier")).to_have_text("1")
    expect(page.locator("#token-price")).to_have_text("$0.001")
    expect(page.locator("#eth-price")).to_contain_text("1 ETH = $2,000.12")

    connect(page, DONOR)
    expect(page.locator("#network-status")).to_have_attribute("data-state", "ok")
    expect(page.locator("#donations-empty")).to_be_visible()
    expect(page.locator("#user-total")).to_have_text("$0.00")
    amount = page.locator("#amount")
    amount.press_sequentially("0.25")
    expect(page.locator("#estimate")).to_have_text("500,030")  # ceiling(0.25 * 2000.12 / 0.001)
    screenshot(page, "page-desktop")

    # ETH: a real transfer
    before = chain.rpc("eth_getBalance", DONATION_ADDRESS, "latest")
    eth_price_reads = api.gets("/price/eth")
    page.click("#donate")
    expect(page.locator("#tx-hash")).to_have_text(re.compile(r"^0x[0-9a-f]{64}$"))
    eth_tx = page.locator("#tx-hash").inner_text()
    assert page.wallet.sent == [eth_tx]
    assert int(chain.rpc("eth_getBalance", DONATION_ADDRESS, "latest"), 16) - int(before, 16) == WEI // 4
    assert api.gets("/price/eth") > eth_price_reads  # Donate re-read the ETH price
    assert api.posts("/affiliate/donation") == []  # no referral code: nothing to sign

    # the latest crawler records it: the page shows it pending, without a reload
    fetch_prices()
    crawl("latest")
    assert Donation.objects.get(tx_hash=eth_tx).status == DonationStatus.UNCONFIRMED
    expect(page.locator("#tx-status")).to_have_attribute("data-phase", "unconfirmed")
    expect(page.locator(f'tr[data-tx-hash="{eth_tx}"]')).to_contain_text("unconfirmed")
    # the block is finalized and the finalized crawler confirms it: tokens credited, totals updated
    chain.mine(3)
    crawl("finalized")
    expect(page.locator("#tx-status")).to_have_text("Confirmed: 500,030 $DWS credited.")
    expect(page.locator("#user-tokens")).to_have_text("500,030")
    expect(page.locator("#raised")).to_have_text("$500.03")

    # USDC: an ERC-20 transfer to the configured contract
    page.check('input[name="asset"][value="usdc"]')
    amount.fill("100")
    expect(page.locator("#estimate")).to_have_text("100,000")
    page.click("#donate")
    expect(page.locator("#tx-hash")).not_to_have_text(eth_tx)
    usdc_tx = page.locator("#tx-hash").inner_text()
    assert page.wallet.sent == [eth_tx, usdc_tx]
    expect(page.locator("#tx-status")).to_have_attribute("data-phase", re.compile("mined|unconfirmed"))
    assert chain.token_balance(USDC, DONATION_ADDRESS) == 100 * 10**6
    run_crawlers(chain)
    expect(page.locator("#tx-status")).to_have_text("Confirmed: 100,000 $DWS credited.")
    expect(page.locator("#user-total")).to_have_text("$600.03")
    expect(page.locator("#user-tokens")).to_have_text("600,030")
    expect(page.locator("#raised")).to_have_text("$600.03")
    expect(page.locator("#tokens-sold")).to_have_text("600,030")
    expect(page.locator("#donations-body tr[data-tx-hash]")).to_have_count(2)
    expect(page.locator(f'tr[data-tx-hash="{usdc_tx}"]')).to_contain_text("100 USDC")
    assert_ledger_invariants()
    screenshot(page, "page-desktop-after-donation")
    assert_no_script_errors(page)


def test_a_referrer_gets_a_link_and_the_referred_donation_is_attributed(
    live_server, wallet_page, dev_chain, eth_price
) -> None:
    """A referrer asks for a link (the first signed call creates the code); a visitor who arrived by it
    donates, signs the attribution, and the affiliate job records it once the crawler has the donation."""
    chain = dev_chain
    # An address never seen donating gets no code (no record is made for a free key): the referrer has one.
    make_donation(REFERRER, status="unconfirmed")
    referrer_page = wallet_page(rpc_url=chain.url, account=REFERRER, connected=True)
    referrer_page.goto(live_server.url)
    expect(referrer_page.locator("#account-address")).to_have_text(REFERRER)
    referrer_page.click("#referral")
    link = f"Your referral link: {live_server.url}/donate?afc="
    expect(referrer_page.locator("#referral-status")).to_contain_text(link)
    code = UserData.objects.get(address=REFERRER).affiliate_code
    expect(referrer_page.locator("#referral-status")).to_have_text(f"{link}{code}")

    page = wallet_page(rpc_url=chain.url, account=DONOR)
    api = ApiLog(page)
    page.goto(f"{live_server.url}/?afc={code}")
    page.goto(live_server.url)  # the referral code outlives a reload without it (kept for the session)
    connect(page, DONOR)
    page.locator("#amount").press_sequentially("0.25")
    page.click("#donate")
    expect(page.locator("#tx-hash")).to_have_text(re.compile(r"^0x[0-9a-f]{64}$"))
    eth_tx = page.locator("#tx-hash").inner_text()
    expect(page.locator("#affiliate-status")).to_contain_text(f"Referral code {code} recorded")
    [claim] = api.posts("/affiliate/donation")
    assert claim.body == {"tx_hash": eth_tx, "code": code, "chain": "eth"}  # the donation's chain, always named
    assert claim.headers["delphi-key"] == DONOR
    assert signer_of(claim, "affiliate donation") == DONOR

    run_crawlers(chain)
    affiliate_donations_resolve()
    attributed = AffiliateDonation.objects.get(tx_hash=eth_tx)
    assert (attributed.signer, attributed.affiliate_code, attributed.status) == (DONOR, code, "attributed")
    assert_no_script_errors(page)


def test_a_donor_stakes_then_unstakes_with_the_seven_day_countdown(live_server, wallet_page, dev_chain) -> None:
    """Each step signed by the wallet; no staking while unstaking."""
    make_donor(DONOR, tokens=600_030, usd_amount="600.03")
    page = wallet_page(rpc_url=dev_chain.url, account=DONOR, connected=True)
    api = ApiLog(page)
    page.goto(live_server.url)
    expect(page.locator("#stake-state")).to_have_text("600,030 tokens available to stake.")
    page.fill("#stake-amount", "1000")
    page.click("#stake")
    expect(page.locator("#stake-status")).to_have_text("Staking done.")
    expect(page.locator("#user-staked")).to_have_text("1,000")
    expect(page.locator("#stake-state")).to_have_text("1,000 tokens staked; 599,030 available to stake.")
    [stake] = api.posts("/user/stake")
    assert stake.body == {"amount": "1000"}
    assert signer_of(stake, "user stake") == DONOR
    assert UserData.objects.get(address=DONOR).staked == 1000
    page.click("#unstake")
    expect(page.locator("#stake-state")).to_have_text("Unstaking 1,000 tokens (takes 7 days from the request).")
    expect(page.locator("#unstake-countdown")).to_contain_text(re.compile(r"Tokens released in 6d 23h 59m \d+s"))
    expect(page.locator("#stake-form")).to_be_hidden()
    [unstake] = api.posts("/user/unstake")
    assert signer_of(unstake, "user unstake") == DONOR
    record = UserData.objects.get(address=DONOR)
    assert (record.status, record.staked, record.tokens) == ("unstaking", 1000, 600030)
    assert_no_script_errors(page)


def test_on_a_phone_the_widget_comes_first_and_nothing_overflows(live_server, wallet_page, dev_chain) -> None:
    make_donor(DONOR, tokens=600_030, usd_amount="600.03")
    totals_repair(operator="test", tiers=settings.CONFIG.sale_tiers)  # the campaign counts it too (the screenshot)
    phone = wallet_page(rpc_url=dev_chain.url, account=DONOR, connected=True, viewport=PHONE)
    phone.goto(live_server.url)
    expect(phone.locator("#account-address")).to_have_text(DONOR)
    expect(phone.locator("#user-tokens")).to_have_text("600,030")
    expect(phone.locator("#raised")).to_have_text("$600.03")
    widget, pitch = phone.locator("#widget").bounding_box(), phone.locator(".pitch").bounding_box()
    assert widget["y"] < pitch["y"]
    assert widget["x"] >= 0
    assert widget["x"] + widget["width"] <= PHONE["width"]
    assert phone.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    screenshot(phone, "page-phone")
    assert_no_script_errors(phone)
