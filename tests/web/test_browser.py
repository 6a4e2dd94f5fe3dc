"""The donation page in headless Chromium, served by a live Django server, with a wallet on anvil.

Until the API is merged, delphi's answers come from tests/web/recorded_api.py (its exact shapes) or
are refused outright ("API down"); the chain, the wallet's transactions and its signatures are real.
"""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from eth_account import Account
from eth_account.messages import encode_defunct
from playwright.sync_api import Page, expect

from tests.web.browser import DESKTOP, PHONE, AnvilNode, assert_no_script_errors, screenshot
from tests.web.recorded_api import RecordedDelphi, refuse_api

pytestmark = pytest.mark.django_db(transaction=True)

WEI = 10**18


@pytest.fixture
def dev_chain(settings) -> None:
    """The server runs against a local dev chain (DWS_CHAIN_ID=31337), as `make run` does."""
    settings.CONFIG = replace(settings.CONFIG, chain_id=31337)
    settings.WEB_PENDING_REFRESH_SECONDS = 1


def donor_and_sale_address(node: AnvilNode) -> tuple[str, str]:
    accounts = node.accounts()
    return accounts[0], accounts[9]  # account 9 is deploy/env.local's DWS_DONATION_ADDRESS


def connect(page: Page, account: str) -> None:
    page.click("#connect")
    expect(page.locator("#account-address")).to_have_text(account)


def test_without_the_api_the_page_says_so_and_offers_no_donation(live_server, plain_page) -> None:
    page = plain_page()
    refuse_api(page)
    page.goto(live_server.url)
    alert = page.locator("#api-status")
    expect(alert).to_be_visible()
    expect(alert).to_have_attribute("data-state", "down")
    expect(alert).to_contain_text("not reachable")
    expect(page.locator("#sale-status")).to_have_text("Status unavailable")
    page.fill("#amount", "1.5")
    expect(page.locator("#estimate")).to_have_text("0")
    expect(page.locator("#donate")).to_be_disabled()
    expect(page.locator("#donate-reason")).to_contain_text("sale service is unreachable")
    # the static part of the page is all there
    expect(page.locator("tr[data-tier]")).to_have_count(3)
    assert_no_script_errors(page)


def test_a_browser_without_a_wallet_is_told_to_install_one(live_server, plain_page, anvil_node) -> None:
    page = plain_page()
    RecordedDelphi(donation_address=donor_and_sale_address(anvil_node)[1]).install(page)
    page.goto(live_server.url)
    expect(page.locator("#sale-status")).to_have_text("Sale open")
    expect(page.locator("#donate-reason")).to_contain_text("No Ethereum wallet found")
    page.click("#connect")
    expect(page.locator("#network-status")).to_contain_text("No Ethereum wallet found in this browser")
    assert_no_script_errors(page)


def test_connecting_on_the_wrong_network_shows_the_account_and_asks_to_switch(
    live_server, wallet_page, anvil_node
) -> None:
    """The server expects Ethereum mainnet; the wallet is on anvil (31337) and cannot switch."""
    donor, sale_address = donor_and_sale_address(anvil_node)
    page = wallet_page(rpc_url=anvil_node.url, account=donor)
    RecordedDelphi(donation_address=sale_address).install(page)
    page.goto(live_server.url)
    expect(page.locator("#donate-reason")).to_have_text("Connect your wallet to donate.")
    connect(page, donor)
    network = page.locator("#network-status")
    expect(network).to_have_attribute("data-state", "wrong-network")
    expect(network).to_contain_text("a local dev chain (anvil)")
    expect(network).to_contain_text("Ethereum mainnet")
    page.fill("#amount", "0.1")
    expect(page.locator("#donate")).to_be_disabled()
    expect(page.locator("#donate-reason")).to_have_text("Switch your wallet to Ethereum mainnet to donate.")
    page.click("#switch-network")
    expect(network).to_contain_text("Your wallet does not know Ethereum mainnet")
    assert [m for m, _ in page.wallet.calls].count("eth_sendTransaction") == 0
    assert_no_script_errors(page)


def test_the_wallet_switches_to_the_expected_network_on_request(
    live_server, wallet_page, anvil_node, dev_chain
) -> None:
    donor, sale_address = donor_and_sale_address(anvil_node)
    page = wallet_page(rpc_url=anvil_node.url, account=donor, chain_id="0x1")  # starts on mainnet
    RecordedDelphi(donation_address=sale_address).install(page)
    page.goto(live_server.url)
    expect(page.locator("#dev-chain-badge")).to_contain_text("chain id 31337")
    connect(page, donor)
    expect(page.locator("#network-status")).to_contain_text("Wrong network: your wallet is on Ethereum mainnet")
    page.click("#switch-network")
    expect(page.locator("#network-status")).to_have_attribute("data-state", "ok")
    expect(page.locator("#network-status")).to_contain_text("a development chain, not real money")
    expect(page.locator("#switch-network")).to_be_hidden()
    assert_no_script_errors(page)


def test_an_eth_donation_end_to_end_on_the_dev_chain(live_server, wallet_page, anvil_node, dev_chain) -> None:
    """Estimate on every keystroke, a real transfer on anvil, the referral signed by the wallet, the
    recorded donation going from pending to confirmed; desktop screenshot."""
    donor, sale_address = donor_and_sale_address(anvil_node)
    page = wallet_page(rpc_url=anvil_node.url, account=donor)
    delphi = RecordedDelphi(donation_address=sale_address).install(page)
    page.goto(f"{live_server.url}/?afc=Ref0Code")
    # the referral code outlives a reload without it (kept for the session)
    page.goto(live_server.url)
    expect(page.locator("#sale-status")).to_have_text("Sale open")
    expect(page.locator("#raised")).to_have_text("$123,456.78")
    expect(page.locator("#tokens-sold")).to_have_text("123,456,789")
    expect(page.locator("#tier")).to_have_text("2")
    expect(page.locator("#token-price")).to_have_text("$0.0015")
    expect(page.locator("#tier-note")).to_have_text("The price rises once 250,000,000 tokens are sold.")
    expect(page.locator("#eth-price")).to_contain_text("1 ETH = $2,000.12")
    expect(page.locator('tr[data-tier="2"]')).to_have_class(re.compile("current"))

    connect(page, donor)
    expect(page.locator("#donations-empty")).to_be_visible()
    amount = page.locator("#amount")
    amount.press_sequentially("0.25")
    # ceiling(0.25 * 2000.12 / 0.0015) = ceiling(333353.33...) = 333354
    expect(page.locator("#estimate")).to_have_text("333,354")
    amount.press("Backspace")
    expect(page.locator("#estimate")).to_have_text("266,683")  # 0.2 ETH: ceiling(266682.66...)
    amount.fill("0.123456789")
    expect(page.locator("#amount-error")).to_have_text("At most 8 decimal places")
    expect(page.locator("#donate")).to_be_disabled()
    amount.fill("0.25")
    expect(page.locator("#donate")).to_be_enabled()
    screenshot(page, "page-desktop")

    before = anvil_node.balance(sale_address)
    eth_price_reads = delphi.gets.count("/price/eth")
    page.click("#donate")
    expect(page.locator("#tx-hash")).to_have_text(re.compile(r"^0x[0-9a-f]{64}$"))
    tx_hash = page.locator("#tx-hash").inner_text()
    assert page.wallet.sent == [tx_hash]
    assert anvil_node.balance(sale_address) - before == WEI // 4  # exactly 0.25 ETH arrived
    assert delphi.gets.count("/price/eth") > eth_price_reads  # Donate re-read the ETH price
    expect(page.locator("#tx-status")).to_have_attribute("data-phase", "mined")

    # the referral: POST /affiliate/donation signed by the donor over the documented message
    expect(page.locator("#affiliate-status")).to_contain_text("Referral code Ref0Code recorded")
    [post] = [p for p in delphi.posts if p["path"] == "/affiliate/donation"]
    assert post["body"] == {"tx_hash": tx_hash, "code": "Ref0Code"}
    headers = post["headers"]
    assert headers["delphi-key"] == donor
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\+00:00", headers["delphi-ts"])
    message = f"affiliate donation, {donor}, {headers['delphi-ts']}"
    signer = Account.recover_message(encode_defunct(text=message), signature=headers["delphi-signature"])
    assert signer.lower() == donor

    # the crawlers record it (unconfirmed), then confirm it; the page follows without a reload
    row = {
        "tx_hash": tx_hash,
        "asset": "eth",
        "amount": "0.2500000000",
        "usd_amount": "500.03",
        "price": "0.00150",
        "tokens": "333354",
        "status": "unconfirmed",
        "ts": "2026-11-30T04:40:00Z",
    }
    delphi.donations[tx_hash] = row
    expect(page.locator("#tx-status")).to_have_attribute("data-phase", "unconfirmed")
    expect(page.locator(f'tr[data-tx-hash="{tx_hash}"]')).to_contain_text("unconfirmed")
    delphi.donations[tx_hash] = {**row, "status": "confirmed"}
    delphi.user_data.update(total="500.03", tokens="333354")
    expect(page.locator("#tx-status")).to_have_text("Confirmed: 333,354 $DWS credited.")
    expect(page.locator("#user-tokens")).to_have_text("333,354")
    expect(page.locator("#stake-state")).to_have_text("333,354 tokens available to stake.")
    screenshot(page, "page-desktop-after-donation")
    assert_no_script_errors(page)


def test_a_rejected_transaction_is_reported_and_nothing_is_sent(
    live_server, wallet_page, anvil_node, dev_chain
) -> None:
    donor, sale_address = donor_and_sale_address(anvil_node)
    page = wallet_page(rpc_url=anvil_node.url, account=donor, reject=("eth_sendTransaction",))
    RecordedDelphi(donation_address=sale_address).install(page)
    page.goto(live_server.url)
    connect(page, donor)
    page.fill("#amount", "1")
    page.click("#donate")
    expect(page.locator("#network-status")).to_have_text(
        "You rejected the request in your wallet (donating). Nothing was sent."
    )
    expect(page.locator("#tx")).to_be_hidden()
    expect(page.locator("#donate")).to_be_enabled()  # free to try again
    assert_no_script_errors(page)


def test_insufficient_balances_are_caught_before_the_wallet_is_asked(
    live_server, wallet_page, anvil_node, dev_chain
) -> None:
    donor, sale_address = donor_and_sale_address(anvil_node)
    page = wallet_page(rpc_url=anvil_node.url, account=donor)
    RecordedDelphi(donation_address=sale_address).install(page)
    page.goto(live_server.url)
    connect(page, donor)
    page.fill("#amount", "20000")  # anvil's dev accounts hold 10,000 ETH
    page.click("#donate")
    expect(page.locator("#network-status")).to_contain_text("Insufficient ETH balance: this wallet holds")
    # no USDT contract holds a balance for this wallet on a fresh chain
    page.check('input[name="asset"][value="usdt"]')
    page.fill("#amount", "5")
    expect(page.locator("#estimate")).to_have_text("3,334")  # ceiling(5 / 0.0015)
    page.click("#donate")
    expect(page.locator("#network-status")).to_have_text("Insufficient USDT balance: this wallet holds 0 USDT.")
    assert page.wallet.sent == []
    assert_no_script_errors(page)


@pytest.mark.parametrize(
    ("status", "pill", "reason"),
    [
        ("paused", "Sale paused", "The sale is paused: donations are not being accepted right now."),
        ("closed", "Sale closed (sold out)", "The sale is closed: all tokens have been sold."),
    ],
)
def test_a_paused_or_closed_sale_disables_donating_with_the_reason(
    live_server, wallet_page, anvil_node, dev_chain, status, pill, reason
) -> None:
    donor, sale_address = donor_and_sale_address(anvil_node)
    page = wallet_page(rpc_url=anvil_node.url, account=donor, connected=True)
    RecordedDelphi(donation_address=sale_address, campaign={"status": status}).install(page)
    page.goto(live_server.url)
    expect(page.locator("#account-address")).to_have_text(donor)  # reconnected without a prompt
    expect(page.locator("#sale-status")).to_have_text(pill)
    page.fill("#amount", "1")
    expect(page.locator("#donate")).to_be_disabled()
    expect(page.locator("#donate-reason")).to_have_text(reason)
    assert_no_script_errors(page)


def test_without_an_eth_price_eth_donations_wait_but_stable_coins_do_not(
    live_server, wallet_page, anvil_node, dev_chain
) -> None:
    donor, sale_address = donor_and_sale_address(anvil_node)
    page = wallet_page(rpc_url=anvil_node.url, account=donor, connected=True)
    RecordedDelphi(donation_address=sale_address, eth_price=None).install(page)
    page.goto(live_server.url)
    expect(page.locator("#eth-price")).to_have_text("not available yet")
    page.fill("#amount", "1")
    expect(page.locator("#donate-reason")).to_contain_text("The ETH price is not available yet")
    page.check('input[name="asset"][value="usdc"]')
    expect(page.locator("#estimate")).to_have_text("667")
    expect(page.locator("#donate")).to_be_enabled()
    assert_no_script_errors(page)


def test_on_a_phone_the_widget_comes_first_and_nothing_overflows(
    live_server, wallet_page, anvil_node, dev_chain
) -> None:
    donor, sale_address = donor_and_sale_address(anvil_node)
    page = wallet_page(rpc_url=anvil_node.url, account=donor, connected=True, viewport=PHONE)
    RecordedDelphi(donation_address=sale_address).install(page)
    page.goto(live_server.url)
    expect(page.locator("#account-address")).to_have_text(donor)
    page.fill("#amount", "1.5")
    expect(page.locator("#estimate")).to_have_text("2,000,120")  # ceiling(1.5 * 2000.12 / 0.0015)
    widget = page.locator("#widget").bounding_box()
    pitch = page.locator(".pitch").bounding_box()
    assert widget["y"] < pitch["y"]  # stacked, widget on top
    assert widget["x"] >= 0
    assert widget["x"] + widget["width"] <= PHONE["width"]
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    screenshot(page, "page-phone")
    assert_no_script_errors(page)


def test_on_a_desktop_the_widget_sits_beside_the_pitch(live_server, plain_page) -> None:
    page = plain_page(DESKTOP)
    refuse_api(page)
    page.goto(live_server.url)
    widget = page.locator("#widget").bounding_box()
    pitch = page.locator(".pitch").bounding_box()
    assert widget["x"] > pitch["x"]
    assert widget["y"] < 200  # above the fold


def test_staking_then_unstaking_with_the_seven_day_countdown(live_server, wallet_page, anvil_node, dev_chain) -> None:
    donor, sale_address = donor_and_sale_address(anvil_node)
    page = wallet_page(rpc_url=anvil_node.url, account=donor, connected=True)
    delphi = RecordedDelphi(donation_address=sale_address, user_data={"total": "500.03", "tokens": "333354"}).install(
        page
    )
    page.goto(live_server.url)
    expect(page.locator("#stake-state")).to_have_text("333,354 tokens available to stake.")
    page.fill("#stake-amount", "400000")
    page.click("#stake")
    expect(page.locator("#stake-status")).to_have_text("You can stake at most 333,354 tokens.")
    page.fill("#stake-amount", "1.5")
    page.click("#stake")
    expect(page.locator("#stake-status")).to_have_text("Enter a whole number of tokens.")
    assert delphi.posts == []

    page.fill("#stake-amount", "1000")
    page.click("#stake")
    expect(page.locator("#stake-status")).to_have_text("Staking done.")
    expect(page.locator("#user-staked")).to_have_text("1,000")
    expect(page.locator("#stake-state")).to_have_text("1,000 tokens staked; 332,354 available to stake.")
    [stake] = delphi.posts
    assert stake["path"] == "/user/stake"
    assert stake["body"] == {"amount": "1000"}
    ts = stake["headers"]["delphi-ts"]
    signer = Account.recover_message(
        encode_defunct(text=f"user stake, {donor}, {ts}"), signature=stake["headers"]["delphi-signature"]
    )
    assert signer.lower() == donor

    page.click("#unstake")
    expect(page.locator("#stake-state")).to_have_text("Unstaking 1,000 tokens (takes 7 days from the request).")
    expect(page.locator("#unstake-countdown")).to_contain_text(re.compile(r"Tokens released in 6d 23h 59m \d+s"))
    expect(page.locator("#stake-form")).to_be_hidden()  # no staking while unstaking
    assert delphi.posts[-1]["path"] == "/user/unstake"
    assert_no_script_errors(page)


def test_a_rejected_signature_stakes_nothing(live_server, wallet_page, anvil_node, dev_chain) -> None:
    donor, sale_address = donor_and_sale_address(anvil_node)
    page = wallet_page(rpc_url=anvil_node.url, account=donor, connected=True, reject=("personal_sign",))
    delphi = RecordedDelphi(donation_address=sale_address, user_data={"tokens": "5000"}).install(page)
    page.goto(live_server.url)
    page.fill("#stake-amount", "10")
    page.click("#stake")
    expect(page.locator("#stake-status")).to_have_text(
        "You rejected the request in your wallet (staking). Nothing was sent."
    )
    assert delphi.posts == []
    assert_no_script_errors(page)


def test_the_donation_history_pages_through_the_api(live_server, wallet_page, anvil_node, dev_chain) -> None:
    donor, sale_address = donor_and_sale_address(anvil_node)
    page = wallet_page(rpc_url=anvil_node.url, account=donor, connected=True)
    delphi = RecordedDelphi(donation_address=sale_address)
    for n in range(23):
        tx_hash = f"0x{n:064x}"
        delphi.donations[tx_hash] = {
            "tx_hash": tx_hash,
            "asset": "usdc",
            "amount": f"{n + 1}.0000000000",
            "usd_amount": f"{n + 1}.00",
            "price": "0.00100",
            "tokens": str((n + 1) * 1000),
            "status": "confirmed",
            "ts": f"2026-11-{n + 1:02d}T10:00:00Z",
        }
    delphi.install(page)
    page.goto(live_server.url)
    rows = page.locator("#donations-body tr")
    expect(rows).to_have_count(10)
    expect(page.locator("#page-info")).to_have_text("1\N{EN DASH}10")
    expect(page.locator("#prev-page")).to_be_disabled()
    page.click("#next-page")
    expect(page.locator("#page-info")).to_have_text("11\N{EN DASH}20")
    expect(rows.first).to_contain_text("11 USDC")
    page.click("#next-page")
    expect(rows).to_have_count(3)
    expect(page.locator("#page-info")).to_have_text("21\N{EN DASH}23")
    expect(page.locator("#next-page")).to_be_disabled()
    page.click("#prev-page")
    expect(page.locator("#page-info")).to_have_text("11\N{EN DASH}20")
    queries = [g for g in delphi.gets if g.startswith("/user/data/")]
    assert queries
    assert all(q == f"/user/data/{donor}" for q in queries)
    assert_no_script_errors(page)


def test_the_refresh_rules(live_server, wallet_page, anvil_node, dev_chain) -> None:
    """Token price and ETH price on load, the ETH price again every minute; the donor's data on load."""
    donor, sale_address = donor_and_sale_address(anvil_node)
    page = wallet_page(rpc_url=anvil_node.url, account=donor, connected=True)
    page.clock.install()
    delphi = RecordedDelphi(donation_address=sale_address).install(page)
    page.goto(live_server.url)
    expect(page.locator("#eth-price")).to_contain_text("$2,000.12")
    expect(page.locator("#user-total")).to_have_text("$0.00")
    assert delphi.gets.count("/price/token") == 1
    assert delphi.gets.count("/price/eth") == 1
    assert delphi.gets.count(f"/user/data/{donor}") == 1
    delphi.eth_price = "2100.50"
    page.clock.run_for(59_000)
    page.wait_for_timeout(200)
    assert delphi.gets.count("/price/eth") == 1
    page.clock.run_for(1_000)
    expect(page.locator("#eth-price")).to_contain_text("$2,100.50")
    assert delphi.gets.count("/price/eth") == 2
    page.fill("#amount", "1")
    expect(page.locator("#estimate")).to_have_text("1,400,334")  # ceiling(2100.50 / 0.0015)
    assert_no_script_errors(page)
