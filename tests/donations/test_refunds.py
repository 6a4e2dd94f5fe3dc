"""The refund register's rules and levers (donations/refunds.py) on recorded rows: the closed rule owes a
donation back, an operator waives or adds a row (both logged), and a transfer out of the donation address
pays the row it matches exactly or is listed, never guessed."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.conf import settings

from donations.finalized import finalized_block_record
from donations.judging import donations_confirm
from donations.models import Donation
from donations.refund_export import batch_transaction
from donations.refund_models import Refund, UnmatchedPayout
from donations.refund_values import ETH_TOKEN, Payout, StrayTransfer, Token
from donations.refunds import (
    RefundRefused,
    refund_add_by_hand,
    refund_owe_strays,
    refund_payouts_record,
    refund_waive,
    refunds_mark_exported,
    unmatched_payout_dismiss,
)
from donations.sightings import Sighting, Transfer
from donations.webhook_models import WebhookEndpoint, WebhookEvent
from donations.wire import refund_public

pytestmark = pytest.mark.django_db

DONOR = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"
OTHER = "0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc"
DAI = Token("dai", "0x" + "da" * 20, 18)


def recorded(tx: str, amount: str, asset: str = "usdt", tokens: int = 1000) -> Donation:
    return Donation.objects.create(
        tx_hash=tx,
        address=DONOR,
        asset=asset,
        amount=Decimal(amount),
        usd_amount=Decimal(amount) if asset != "eth" else Decimal(amount) * 2000,
        price=Decimal("0.001"),
        eth_price=Decimal(2000) if asset == "eth" else None,
        tokens=tokens,
        block_number=7,
        block_hash="0x" + "aa" * 32,
        block_time=datetime(2026, 1, 1, tzinfo=UTC),
    )


def subscribed() -> None:
    WebhookEndpoint(url="https://example.com/hook", events=["refund.owed", "refund.paid"]).save()


def events(kind: str) -> list[dict]:
    return [e.payload["data"] for e in WebhookEvent.objects.filter(event=kind).order_by("id")]


def test_a_donation_confirmed_while_the_sale_is_closed_is_owed_back_once():
    subscribed()
    tiers = settings.CONFIG.sale_tiers
    cap = recorded("0x" + "00" * 32, "100", tokens=tiers[-1].token_limit)  # this one reaches the cap
    donations_confirm(donation_ids=[cap.id], tiers=tiers)
    late = recorded("0x" + "01" * 32, "1.5", asset="eth")
    donations_confirm(donation_ids=[late.id], tiers=tiers)
    donations_confirm(donation_ids=[late.id], tiers=tiers)  # a second look changes nothing

    refund = Refund.objects.get()
    assert (refund.chain, refund.donor, refund.asset, refund.amount, refund.status, refund.reason) == (
        "eth",
        DONOR,
        "eth",
        Decimal("1.5"),
        "owed",
        "sale-closed",
    )
    assert refund.donation_id == late.id
    assert refund.source_tx_hash == late.tx_hash
    assert refund.amount_raw == 15 * 10**17
    assert [(e["donor"], e["amount"], e["amount_raw"], e["status"]) for e in events("refund.owed")] == [
        (DONOR, "1.5", str(15 * 10**17), "owed")
    ]


def test_a_refund_added_by_hand_before_its_donation_was_confirmed_is_owed_once(caplog):
    """An operator heard from the donor and added the refund by hand before the finalized crawler confirmed the
    donation at 0 tokens: the closed rule takes that row up (the donor's receipt shows it) and owes no second."""
    tiers = settings.CONFIG.sale_tiers
    cap = recorded("0x" + "00" * 32, "100", tokens=tiers[-1].token_limit)
    donations_confirm(donation_ids=[cap.id], tiers=tiers)
    late = recorded("0x" + "02" * 32, "1.5", asset="eth")
    by_hand = refund_add_by_hand(
        chain="eth", donor=DONOR, asset="eth", amount=Decimal("1.5"), tx_hash=late.tx_hash, note="mail", operator="op"
    )
    with caplog.at_level(logging.WARNING, logger="dws.refunds"):
        donations_confirm(donation_ids=[late.id], tiers=tiers)
    row = Refund.objects.get()
    assert (row.pk, row.donation_id, row.reason, row.status) == (by_hand.pk, late.id, "by-hand", "owed")
    assert f"refund {by_hand.pk}, added by hand by op, already owes it" in caplog.text


def test_a_donation_failed_then_confirmed_again_from_its_finalized_block_is_owed_again():
    """The finalized path's flip (donations/services.py): a confirmed row whose finalized receipt reported a
    revert is failed (its refund waived by rule: no money arrived), then the transfer is found in a finalized
    block after all and the row confirmed again at 0 tokens. The money did arrive: the refund is owed again,
    not left waived with the donor's receipt saying so."""
    tiers = settings.CONFIG.sale_tiers
    cap = recorded("0x" + "00" * 32, "100", tokens=tiers[-1].token_limit)
    donations_confirm(donation_ids=[cap.id], tiers=tiers)
    late = recorded("0x" + "03" * 32, "1.5", asset="eth")
    donations_confirm(donation_ids=[late.id], tiers=tiers)
    finalized_block_record(chain="eth", sightings=[], reverted_tx_hashes=[late.tx_hash], tiers=tiers)
    assert Refund.objects.get().status == "waived"

    again = Transfer(late.tx_hash, None, DONOR, "eth", Decimal("1.5"), 9, "0x" + "bb" * 32)
    found = Sighting(chain="eth", transfer=again, block_time=late.block_time, eth_price=Decimal(2000))
    finalized_block_record(chain="eth", sightings=[found], reverted_tx_hashes=[], tiers=tiers)
    late.refresh_from_db()
    assert (late.status, late.tokens) == ("confirmed", 0)
    refund = Refund.objects.get()
    assert (refund.donation_id, refund.status, refund.amount, refund.waived_by) == (late.id, "owed", Decimal("1.5"), "")
    assert "waived by dws (rule)" in refund.note


def test_an_open_sale_owes_nothing():
    row = recorded("0x" + "02" * 32, "10")
    donations_confirm(donation_ids=[row.id], tiers=settings.CONFIG.sale_tiers)
    assert not Refund.objects.exists()


def test_an_operator_waives_with_a_reason_and_adds_a_row_with_its_transaction(caplog):
    tx = "0x" + "03" * 32
    with pytest.raises(RefundRefused, match="say why"):
        refund_add_by_hand(
            chain="eth", donor=DONOR, asset="usdt", amount=Decimal(5), tx_hash=tx, note=" ", operator="o"
        )
    with pytest.raises(RefundRefused, match="64 hex"):
        refund_add_by_hand(
            chain="eth", donor=DONOR, asset="usdt", amount=Decimal(5), tx_hash="0x12", note="x", operator="o"
        )
    with pytest.raises(RefundRefused, match="not ETH, a donation coin or a stray token"):
        refund_add_by_hand(
            chain="eth", donor=DONOR, asset="shib", amount=Decimal(5), tx_hash=tx, note="x", operator="o"
        )
    with pytest.raises(RefundRefused, match="6 decimals"):
        refund_add_by_hand(
            chain="eth", donor=DONOR, asset="usdt", amount=Decimal("5.0000001"), tx_hash=tx, note="x", operator="o"
        )
    with caplog.at_level(logging.WARNING, logger="dws.refunds"):
        row = refund_add_by_hand(
            chain="eth",
            donor=DONOR.upper().replace("0X", "0x"),
            asset="usdt",
            amount=Decimal(5),
            tx_hash=tx,
            note="sent twice by mistake, asked by mail",
            operator="alice (admin)",
        )
    assert (row.reason, row.donor, row.added_by, row.note, row.status) == (
        "by-hand",
        DONOR,
        "alice (admin)",
        "sent twice by mistake, asked by mail",
        "owed",
    )
    with pytest.raises(RefundRefused, match="already has a refund"):
        refund_add_by_hand(
            chain="eth", donor=DONOR, asset="usdt", amount=Decimal(5), tx_hash=tx, note="x", operator="o"
        )

    with pytest.raises(RefundRefused, match="reason is required"):
        refund_waive(refund_id=row.id, reason="", operator="bob (admin)")
    with caplog.at_level(logging.WARNING, logger="dws.refunds"):
        waived = refund_waive(refund_id=row.id, reason="the donor took tokens instead", operator="bob (admin)")
    assert (waived.status, waived.waived_by, waived.waived_reason) == (
        "waived",
        "bob (admin)",
        "the donor took tokens instead",
    )
    assert "waived by bob (admin): the donor took tokens instead" in caplog.text
    with pytest.raises(RefundRefused, match="is waived, not owed"):
        refund_waive(refund_id=row.id, reason="again", operator="bob (admin)")


def payout(tx: str, recipient: str, token: Token, raw: int, *, log: int | None = None, path: str = "") -> Payout:
    return Payout(tx, log, path, 42, recipient, token, raw)


def test_a_transfer_out_pays_the_oldest_owed_row_it_matches_exactly_and_the_rest_is_listed():
    subscribed()
    strays = [
        StrayTransfer("0x" + "0a" * 32, 3, 40, DONOR, DAI, 25 * 10**18),
        StrayTransfer("0x" + "0b" * 32, 1, 41, DONOR, DAI, 25 * 10**18),
    ]
    first, second = refund_owe_strays(chain="eth", strays=strays)
    assert refund_owe_strays(chain="eth", strays=strays) == []  # the block crawled again: nothing new

    paying = "0x" + "0c" * 32
    found = refund_payouts_record(
        chain="eth",
        payouts=[
            payout(paying, DONOR, DAI, 25 * 10**18, log=0),  # pays the older row
            payout(paying, DONOR, DAI, 24 * 10**18, log=1),  # a wrong amount: matches nothing
            payout(paying, OTHER, ETH_TOKEN, 10**18, path="0.1"),  # nobody is owed ETH
        ],
    )
    assert found == (1, 2)
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.status, first.paid_tx_hash, first.paid_log_index, first.paid_block_number) == ("paid", paying, 0, 42)
    assert second.status == "owed"
    listed = {(u.recipient, u.asset, u.amount, u.log_index, u.trace_address) for u in UnmatchedPayout.objects.all()}
    assert listed == {
        (DONOR, "dai", Decimal(24), 1, ""),
        (OTHER, "eth", Decimal(1), None, "0.1"),
    }
    # The finalized block crawled again: nothing is paid twice, nothing listed twice.
    again = refund_payouts_record(chain="eth", payouts=[payout(paying, DONOR, DAI, 25 * 10**18, log=0)])
    assert again == (0, 0)
    assert Refund.objects.filter(status="paid").count() == 1
    assert [(e["id"], e["paid"]["tx_hash"]) for e in events("refund.paid")] == [(first.id, paying)]

    wrong = UnmatchedPayout.objects.get(log_index=1)
    with pytest.raises(RefundRefused, match="reason is required"):
        unmatched_payout_dismiss(payout_id=wrong.id, note="", operator="o")
    done = unmatched_payout_dismiss(payout_id=wrong.id, note="paid 1 DAI more by hand", operator="carol (admin)")
    assert (done.status, done.operator) == ("dismissed", "carol (admin)")


def test_an_amount_beyond_what_the_register_holds_is_logged_never_a_failed_block(caplog):
    """A token that misreports its amounts must not make the finalized crawler's block write raise."""
    huge = StrayTransfer("0x" + "0d" * 32, 0, 40, DONOR, Token("weird", "0x" + "ee" * 20, 0), 10**70)
    with caplog.at_level(logging.ERROR, logger="dws.refunds"):
        assert refund_owe_strays(chain="eth", strays=[huge]) == []
        assert refund_payouts_record(chain="eth", payouts=[payout("0x" + "0e" * 32, DONOR, huge.token, 10**70)]) == (
            0,
            0,
        )
    assert "more than the refund register holds" in caplog.text
    assert not Refund.objects.exists()


def test_amounts_past_28_digits_stay_exact_to_the_base_unit():
    """An 18-decimal token moving more than 10^10 units (a meme token's everyday amount) has more digits than
    Python's default decimal context keeps (28): the wei were rounded away, so the register owed, exported
    and matched another amount than arrived, and an operator's row of that size raised instead of saving."""
    raw = 123_456_789_012 * 10**18 + 1
    meme = Token("meme", "0x" + "ef" * 20, 18)
    (row,) = refund_owe_strays(chain="eth", strays=[StrayTransfer("0x" + "0f" * 32, 0, 40, DONOR, meme, raw)])
    row.refresh_from_db()
    assert row.amount == Decimal("123456789012.000000000000000001")
    assert row.amount_raw == raw
    assert batch_transaction(row)["data"].endswith(raw.to_bytes(32, "big").hex())
    assert refund_public(row)["amount"] == "123456789012.000000000000000001"  # the refund.owed webhook's
    assert refund_payouts_record(chain="eth", payouts=[payout("0x" + "1f" * 32, DONOR, meme, raw)]) == (1, 0)

    big = Decimal("12345678901.123456789012345678")  # ETH, to the wei
    added = refund_add_by_hand(
        chain="eth", donor=OTHER, asset="eth", amount=big, tx_hash="0x" + "2f" * 32, note="n", operator="op"
    )
    added.refresh_from_db()
    assert (added.amount, added.amount_raw) == (big, 12345678901_123456789012345678)


def test_a_payment_pays_the_row_the_operator_exported_not_an_older_twin():
    """A donor sent 100 USDT twice after the sale closed (the first showed 0 tokens); the operator agrees to
    waive the first and exports the second. The treasury's transfer matches both by chain, recipient, token and
    amount: it pays the row exported, so the other can still be waived and the paid one is not exported again."""
    usdt = Token("usdt", "0x5fbdb2315678afecb367f032d93f642f64180aa3", 6)
    older, newer = refund_owe_strays(
        chain="eth",
        strays=[StrayTransfer("0x" + tx * 32, 0, 40, DONOR, usdt, 100 * 10**6) for tx in ("3a", "3b")],
    )
    refunds_mark_exported(refund_ids=[newer.pk])
    paying = "0x" + "3c" * 32
    assert refund_payouts_record(chain="eth", payouts=[payout(paying, DONOR, usdt, 100 * 10**6, log=0)]) == (1, 0)
    older.refresh_from_db()
    newer.refresh_from_db()
    assert (older.status, newer.status, newer.paid_tx_hash) == ("owed", "paid", paying)
    refund_waive(refund_id=older.pk, reason="the donor took tokens for it", operator="op")
