"""Referral links in the browser: the seed's link form `/donate?afc=CODE` serves the page, the page hands
that form out, and a visitor who arrived with a code is offered (never made) to attach it to their wallet
with one signature (POST /wallet/connection), against the real API, database and a wallet on anvil."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from affiliates.models import WalletConnection
from donations.models import UserData
from tests.api.support import make_donation, make_donor
from tests.chain import ACCOUNTS
from tests.web.browser import ApiLog, assert_no_script_errors
from tests.web.pages import connect, signer_of

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("campaign_row")]

VISITOR, REFERRER = ACCOUNTS[3], ACCOUNTS[4]
CODE = "Ref42xyz"


@pytest.fixture
def referrer() -> str:
    make_donor(REFERRER)
    UserData.objects.filter(address=REFERRER).update(affiliate_code=CODE)
    return CODE


def personal_signs(page: Page) -> int:
    calls: list[tuple[str, list]] = page.wallet.calls  # type: ignore[attr-defined]  # set by wallet_page
    return sum(1 for method, _ in calls if method == "personal_sign")


def test_the_link_form_serves_the_page_and_is_what_the_page_hands_out(live_server, wallet_page, anvil_node) -> None:
    make_donation(REFERRER, status="unconfirmed")
    page = wallet_page(rpc_url=anvil_node.url, account=REFERRER, connected=True)

    response = page.goto(f"{live_server.url}/donate?afc=abc123")

    assert response is not None
    assert response.status == 200
    expect(page.locator("#widget h2")).to_have_text("Buy $DWS")
    expect(page.locator("#account-address")).to_have_text(REFERRER)
    page.click("#referral")
    expect(page.locator("#referral-status")).to_contain_text("Your referral link: ")
    code = UserData.objects.get(address=REFERRER).affiliate_code
    expect(page.locator("#referral-status")).to_have_text(f"Your referral link: {live_server.url}/donate?afc={code}")
    # the link it hands out works: the page, with the code kept for the visit
    visitor = wallet_page(rpc_url=anvil_node.url, account=VISITOR)
    assert visitor.goto(f"{live_server.url}/donate?afc={code}").status == 200
    assert visitor.evaluate("sessionStorage.getItem('dws.afc')") == code
    assert_no_script_errors(page)


def test_a_referred_visitor_attaches_the_code_with_one_signature_once_connected(
    live_server, wallet_page, anvil_node, referrer
) -> None:
    page = wallet_page(rpc_url=anvil_node.url, account=VISITOR)
    api = ApiLog(page)
    page.goto(f"{live_server.url}/donate?afc={referrer}")
    offer = page.locator("#referral-offer")
    expect(page.locator("#sale-status")).to_have_text("Sale open")
    expect(offer).to_be_hidden()  # nothing to attach to before a wallet is connected

    connect(page, VISITOR)
    expect(offer).to_be_visible()
    expect(offer).to_contain_text(f"You arrived through referral code {referrer}")
    assert personal_signs(page) == 0  # offered, not asked: no prompt until the visitor chooses
    assert api.posts("/wallet/connection") == []
    page.click("#referral-attach")

    expect(page.locator("#referral-offer-status")).to_have_text(f"Your wallet is linked to referral code {referrer}.")
    expect(page.locator("#referral-attach")).to_be_hidden()
    [call] = api.posts("/wallet/connection")
    assert call.body == {"code": referrer}
    assert signer_of(call, "wallet connection") == VISITOR
    assert personal_signs(page) == 1
    connection = WalletConnection.objects.get()
    assert (connection.address, connection.affiliate_code) == (VISITOR, referrer)

    page.reload()  # linked: not offered again in this visit
    expect(page.locator("#sale-status")).to_have_text("Sale open")
    connect(page, VISITOR)  # (the test wallet forgets the grant on a reload)
    expect(page.locator("#user-total")).to_be_visible()
    expect(offer).to_be_hidden()
    assert len(api.posts("/wallet/connection")) == 1
    assert_no_script_errors(page)


def test_the_offer_is_never_forced(live_server, wallet_page, dev_chain, eth_price, referrer) -> None:
    anvil_node = dev_chain
    declining = wallet_page(rpc_url=anvil_node.url, account=VISITOR, connected=True)
    api = ApiLog(declining)
    declining.goto(f"{live_server.url}/donate?afc={referrer}")
    expect(declining.locator("#referral-offer")).to_be_visible()

    declining.click("#referral-dismiss")

    expect(declining.locator("#referral-offer")).to_be_hidden()
    declining.fill("#amount", "0.1")
    expect(declining.locator("#donate-reason")).not_to_contain_text(re.compile("referral", re.I))
    declining.reload()
    expect(declining.locator("#account-address")).to_have_text(VISITOR)
    expect(declining.locator("#referral-offer")).to_be_hidden()  # a no is kept for the visit
    # the no was about linking the wallet, not about the donation: the code is still passed after it (seed
    # 000, the FAQ), with the one signature the attribution needs, and the wallet stays unlinked (issue 36)
    declining.fill("#amount", "0.1")
    declining.click("#donate")
    expect(declining.locator("#tx-hash")).to_have_text(re.compile(r"^0x[0-9a-f]{64}$"))
    expect(declining.locator("#tx-status")).to_have_attribute("data-phase", re.compile("mined|unconfirmed"))
    expect(declining.locator("#affiliate-status")).to_contain_text(f"Referral code {referrer} recorded")
    assert personal_signs(declining) == 1
    assert api.posts("/wallet/connection") == []
    [claim] = api.posts("/affiliate/donation")
    assert claim.body["code"] == referrer

    # a visitor who rejects the signature: told nothing was linked, offered again, nothing recorded
    rejecting = wallet_page(rpc_url=anvil_node.url, account=ACCOUNTS[5], connected=True, reject=("personal_sign",))
    rejecting.goto(f"{live_server.url}/donate?afc={referrer}")
    rejecting.click("#referral-attach")
    expect(rejecting.locator("#referral-offer-status")).to_contain_text("You rejected the request in your wallet")
    expect(rejecting.locator("#referral-attach")).to_be_visible()
    assert not WalletConnection.objects.exists()
    assert_no_script_errors(declining)
    assert_no_script_errors(rejecting)


@pytest.mark.parametrize(
    ("arrived_with", "visitor", "says"),
    [
        ("Nobody99", VISITOR, "Referral code Nobody99 is not known"),
        (CODE, REFERRER, "This is your own referral code"),
    ],
)
def test_a_code_the_api_refuses_is_explained(
    live_server, wallet_page, anvil_node, referrer, arrived_with, visitor, says
) -> None:
    page = wallet_page(rpc_url=anvil_node.url, account=visitor, connected=True)
    page.goto(f"{live_server.url}/donate?afc={arrived_with}")

    page.click("#referral-attach")

    expect(page.locator("#referral-offer-status")).to_contain_text(says)
    expect(page.locator("#referral-attach")).to_be_hidden()
    assert not WalletConnection.objects.exists()
    assert_no_script_errors(page)
