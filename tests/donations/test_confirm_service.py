"""The reusable confirmation path (issue #4's old-unconfirmed crawler calls it) on recorded rows."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.conf import settings

from donations.judging import donations_confirm
from donations.models import Donation, DonationStats, UserData
from donations.services import DonationOutcome
from tests.invariants import assert_ledger_invariants

pytestmark = pytest.mark.django_db

DONOR = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"


def recorded(tx: str, usd: str, status: str = "unconfirmed") -> Donation:
    return Donation.objects.create(
        tx_hash=tx,
        address=DONOR,
        asset="usdt",
        amount=Decimal(usd),
        usd_amount=Decimal(usd),
        price=Decimal("0.001"),
        tokens=int(Decimal(usd) * 1000),
        status=status,
        block_number=1,
        block_hash="0x" + "aa" * 32,
        block_time=datetime(2026, 1, 1, tzinfo=UTC),
    )


def test_it_confirms_once_and_holds_while_paused():
    tiers = settings.CONFIG.sale_tiers
    first, second = recorded("0x" + "01" * 32, "10"), recorded("0x" + "02" * 32, "5")

    DonationStats.objects.update(status="paused")
    assert donations_confirm(donation_ids=[first.id], tiers=tiers) == {first.id: DonationOutcome.HELD_PAUSED}
    assert not UserData.objects.exists()

    DonationStats.objects.update(status="open")
    outcomes = donations_confirm(donation_ids=[first.id, second.id], tiers=tiers)
    assert outcomes == {first.id: DonationOutcome.CONFIRMED, second.id: DonationOutcome.CONFIRMED}
    again = donations_confirm(donation_ids=[first.id], tiers=tiers)
    assert again == {first.id: DonationOutcome.ALREADY_CONFIRMED}
    assert UserData.objects.get(address=DONOR).tokens == 15_000
    assert DonationStats.objects.get().total == Decimal("15.00")
    assert_ledger_invariants()


def test_the_confirmation_time_is_kept_on_the_row_once():
    """`confirmed_at`: when the crediting rule confirmed the row (the donor's receipt shows it); a hold
    while paused sets none, and a later look at a confirmed row keeps the first."""
    tiers = settings.CONFIG.sale_tiers
    row = recorded("0x" + "03" * 32, "10")
    DonationStats.objects.update(status="paused")
    donations_confirm(donation_ids=[row.id], tiers=tiers)
    row.refresh_from_db()
    assert row.confirmed_at is None

    DonationStats.objects.update(status="open")
    before = datetime.now(UTC)
    donations_confirm(donation_ids=[row.id], tiers=tiers)
    after = datetime.now(UTC)
    row.refresh_from_db()
    assert row.confirmed_at is not None
    assert before <= row.confirmed_at <= after
    first = row.confirmed_at

    donations_confirm(donation_ids=[row.id], tiers=tiers)
    row.refresh_from_db()
    assert row.confirmed_at == first


def staked_then_reverted(kept_usd: str | None, reverted_usd: str, stake: int) -> UserData:
    """The donor's donations confirmed, `stake` tokens staked, then the `reverted_usd` one reverts (a lying
    provider's receipt corrected by the finalized one): the donor's row after it."""
    from donations.staking import stake_add
    from donations.totals import Deltas, stats_recompute

    tiers = settings.CONFIG.sale_tiers
    kept = [recorded("0x" + "05" * 32, kept_usd)] if kept_usd else []
    reverted = recorded("0x" + "06" * 32, reverted_usd)
    donations_confirm(donation_ids=[d.id for d in [*kept, reverted]], tiers=tiers)
    stake_add(address=DONOR, amount=stake)
    reverted.refresh_from_db()
    Donation.objects.filter(id=reverted.id).update(status="failed")
    deltas = Deltas()
    deltas.add(reverted, -1)
    deltas.apply()
    stats_recompute(stats=DonationStats.objects.get(), tiers=tiers)
    return UserData.objects.get(address=DONOR)


def test_a_confirmed_donation_that_reverts_leaves_no_more_staked_than_the_donor_still_has():
    """Issue 36: the donor staked everything; one confirmed donation then reverts. Staked tokens must not
    exceed the tokens the donor still has."""
    donor = staked_then_reverted("5", "10", stake=15_000)
    assert (donor.tokens, donor.staked, donor.status) == (5_000, 5_000, "staked")


def test_a_revert_that_takes_every_token_ends_the_stake():
    donor = staked_then_reverted(None, "10", stake=4_000)
    assert (donor.tokens, donor.staked, donor.status) == (0, 0, "none")
