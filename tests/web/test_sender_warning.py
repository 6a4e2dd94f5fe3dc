"""The donor is told, in the widget before Donate, that the tokens go to the address that sends the
donation, and warned against sending from an exchange (the exchange's address would get them)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.web.browser import DESKTOP, PHONE, assert_no_script_errors

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("campaign_row")]


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone-390", "desktop-1280"])
def test_the_widget_says_who_is_credited_and_warns_against_exchanges(live_server, plain_page, viewport) -> None:
    page = plain_page(viewport)
    page.goto(live_server.url)
    warning = page.locator("#widget #sender-warning")

    for asset in ("eth", "usdt", "usdc"):
        page.check(f'input[name="asset"][value="{asset}"]')
        expect(warning).to_be_visible()
        expect(warning).to_contain_text("credited to the address that sends the donation")
        expect(warning).to_contain_text("Do not send from an exchange")
        expect(warning).to_contain_text("the exchange's address")
        assert warning.bounding_box()["y"] < page.locator("#donate").bounding_box()["y"]  # read before Donate
    faq = page.locator("#faq details", has_text="Can I donate from an exchange?")
    faq.locator("summary").click()
    expect(faq).to_contain_text("credited to the address that sent it")
    assert_no_script_errors(page)
