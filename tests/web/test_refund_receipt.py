"""The donor's receipt tells a donation the sale could not take: "Refund owed" while the refund register owes
it, then "Refunded" with the treasury's transaction once the crawler saw it paid (/user/data's `refund`)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from playwright.sync_api import expect

from donations.models import Donation
from donations.refund_models import Refund
from tests.api.support import make_donation
from tests.configs import configured
from tests.web.browser import assert_no_script_errors
from tests.web.pages import DONOR

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("campaign_row")]


def test_the_receipt_shows_the_refund_owed_then_refunded_with_its_transaction(
    live_server, wallet_page, dev_chain, settings
) -> None:
    settings.CONFIG = configured(settings.CONFIG, explorer_url="https://explorer.example/tx/{tx}")
    capped = make_donation(DONOR, asset="usdt", amount="5", usd_amount="5.00", tokens=0, tx="0x" + "5c" * 32)
    Donation.objects.filter(pk=capped.pk).update(confirmed_at=capped.created_at)
    refund = Refund.objects.create(
        chain=capped.chain,
        donor=DONOR,
        asset="usdt",
        contract=settings.CONFIG.first_chain.stable_coin("usdt").contract,
        decimals=6,
        amount=Decimal(5),
        reason="sale-closed",
        donation=capped,
        source_tx_hash=capped.tx_hash,
    )
    page = wallet_page(rpc_url=dev_chain.url, account=DONOR, connected=True)
    page.goto(live_server.url)

    receipt = page.locator(f'tr[data-receipt-for="{capped.tx_hash}"]')
    expect(receipt).to_contain_text("0 $DWS: the sale had sold out when it was confirmed")
    expect(receipt.locator(".refund-owed")).to_have_text(
        "Refund owed: 5 USDT, to be sent back to this address from the sale's treasury"
    )

    paying = "0x" + "9a" * 32
    Refund.objects.filter(pk=refund.pk).update(status="paid", paid_tx_hash=paying, paid_block_number=12)
    # The donor comes back later: the browser's copy of /user/data (max-age 5 s) has long expired by then.
    devtools = page.context.new_cdp_session(page)
    devtools.send("Network.enable")
    devtools.send("Network.setCacheDisabled", {"cacheDisabled": True})
    page.reload()

    refunded = receipt.locator(".refund-paid")
    expect(refunded).to_contain_text(f"Refunded: 5 USDT sent back to you in transaction {paying}")
    expect(refunded.locator("a.tx-link")).to_have_attribute("href", f"https://explorer.example/tx/{paying}")
    assert_no_script_errors(page)
