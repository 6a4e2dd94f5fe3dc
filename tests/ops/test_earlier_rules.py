"""Issue #19: rows the old rules confirmed stay (never deleted, tokens unchanged).

A 1 ETH self-transfer of the donation address was credited before the rule that the address's own money
is no donation: its confirmed row stays as it is. `reconcile` lists it as "credited under an earlier
rule", exits 0 and freezes nothing; the admin's internal movements show the row beside the movement.
"""

from __future__ import annotations

from decimal import Decimal
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.utils import timezone

from crawlers.models import FINALIZED, LATEST
from crawlers.runs.crawl import crawl
from donations.models import Donation, DonationStats, DonationStatus
from donations.totals import stats_recompute, user_data_refresh
from tests.chain import ACCOUNTS, DONATION_ADDRESS, ETHER, as_contract_wallet
from tests.configs import configured
from tests.invariants import assert_ledger_invariants

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]

OWNER = ACCOUNTS[1]


def credited_the_old_way(node, tx: str, settings, donor: str = DONATION_ADDRESS, frame: str | None = None) -> Donation:
    """The row the old rules wrote: confirmed, 1 ETH from `donor` (the address itself for a self-transfer),
    at call frame `frame` for ETH that came back in an internal call."""
    receipt = node.receipt(tx)
    row = Donation.objects.create(
        tx_hash=tx,
        trace_address=frame,
        address=donor,
        asset="eth",
        amount=Decimal(1),
        usd_amount=Decimal("2000.00"),
        price=Decimal("0.001"),
        eth_price=Decimal(2000),
        tokens=2_000_000,
        status=DonationStatus.CONFIRMED,
        block_number=int(receipt["blockNumber"], 16),
        block_hash=receipt["blockHash"],
        block_time=timezone.now(),
    )
    stats_recompute(stats=DonationStats.objects.get(), tiers=settings.CONFIG.sale_tiers)
    user_data_refresh(addresses=[donor])
    return row


def test_a_self_transfer_credited_under_the_old_rules_stays_and_reconcile_lists_it_without_freezing(
    node, settings, client
):
    first = node.head() + 1
    tx = node.send_eth(DONATION_ADDRESS, DONATION_ADDRESS, ETHER)
    assert crawl(LATEST).held is None
    node.mine(2)
    assert crawl(FINALIZED).held is None
    row = credited_the_old_way(node, tx, settings)
    assert_ledger_invariants()

    out = StringIO()
    call_command("reconcile", "--from-block", str(first), "--to-block", str(node.finalized()), stdout=out)

    assert f"donation id {row.id} ({tx}) credited under an earlier rule" in out.getvalue()
    assert "no drift" in out.getvalue()
    assert DonationStats.objects.get().status != "paused"
    kept = Donation.objects.get()
    assert (kept.id, kept.status, kept.tokens) == (row.id, "confirmed", 2_000_000)
    client.force_login(User.objects.create_superuser("alice", "alice@example.org", "pw-not-used"))
    listing = client.get("/admin/crawlers/internalmovement/").content.decode()
    assert f"credited under an earlier rule: donation id {row.id}" in listing
    assert_ledger_invariants()


def test_weth_withdrawn_by_a_contract_address_and_credited_to_weth_before_is_listed_not_drift(node, settings):
    weth = node.deploy("WrappedEth")
    node.send({"from": DONATION_ADDRESS, "to": weth, "value": hex(ETHER), "data": node.call_data("deposit()", [], [])})
    as_contract_wallet(node, DONATION_ADDRESS, OWNER)
    first = node.head() + 1
    settings.CONFIG = configured(settings.CONFIG, start_block=first)
    withdraw = node.call_data("withdraw(uint256)", ["uint256"], [ETHER])
    execute = node.call_data(
        "execute(address,uint256,bytes)", ["address", "uint256", "bytes"], [weth, 0, bytes.fromhex(withdraw[2:])]
    )
    tx = node.send({"from": OWNER, "to": DONATION_ADDRESS, "data": execute, "gas": hex(300_000)})
    assert crawl(LATEST).held is None
    node.mine(2)
    assert crawl(FINALIZED).held is None
    row = credited_the_old_way(node, tx, settings, donor=weth, frame="0")

    out = StringIO()
    call_command("reconcile", "--from-block", str(first), "--to-block", str(node.finalized()), stdout=out)

    assert f"donation id {row.id} ({tx}) credited under an earlier rule (eth 1.0000000000 the address's own money)" in (
        out.getvalue()
    )
    assert "no drift" in out.getvalue()
    assert Donation.objects.get().tokens == 2_000_000
    assert_ledger_invariants()
