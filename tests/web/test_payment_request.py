"""Phones: a browser without a wallet gets an EIP-681 payment request for the exact amount and asset, as
a QR code drawn on the page and as a link; the donor then looks their address up without connecting.

The QR code is read back from Chromium's screenshot by a real decoder (zxing-cpp), and every field of
what it says is checked against the server's pinned sale address and coin contract, not against what
the page shows.
"""

from __future__ import annotations

import io
from urllib.parse import parse_qs, urlsplit

import pytest
import zxingcpp
from PIL import Image
from playwright.sync_api import Page, expect

from donations.models import DonationStats
from tests.api.support import make_donation, refresh_user_data
from tests.chain import ACCOUNTS
from tests.web.browser import PHONE, assert_no_script_errors

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("campaign_row", "eth_price")]

SALE = "0xa0Ee7A142d267C1f36714E4a8F75612F20a79720"  # deploy/env.local's DWS_DONATION_ADDRESS
USDC = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"  # deploy/env.local's USDC
DONOR = ACCOUNTS[5]


def decoded_qr(page: Page) -> str:
    image = Image.open(io.BytesIO(page.locator("#pay-qr").screenshot(animations="disabled")))
    [barcode] = zxingcpp.read_barcodes(image)
    assert barcode.format == zxingcpp.BarcodeFormat.QRCode
    return barcode.text


def eip681(uri: str) -> tuple[str, int, str, dict[str, list[str]]]:
    """(target address, chain id, function or "", query) of an EIP-681 URI."""
    scheme, rest = uri.split(":", 1)
    assert scheme == "ethereum"
    parts = urlsplit("x://" + rest)
    target, chain = parts.netloc.split("@")
    return target, int(chain), parts.path.lstrip("/"), parse_qs(parts.query, strict_parsing=True)


def test_a_phone_without_a_wallet_gets_a_payment_request_for_eth_and_for_a_coin(
    live_server, plain_page, dev_chain
) -> None:
    page = plain_page(PHONE)
    page.goto(live_server.url)
    expect(page.locator("#pay-request")).to_be_visible()
    expect(page.locator("#pay-hint")).to_be_visible()
    expect(page.locator("#pay-code")).to_be_hidden()  # no amount yet
    expect(page.locator("#pay-request")).to_contain_text("credited to the address you pay from")
    expect(page.locator("#sender-warning")).to_be_visible()  # not from an exchange

    page.fill("#amount", "0.25")
    expect(page.locator("#pay-amount")).to_have_text("0.25 ETH")
    text = decoded_qr(page)
    assert text == f"ethereum:{SALE}@31337?value=250000000000000000"
    target, chain, function, query = eip681(text)
    assert (target, chain, function, query) == (SALE, 31337, "", {"value": [str(25 * 10**16)]})
    assert page.locator("#pay-link").get_attribute("href") == text

    page.check('input[name="asset"][value="usdc"]')
    page.fill("#amount", "100.5")
    expect(page.locator("#pay-amount")).to_have_text("100.5 USDC")
    text = decoded_qr(page)
    target, chain, function, query = eip681(text)
    assert (target, chain, function) == (USDC, 31337, "transfer")
    assert query == {"address": [SALE], "uint256": ["100500000"]}  # USDC has 6 decimals
    assert page.locator("#pay-link").get_attribute("href") == text
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]

    page.fill("#amount", "0.1234567")  # more decimals than USDC has: no request at all
    expect(page.locator("#pay-code")).to_be_hidden()
    assert_no_script_errors(page)


def test_no_payment_request_while_the_sale_is_paused(live_server, plain_page, dev_chain) -> None:
    DonationStats.objects.update(status="paused")
    page = plain_page(PHONE)
    page.goto(live_server.url)
    expect(page.locator("#sale-status")).to_have_text("Sale paused")
    page.fill("#amount", "1")
    expect(page.locator("#pay-request")).to_be_hidden()


def test_a_donor_who_paid_by_qr_looks_their_address_up_without_connecting(live_server, plain_page, dev_chain) -> None:
    make_donation(DONOR, asset="usdc", amount="25", usd_amount="25.00", tokens=25_000)
    refresh_user_data(DONOR)  # as the crawler's confirmation leaves it
    page = plain_page(PHONE)
    page.goto(live_server.url)
    page.fill("#lookup-address", "0x1234")
    page.click("#lookup")
    expect(page.locator("#lookup-error")).to_contain_text("40 hexadecimal characters")

    page.fill("#lookup-address", DONOR.upper().replace("0X", "0x"))
    page.click("#lookup")
    expect(page.locator("#user-tokens")).to_have_text("25,000")
    expect(page.locator("#donations-body tr[data-tx-hash]")).to_have_count(1)
    expect(page.locator("#donations-body tr[data-tx-hash]")).to_contain_text("25 USDC")
    expect(page.locator("#watched-address")).to_have_text(DONOR)
    # read-only: nothing to sign
    expect(page.locator("#staking")).to_be_hidden()
    expect(page.locator("#referral-box")).to_be_hidden()
    assert_no_script_errors(page)
