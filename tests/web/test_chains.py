"""One campaign on two chains, in the browser: `make run`'s eth (chain id 31337) and its local rollup (chain id
1337, coins of its own), two real anvil nodes. The wallet models both as MetaMask does (tests/web/browser.py):
it is on one chain at a time, switching to a chain it lacks is error 4902, it learns a chain from
wallet_addEthereumChain and can be switched from its own side, with or without telling the page."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from affiliates.services import affiliate_code_get_or_create
from crawlers.runs.crawl import crawl
from donations.models import Donation
from tests.api.support import make_donation
from tests.chain import DONATION_ADDRESS, checksum
from tests.configs import configured
from tests.web.browser import ApiLog, assert_no_script_errors, switch_wallet
from tests.web.pages import DONOR, REFERRER, ROLLUP, ROLLUP_CHAIN_ID, ROLLUP_LABEL, ROLLUP_USDC, USDC, connect

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("campaign_row")]

ETH_LABEL = "local dev chain (anvil)"  # what the page calls chain eth on chain id 31337


def network_button(page: Page, chain: str):
    return page.locator(f'#network-choice button[data-chain="{chain}"]')


def test_a_donor_picks_the_rollup_the_wallet_adds_it_and_the_donation_lands_there(
    live_server, wallet_page, dev_chain, two_chains, eth_price
) -> None:
    """The wallet knows only chain eth: picking the rollup asks it to switch (4902), then to add the chain with
    the rollup's public RPC URL; the rollup's address and coin contract are shown, the USDC donation goes to
    the rollup's contract on the rollup, its referral names the chain, and the donor's list shows both chains."""
    rollup = two_chains
    make_donation(DONOR, chain="eth", asset="usdt", amount="25", usd_amount="25.00", tokens=25_000)  # earlier, on eth
    make_donation(REFERRER, chain="eth")
    code = affiliate_code_get_or_create(address=REFERRER)
    page = wallet_page(rpc_url=dev_chain.url, account=DONOR)  # no node of the rollup: it learns it from the page
    api = ApiLog(page)
    page.goto(f"{live_server.url}/?afc={code}")
    expect(network_button(page, "eth")).to_have_attribute("aria-pressed", "true")
    expect(network_button(page, ROLLUP)).to_have_text(ROLLUP_LABEL)
    expect(page.locator("#dev-chain-badge")).to_have_text(f"{ETH_LABEL} · chain id 31337")
    connect(page, DONOR)
    expect(page.locator("#network-status")).to_have_attribute("data-state", "ok")

    network_button(page, ROLLUP).click()

    expect(page.locator("#network-status")).to_have_text(
        f"Connected to {ROLLUP_LABEL} (chain id {ROLLUP_CHAIN_ID}): a development chain, not real money."
    )
    assert page.wallet.added == [
        {
            "chainId": hex(ROLLUP_CHAIN_ID),
            "chainName": ROLLUP_LABEL,
            "nativeCurrency": {"name": "Ether", "symbol": "ETH", "decimals": 18},
            "rpcUrls": [rollup.url],  # the chain's DWS_ROLLUP_WALLET_RPC_URL
            "blockExplorerUrls": ["https://rollup-explorer.example"],
        }
    ]
    expect(network_button(page, ROLLUP)).to_have_attribute("aria-pressed", "true")
    expect(network_button(page, "eth")).to_have_attribute("aria-pressed", "false")
    expect(page.locator("#dev-chain-badge")).to_have_text(f"{ROLLUP_LABEL} · chain id {ROLLUP_CHAIN_ID}")
    page.check('input[name="asset"][value="usdc"]')
    checks = page.locator(f'#wallet-checks ul[data-chain="{ROLLUP}"] li[data-asset="usdc"]')
    expect(checks).to_be_visible()
    expect(checks).to_contain_text(f"the token contract is {checksum(ROLLUP_USDC)}")
    expect(page.locator('#wallet-checks ul[data-chain="eth"]')).to_be_hidden()
    page.fill("#amount", "100")
    expect(page.locator("#estimate")).to_have_text("100,000")  # the same rule on every chain

    page.click("#donate")

    expect(page.locator("#tx-hash")).to_have_text(re.compile(r"^0x[0-9a-f]{64}$"))
    tx = page.locator("#tx-hash").inner_text()
    expect(page.locator("#tx-chain")).to_have_text(f" on {ROLLUP_LABEL}")
    assert page.wallet.sent_on == {tx: ROLLUP_CHAIN_ID}
    [request] = [params[0] for method, params in page.wallet.calls if method == "eth_sendTransaction"]
    assert (request["to"].lower(), request["chainId"]) == (ROLLUP_USDC, hex(ROLLUP_CHAIN_ID))
    assert rollup.token_balance(ROLLUP_USDC, DONATION_ADDRESS) == 100 * 10**6
    assert dev_chain.token_balance(USDC, DONATION_ADDRESS) == 0  # nothing on eth
    expect(page.locator("#affiliate-status")).to_contain_text(f"Referral code {code} recorded")
    [claim] = api.posts("/affiliate/donation")
    assert claim.body == {"tx_hash": tx, "code": code, "chain": ROLLUP}

    crawl("latest", chain=ROLLUP)
    assert Donation.objects.get(tx_hash=tx).chain == ROLLUP
    rows = page.locator("#donations-body tr[data-tx-hash]")
    expect(rows).to_have_count(2)
    expect(rows.nth(0).locator("td.network")).to_have_text(ETH_LABEL)
    expect(rows.nth(1).locator("td.network")).to_have_text(ROLLUP_LABEL)
    receipt = page.locator(f'tr[data-receipt-for="{tx}"]')
    expect(receipt).to_contain_text(f"Chain: {ROLLUP_LABEL}")
    expect(receipt.locator("a.tx-link")).to_have_attribute("href", f"https://rollup-explorer.example/tx/{tx}")
    rollup.mine(3)
    crawl("finalized", chain=ROLLUP)
    expect(page.locator("#tx-status")).to_have_text("Confirmed: 100,000 $DWS credited.")
    assert_no_script_errors(page)


def test_nothing_is_sent_while_the_wallet_is_on_another_chain_than_the_one_shown(
    live_server, wallet_page, dev_chain, two_chains, eth_price, settings
) -> None:
    """The rollup takes ETH only here and names no public RPC URL. A wallet that lacks it is told to add it
    itself; once the donor has, a wallet that slips back to eth without a word is caught right before sending;
    a declined switch keeps the page on the rollup, sending nothing; a chain id that is not one is no chain."""
    rollup = two_chains
    settings.CONFIG = configured(settings.CONFIG, chain=ROLLUP, stable_coins=(), wallet_rpc_url=None)
    page = wallet_page(rpc_url=dev_chain.url, account=DONOR, other_nodes={ROLLUP_CHAIN_ID: rollup.url}, knows=(31337,))
    page.goto(live_server.url)
    connect(page, DONOR)
    page.check('input[name="asset"][value="usdc"]')

    network_button(page, ROLLUP).click()

    status = page.locator("#network-status")
    expect(status).to_have_text(
        f"Your wallet does not know {ROLLUP_LABEL} (chain id {ROLLUP_CHAIN_ID}) yet. Add this network in your wallet "
        f"yourself, then switch to it: nothing can be sent on {ROLLUP_LABEL} before that."
    )
    assert page.wallet.added == []
    expect(page.locator('input[name="asset"][value="eth"]')).to_be_checked()  # no coin on the rollup
    expect(page.locator('input[name="asset"][value="usdc"]')).to_be_disabled()
    page.fill("#amount", "0.5")
    expect(page.locator("#donate")).to_be_disabled()
    expect(page.locator("#donate-reason")).to_have_text(f"Switch your wallet to {ROLLUP_LABEL} to donate.")

    # the donor adds and picks the rollup in the wallet: the page hears of it
    switch_wallet(page, ROLLUP_CHAIN_ID)
    expect(status).to_have_attribute("data-state", "ok")
    expect(page.locator("#donate")).to_be_enabled()
    # the wallet slips back to eth and does not say so: Donate asks the wallet's chain first and stops
    switch_wallet(page, 31337, tell_the_page=False)
    page.click("#donate")
    expect(status).to_have_attribute("data-state", "wrong-network")
    expect(status).to_have_text(
        f"Wrong network: your wallet is on {ETH_LABEL}, and the network shown here is {ROLLUP_LABEL}. "
        f"Switch your wallet to {ROLLUP_LABEL}, or choose {ETH_LABEL} above."
    )
    expect(page.locator("#donate")).to_be_disabled()
    # back on the rollup, the wallet slips away again mid-flow (after the balance check): the check right
    # before sending catches it
    switch_wallet(page, ROLLUP_CHAIN_ID)
    expect(page.locator("#donate")).to_be_enabled()
    page.evaluate("window.__dwsWallet.switchAfter = { method: 'eth_getBalance', chainId: '0x7a69' }")
    page.click("#donate")
    expect(status).to_have_text(
        f"Nothing was sent: your wallet is now on {ETH_LABEL}, not on {ROLLUP_LABEL} (the network shown here). "
        f"Switch your wallet to {ROLLUP_LABEL}, or choose {ETH_LABEL} above."
    )
    expect(page.locator("#donate")).to_be_disabled()
    expect(network_button(page, ROLLUP)).to_have_attribute("aria-pressed", "true")

    # asked to switch back, the donor declines (4001): the page stays on the rollup and sends nothing
    page.evaluate("window.__dwsWallet.reject.push('wallet_switchEthereumChain')")
    page.click("#switch-network")
    expect(status).to_have_text(
        f"You declined to switch your wallet to {ROLLUP_LABEL}. This page stays on {ROLLUP_LABEL} and sends "
        f"nothing until your wallet is on it."
    )
    expect(network_button(page, ROLLUP)).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#donate")).to_be_disabled()

    # a wallet announcing a chain id that is not one: no chain known, nothing to send
    switch_wallet(page, ROLLUP_CHAIN_ID, tell_the_page=False)
    page.evaluate("window.ethereum.__emit('chainChanged', 'not-a-chain')")
    expect(page.locator("#donate")).to_be_disabled()
    assert "eth_sendTransaction" not in [method for method, _ in page.wallet.calls]
    assert rollup.rpc("eth_getBalance", DONATION_ADDRESS, "latest") == dev_chain.rpc(
        "eth_getBalance", DONATION_ADDRESS, "latest"
    )  # neither chain received anything: both still hold anvil's initial 10,000 ETH
    assert_no_script_errors(page)
