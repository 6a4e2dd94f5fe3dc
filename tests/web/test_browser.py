"""The donation page in headless Chromium against the real stack: the live Django server (page and
delphi API), PostgreSQL, Redis, the crawlers and a wallet on anvil.

Nothing of ours is stood in for: the page talks to the real API; donations are real transfers on anvil
that the real crawlers record and confirm. The only fault injected is "API down", at the browser's
network boundary. Screenshots go to var/screenshots/ (see tests/web/browser.py).
"""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone
from eth_account import Account
from playwright.sync_api import expect

from donations.models import DonationStats, UserData
from prices.models import ETH
from prices.services import minute_of, price_insert
from tests.api.support import make_donation, make_donor
from tests.chain import ACCOUNTS
from tests.configs import configured
from tests.web.browser import DESKTOP, ApiLog, assert_no_script_errors, refuse_api
from tests.web.pages import DONOR, connect

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("campaign_row")]


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
    expect(page.locator("tr[data-tier]")).to_have_count(3)  # the static part of the page is all there
    assert_no_script_errors(page)


def test_a_browser_without_a_wallet_is_told_to_install_one(live_server, plain_page) -> None:
    page = plain_page()
    page.goto(live_server.url)
    expect(page.locator("#sale-status")).to_have_text("Sale open")
    expect(page.locator("#donate-reason")).to_contain_text("No Ethereum wallet found")
    page.click("#connect")
    expect(page.locator("#network-status")).to_contain_text("No Ethereum wallet found in this browser")
    assert_no_script_errors(page)


def test_connecting_on_the_wrong_network_shows_the_account_and_asks_to_switch(
    live_server, wallet_page, anvil_node, settings
) -> None:
    """The server expects Ethereum mainnet (DWS_CHAIN_ID=1); the wallet is on anvil and cannot switch."""
    settings.CONFIG = configured(settings.CONFIG, chain_id=1)
    page = wallet_page(rpc_url=anvil_node.url, account=DONOR)
    page.goto(live_server.url)
    expect(page.locator("#donate-reason")).to_have_text("Connect your wallet to donate.")
    connect(page, DONOR)
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


def test_the_wallet_switches_to_the_expected_network_on_request(live_server, wallet_page, dev_chain) -> None:
    page = wallet_page(rpc_url=dev_chain.url, account=DONOR, chain_id="0x1")  # starts on mainnet
    page.goto(live_server.url)
    expect(page.locator("#dev-chain-badge")).to_contain_text("chain id 31337")
    connect(page, DONOR)
    expect(page.locator("#network-status")).to_contain_text("Wrong network: your wallet is on Ethereum mainnet")
    page.click("#switch-network")
    expect(page.locator("#network-status")).to_have_attribute("data-state", "ok")
    expect(page.locator("#network-status")).to_contain_text("a development chain, not real money")
    expect(page.locator("#switch-network")).to_be_hidden()
    assert_no_script_errors(page)


def test_a_rejected_transaction_is_reported_and_nothing_is_sent(live_server, wallet_page, dev_chain, eth_price) -> None:
    page = wallet_page(rpc_url=dev_chain.url, account=DONOR, reject=("eth_sendTransaction",))
    page.goto(live_server.url)
    connect(page, DONOR)
    page.fill("#amount", "1")
    page.click("#donate")
    expect(page.locator("#network-status")).to_have_text(
        "You rejected the request in your wallet (donating). Nothing was sent."
    )
    expect(page.locator("#tx")).to_be_hidden()
    expect(page.locator("#donate")).to_be_enabled()  # free to try again
    assert_no_script_errors(page)


def test_insufficient_balances_are_caught_before_the_wallet_is_asked(
    live_server, wallet_page, dev_chain, eth_price
) -> None:
    page = wallet_page(rpc_url=dev_chain.url, account=DONOR)
    page.goto(live_server.url)
    connect(page, DONOR)
    page.fill("#amount", "20000")  # anvil's dev accounts hold 10,000 ETH
    page.click("#donate")
    expect(page.locator("#network-status")).to_contain_text("Insufficient ETH balance: this wallet holds")
    page.check('input[name="asset"][value="usdt"]')  # deployed, but nothing minted to this donor
    page.fill("#amount", "5")
    expect(page.locator("#estimate")).to_have_text("5,000")  # ceiling(5 / 0.001)
    page.click("#donate")
    expect(page.locator("#network-status")).to_have_text("Insufficient USDT balance: this wallet holds 0 USDT.")
    assert page.wallet.sent == []
    assert_no_script_errors(page)


@pytest.mark.parametrize(
    ("status", "tokens", "pill", "reason"),
    [
        ("paused", 0, "Sale paused", "The sale is paused: donations are not being accepted right now."),
        ("closed", 500_000_000, "Sale closed (sold out)", "The sale is closed: all tokens have been sold."),
    ],
)
def test_a_paused_or_closed_sale_disables_donating_with_the_reason(
    live_server, wallet_page, dev_chain, eth_price, status, tokens, pill, reason
) -> None:
    # An operator's pause, or confirmed tokens at the sale cap of deploy/env.local's DWS_SALE_PARAMS.
    DonationStats.objects.update(status=status, tokens=tokens)
    page = wallet_page(rpc_url=dev_chain.url, account=DONOR, connected=True)
    page.goto(live_server.url)
    expect(page.locator("#account-address")).to_have_text(DONOR)  # reconnected without a prompt
    expect(page.locator("#sale-status")).to_have_text(pill)
    page.fill("#amount", "1")
    expect(page.locator("#donate")).to_be_disabled()
    expect(page.locator("#donate-reason")).to_have_text(reason)
    assert_no_script_errors(page)


def test_without_an_eth_price_eth_donations_wait_but_stable_coins_do_not(live_server, wallet_page, dev_chain) -> None:
    page = wallet_page(rpc_url=dev_chain.url, account=DONOR, connected=True)
    page.goto(live_server.url)
    expect(page.locator("#eth-price")).to_have_text("not available yet")  # the API's 503, code 1008
    page.fill("#amount", "1")
    expect(page.locator("#donate-reason")).to_contain_text("The ETH price is not available yet")
    page.check('input[name="asset"][value="usdc"]')
    expect(page.locator("#estimate")).to_have_text("1,000")
    expect(page.locator("#donate")).to_be_enabled()
    assert_no_script_errors(page)


def test_on_a_desktop_the_widget_sits_beside_the_pitch(live_server, plain_page) -> None:
    page = plain_page(DESKTOP)
    page.goto(live_server.url)
    expect(page.locator("#sale-status")).to_have_text("Sale open")
    widget = page.locator("#widget").bounding_box()
    pitch = page.locator(".pitch").bounding_box()
    assert widget["x"] > pitch["x"]
    assert widget["y"] < 200  # above the fold


def test_staking_refuses_what_the_api_would_refuse_before_asking_the_wallet(
    live_server, wallet_page, dev_chain
) -> None:
    make_donor(DONOR, tokens=5000)
    page = wallet_page(rpc_url=dev_chain.url, account=DONOR, connected=True)
    api = ApiLog(page)
    page.goto(live_server.url)
    expect(page.locator("#stake-state")).to_have_text("5,000 tokens available to stake.")
    page.fill("#stake-amount", "6000")
    page.click("#stake")
    expect(page.locator("#stake-status")).to_have_text("You can stake at most 5,000 tokens.")
    page.fill("#stake-amount", "1.5")
    page.click("#stake")
    expect(page.locator("#stake-status")).to_have_text("Enter a whole number of tokens.")
    assert api.posts() == []
    assert [m for m, _ in page.wallet.calls].count("personal_sign") == 0
    assert_no_script_errors(page)


def test_a_rejected_signature_stakes_nothing(live_server, wallet_page, dev_chain) -> None:
    make_donor(DONOR, tokens=5000)
    page = wallet_page(rpc_url=dev_chain.url, account=DONOR, connected=True, reject=("personal_sign",))
    api = ApiLog(page)
    page.goto(live_server.url)
    page.fill("#stake-amount", "10")
    page.click("#stake")
    expect(page.locator("#stake-status")).to_have_text(
        "You rejected the request in your wallet (staking). Nothing was sent."
    )
    assert api.posts() == []
    assert UserData.objects.get(address=DONOR).staked == 0
    assert_no_script_errors(page)


def test_the_donation_history_pages_through_the_api(live_server, wallet_page, dev_chain) -> None:
    start = timezone.now() - timedelta(days=30)
    for n in range(23):
        make_donation(
            DONOR,
            asset="usdc",
            amount=f"{n + 1}",
            usd_amount=f"{n + 1}.00",
            tokens=(n + 1) * 1000,
            block_time=start + timedelta(days=n),
        )
    page = wallet_page(rpc_url=dev_chain.url, account=DONOR, connected=True)
    api = ApiLog(page)
    page.goto(live_server.url)
    rows = page.locator("#donations-body tr[data-tx-hash]")
    expect(rows).to_have_count(10)
    expect(page.locator("#page-info")).to_have_text("1\N{EN DASH}10")
    expect(page.locator("#prev-page")).to_be_disabled()
    first_page_dates = rows.locator("td:first-child").all_inner_texts()
    # the button says where it goes (issue 36: the two were swapped): the API lists oldest first
    newer = page.get_by_role("button", name=re.compile("Newer"))
    expect(newer).to_have_id("next-page")
    expect(page.get_by_role("button", name=re.compile("Older"))).to_have_id("prev-page")
    newer.click()
    expect(page.locator("#page-info")).to_have_text("11\N{EN DASH}20")
    expect(rows.first).to_contain_text("11 USDC")
    assert min(rows.locator("td:first-child").all_inner_texts()) > max(first_page_dates)
    page.click("#next-page")
    expect(rows).to_have_count(3)
    expect(page.locator("#page-info")).to_have_text("21\N{EN DASH}23")
    expect(page.locator("#next-page")).to_be_disabled()
    page.click("#prev-page")
    expect(page.locator("#page-info")).to_have_text("11\N{EN DASH}20")
    queries = [c for c in api.calls if c.path.startswith("/user/data/")]
    assert queries
    assert all(c.path == f"/user/data/{DONOR}" for c in queries)
    assert {c.query for c in queries} >= {"limit=10&offset=0", "limit=10&offset=10", "limit=10&offset=20"}
    assert_no_script_errors(page)


def test_the_refresh_rules(live_server, wallet_page, dev_chain, eth_price) -> None:
    """Token price and ETH price on load, the ETH price again every minute; the donor's data on load."""
    page = wallet_page(rpc_url=dev_chain.url, account=DONOR, connected=True)
    # The page's clock stands still from before it loads: with a clock that ticks with real time, a loaded
    # machine's slow first render added seconds to the 59 s below and the minute's refresh came early.
    started = timezone.now()
    page.clock.install(time=started)
    page.clock.pause_at(started + timedelta(seconds=1))
    api = ApiLog(page)
    page.goto(live_server.url)
    expect(page.locator("#eth-price")).to_contain_text("$2,000.12")
    expect(page.locator("#user-total")).to_have_text("$0.00")
    assert api.gets("/price/token") == 1
    assert api.gets("/price/eth") == 1
    assert api.gets(f"/user/data/{DONOR}") == 1
    # a newer minute's price is recorded
    next_minute = minute_of(timezone.now()) + timedelta(minutes=1)
    price_insert(asset=ETH, created_at=next_minute, price=Decimal("2100.50"), sources={"test": "newer minute"})
    page.clock.run_for(59_000)
    page.wait_for_timeout(200)
    assert api.gets("/price/eth") == 1
    page.clock.run_for(1_000)
    expect(page.locator("#eth-price")).to_contain_text("$2,100.50")
    assert api.gets("/price/eth") == 2
    page.fill("#amount", "1")
    expect(page.locator("#estimate")).to_have_text("2,100,500")  # ceiling(2100.50 / 0.001)
    assert_no_script_errors(page)


def test_a_contract_wallet_is_recognised_shows_its_tokens_and_stakes_by_contract_signature(
    live_server, wallet_page, dev_chain
) -> None:
    owner = Account.create()
    contract_wallet = dev_chain.deploy("OwnedWallet", ["address"], [owner.address], sender=ACCOUNTS[8])
    make_donor(contract_wallet, tokens=5000)
    page = wallet_page(rpc_url=dev_chain.url, account=contract_wallet, connected=True, contract_owner=owner)
    api = ApiLog(page)
    page.goto(live_server.url)

    expect(page.locator("#wallet-kind")).to_be_visible()
    expect(page.locator("#wallet-kind")).to_contain_text("the service asks the wallet contract itself")
    expect(page.locator("#donations-body tr[data-tx-hash]")).to_have_count(1)
    page.fill("#stake-amount", "10")
    page.click("#stake")

    expect(page.locator("#stake-status")).to_have_text("Staking done.")
    assert UserData.objects.get(address=contract_wallet).staked == 10
    (call,) = api.posts("/user/stake")
    assert call.headers["delphi-key"] == contract_wallet
    assert ("eth_getCode", [contract_wallet, "latest"]) in page.wallet.calls
    assert_no_script_errors(page)

    plain = wallet_page(rpc_url=dev_chain.url, account=DONOR, connected=True)
    plain.goto(live_server.url)
    expect(plain.locator("#account-address")).to_have_text(DONOR)
    expect(plain.locator("#wallet-kind")).to_be_hidden()


def test_the_widget_shows_the_sale_address_and_what_to_check_per_asset(live_server, wallet_page, dev_chain) -> None:
    page = wallet_page(rpc_url=dev_chain.url, account=DONOR, connected=True)
    page.goto(live_server.url)
    sale = "0xa0Ee7A142d267C1f36714E4a8F75612F20a79720"
    expect(page.locator("#donation-address")).to_have_text(sale)
    expect(page.locator('#wallet-checks li[data-asset="eth"]')).to_be_visible()
    expect(page.locator('#wallet-checks li[data-asset="usdc"]')).to_be_hidden()

    page.check('input[name="asset"][value="usdc"]')
    expect(page.locator('#wallet-checks li[data-asset="eth"]')).to_be_hidden()
    expect(page.locator('#wallet-checks li[data-asset="usdc"]')).to_contain_text(
        "the token contract is 0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"
    )
    page.click("#copy-address")
    expect(page.locator("#copy-status")).to_be_visible()
    assert_no_script_errors(page)


def test_a_tampered_api_answer_cannot_redirect_a_donation(live_server, wallet_page, dev_chain) -> None:
    """A cache or proxy rewrites /donation/data's address and contracts: the page keeps its own and refuses."""
    attacker = "0x" + "66" * 20

    def tamper(route) -> None:
        response = route.fetch()
        body = response.json()
        for chain in [body, *body["chains"]]:  # every place the answer names where donations go
            chain["donation_address"] = attacker
            for coin in chain["stable_coins"]:
                coin["contract"] = attacker
        route.fulfill(response=response, json=body)

    page = wallet_page(rpc_url=dev_chain.url, account=DONOR, connected=True)
    page.route(re.compile(r".*/donation/data(\?.*)?$"), tamper)
    page.goto(live_server.url)
    page.check('input[name="asset"][value="usdc"]')
    page.fill("#amount", "1")

    expect(page.locator("#donate-reason")).to_have_text(
        "The sale address could not be verified. Please reload the page before donating."
    )
    expect(page.locator("#donate")).to_be_disabled()
    expect(page.locator("#donation-address")).to_have_text("0xa0Ee7A142d267C1f36714E4a8F75612F20a79720")
    assert "eth_sendTransaction" not in [m for m, _ in page.wallet.calls]
