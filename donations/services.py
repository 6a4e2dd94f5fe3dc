"""The crediting writes: record a sighting, confirm, fail a revert, recompute the campaign and per-donor totals.

Every rule here exists once and is shared by the latest crawler, the finalized crawler and the
old-unconfirmed crawler (issue #4). Confirmation and the campaign totals change only under the
donation_stats row lock, taken first and always in the same order (campaign row, then donation rows,
then user_data rows by address), so two writers can never interleave a crediting decision.

Token counts: a donation gets ceil(USD / price) at the tier in force when it is recorded; when it is
confirmed the tier is read again from the confirmed total under the lock, and a closed sale issues 0.
A confirmed donation is never re-priced.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.db import IntegrityError, connection, transaction
from django.db.models import Count, F, Sum
from django.utils import timezone

from crawlers.detection import Transfer
from donations.identity import find_at_identity, sighting_match
from donations.models import CampaignStatus, Donation, DonationStats, DonationStatus
from donations.rules import SaleState, round_usd, sale_state, tokens_for
from donations.webhooks import webhook_campaign_status, webhook_donation_event
from dws_project.config import SaleTier
from prices.models import TOKEN, Price

logger = logging.getLogger("dws.donations")


@dataclass(frozen=True)
class Sighting:
    """A transfer seen in a block, with its USD value at that block's ETH price (coins 1:1)."""

    transfer: Transfer
    block_time: datetime
    usd_amount: Decimal  # already rounded to cents


class Outcome:
    INSERTED = "inserted"
    MOVED = "moved"  # seen again in another block after a re-org: recorded anew
    UNCHANGED = "unchanged"
    CONFIRMED = "confirmed"
    ALREADY_CONFIRMED = "already-confirmed"
    HELD_PAUSED = "held-paused"
    FAILED = "failed"


def stats_lock() -> DonationStats:
    """The campaign row, locked until the surrounding transaction ends."""
    return DonationStats.objects.select_for_update().get()


def confirmed_totals(address: str | None = None) -> tuple[Decimal, int, int]:
    """(USD, tokens, count) of the confirmed donations, of everyone or of one address."""
    rows = Donation.objects.filter(status=DonationStatus.CONFIRMED)
    if address is not None:
        rows = rows.filter(address=address)
    sums = rows.aggregate(total=Sum("usd_amount"), tokens=Sum("tokens"), n=Count("id"))
    return sums["total"] or Decimal("0"), sums["tokens"] or 0, sums["n"]


def _priced(usd: Decimal, state: SaleState) -> tuple[Decimal, int]:
    return state.token_price, tokens_for(usd, state.token_price)


def _new_row(sighting: Sighting, price: Decimal, tokens: int) -> Donation:
    t = sighting.transfer
    return Donation(
        tx_hash=t.tx_hash,
        log_index=t.log_index,
        trace_address=t.trace_address,
        address=t.donor,
        asset=t.asset,
        amount=t.amount,
        usd_amount=sighting.usd_amount,
        price=price,
        tokens=tokens,
        status=DonationStatus.UNCONFIRMED,
        block_number=t.block_number,
        block_hash=t.block_hash,
        block_time=sighting.block_time,
    )


def _move_to(donation: Donation, sighting: Sighting, price: Decimal, tokens: int) -> None:
    """An unconfirmed row whose block was re-orged away, seen again elsewhere: record it as seen there.

    Only ever called with the sighting of this very transfer (`sighting_match`), so the USD value,
    price and tokens it takes are its own, re-derived for the new block's minute by the caller.
    """
    donation.log_index = sighting.transfer.log_index
    donation.block_number = sighting.transfer.block_number
    donation.block_hash = sighting.transfer.block_hash
    donation.block_time = sighting.block_time
    donation.usd_amount = sighting.usd_amount
    donation.price = price
    donation.tokens = tokens
    donation.next_look_at = None
    donation.save(
        update_fields=[
            "log_index",
            "block_number",
            "block_hash",
            "block_time",
            "usd_amount",
            "price",
            "tokens",
            "next_look_at",
            "modified_at",
        ]
    )


def donation_record_unconfirmed(*, sighting: Sighting, tiers: Sequence[SaleTier]) -> tuple[Donation, str]:
    """Insert a sighting as unconfirmed (idempotent); the latest crawler's only write.

    Tokens are priced at the current tier and never zeroed here: a closed sale is applied when the
    donation is confirmed, since the sale may reopen before then. A confirmed or failed row is left
    alone; an unconfirmed row from a block that is no longer canonical moves to where the transfer is
    seen now (log index included), so a re-org never makes a second row (see `donations/identity.py`).
    """
    state = sale_state(DonationStats.objects.get().tokens, tiers)
    price, tokens = _priced(sighting.usd_amount, state)
    with transaction.atomic():
        match = sighting_match(sighting.transfer)
        if match.move:
            _move_to(match.row, sighting, price, tokens)  # type: ignore[arg-type]
            webhook_donation_event(match.row, "donation.moved")
            return match.row, Outcome.MOVED  # type: ignore[return-value]
        if match.row is not None:
            return match.row, Outcome.UNCHANGED
        try:
            with transaction.atomic():
                row = _new_row(sighting, price, tokens)
                row.save(force_insert=True)
                webhook_donation_event(row, "donation.seen")
                return row, Outcome.INSERTED
        except IntegrityError:  # another writer inserted it first: theirs stands
            return find_at_identity(sighting.transfer, lock=True), Outcome.UNCHANGED  # type: ignore[return-value]


def donation_confirm(*, stats: DonationStats, donation: Donation, tiers: Sequence[SaleTier]) -> str:
    """Apply the crediting rule to one donation, exactly once. Caller holds `stats_lock()`.

    `stats.tokens` must be the confirmed total as of this moment (it is advanced here, so several
    confirmations under one lock see each other). Paused: the row stays unconfirmed. Already
    confirmed: untouched, whatever the sale does now. Closed: confirmed with 0 tokens.
    """
    if donation.status == DonationStatus.CONFIRMED:
        return Outcome.ALREADY_CONFIRMED
    if stats.status == CampaignStatus.PAUSED:
        return Outcome.HELD_PAUSED
    if donation.status == DonationStatus.FAILED:
        # Positive evidence (the transfer in a finalized block) outweighs an earlier absence.
        logger.warning("donation %s was failed but is in a finalized block; confirming it", donation.tx_hash)
    state = sale_state(stats.tokens, tiers)
    donation.price = state.token_price
    donation.tokens = 0 if state.closed else tokens_for(donation.usd_amount, state.token_price)
    donation.status = DonationStatus.CONFIRMED
    donation.save(update_fields=["price", "tokens", "status", "modified_at"])
    stats.tokens += donation.tokens
    stats.total += donation.usd_amount
    webhook_donation_event(donation, "donation.confirmed")
    return Outcome.CONFIRMED


def donation_fail_reverted(*, donation: Donation) -> bool:
    """A finalized receipt reports the transaction reverted: no money moved. Caller holds the stats lock."""
    if donation.status == DonationStatus.FAILED:
        return False
    logger.warning(
        "donation %s (%s) reverted on chain per its finalized receipt; %s -> failed",
        donation.tx_hash,
        donation.asset,
        donation.status,
    )
    donation.status = DonationStatus.FAILED
    donation.save(update_fields=["status", "modified_at"])
    webhook_donation_event(
        donation, "donation.failed", reason="reverted", detail="its finalized receipt reports a revert"
    )
    return True


def stats_recompute(*, stats: DonationStats, tiers: Sequence[SaleTier]) -> DonationStats:
    """Campaign totals from the confirmed donations; open/closed re-derived; token price row on a tier change.

    The stored status is never an input. `paused` is the operator's and is left as it is.
    """
    total, tokens, _ = confirmed_totals()
    state = sale_state(tokens, tiers)
    was = stats.status
    stats.total = round_usd(total)
    stats.tokens = tokens
    if stats.status != CampaignStatus.PAUSED:
        stats.status = CampaignStatus.CLOSED if state.closed else CampaignStatus.OPEN
    stats.save(update_fields=["total", "tokens", "status", "modified_at"])
    if was != stats.status and was != CampaignStatus.PAUSED:
        webhook_campaign_status(stats, stats.status)  # open <-> closed
    token_price_record(state=state, confirmed_tokens=tokens)
    return stats


def token_price_record(*, state: SaleState, confirmed_tokens: int) -> Price | None:
    """A `price` row for the sale token whenever the tier's price differs from the last one written."""
    last = Price.objects.filter(asset=TOKEN).order_by("-created_at").values_list("price", flat=True).first()
    if last is not None and last == state.token_price:
        return None
    row = Price.objects.create(
        asset=TOKEN,
        price=state.token_price,
        created_at=timezone.now(),
        sources={"tier": state.tier_number, "confirmed_tokens": confirmed_tokens, "closed": state.closed},
    )
    logger.info(
        "token price now %s (tier %d, %d tokens confirmed)", state.token_price, state.tier_number, confirmed_tokens
    )
    return row


_USER_DATA_REFRESH = """
WITH sums AS (
    SELECT COALESCE(SUM(usd_amount), 0) AS total, COALESCE(SUM(tokens), 0) AS tokens, COUNT(*) AS n
    FROM donation WHERE address = %(address)s AND status = 'confirmed'
)
INSERT INTO user_data (address, total, tokens)
SELECT %(address)s, sums.total, sums.tokens FROM sums
WHERE sums.n > 0 OR EXISTS (SELECT 1 FROM user_data WHERE address = %(address)s)
ON CONFLICT (address) DO UPDATE SET total = EXCLUDED.total, tokens = EXCLUDED.tokens, modified_at = now()
WHERE user_data.total IS DISTINCT FROM EXCLUDED.total OR user_data.tokens IS DISTINCT FROM EXCLUDED.tokens
"""


def user_data_refresh(*, addresses: Iterable[str]) -> None:
    """Bring each address's totals to the sum of its confirmed donations (seed 000's update_user_data).

    No row is created for an address without a confirmed donation; an existing row is zeroed when its
    donations all leave `confirmed`; nothing is written when nothing changed. Addresses in sorted
    order, so concurrent writers lock rows in the same order.
    """
    with connection.cursor() as cursor:
        for address in sorted(set(addresses)):
            cursor.execute(_USER_DATA_REFRESH, {"address": address})


@dataclass
class FinalizedBlockResult:
    confirmed: int = 0
    inserted: int = 0
    held_paused: int = 0
    failed: int = 0


@transaction.atomic
def finalized_block_record(
    *, sightings: Sequence[Sighting], reverted_tx_hashes: Sequence[str], tiers: Sequence[SaleTier]
) -> FinalizedBlockResult:
    """Everything the finalized crawler writes for one block, under the campaign lock, in one transaction.

    Each sighting is inserted if the latest crawler missed it and then confirmed by the crediting
    rule; each native ETH transaction whose finalized receipt reports a revert fails its row (a
    confirmed one drops out of the totals, so the sale may reopen). Then the campaign and the touched
    donors' totals are recomputed.
    """
    result = FinalizedBlockResult()
    stats = stats_lock()
    stats.total, stats.tokens, _ = confirmed_totals()  # the truth under the lock, not the stored copy
    touched: set[str] = set()
    for sighting in sightings:
        donation, outcome = donation_record_unconfirmed(sighting=sighting, tiers=tiers)
        if outcome == Outcome.INSERTED:
            result.inserted += 1
        donation.refresh_from_db()
        decision = donation_confirm(stats=stats, donation=donation, tiers=tiers)
        if decision == Outcome.CONFIRMED:
            result.confirmed += 1
            touched.add(donation.address)
        elif decision == Outcome.HELD_PAUSED:
            result.held_paused += 1
    for tx_hash in reverted_tx_hashes:
        for donation in Donation.objects.select_for_update().filter(tx_hash=tx_hash, log_index__isnull=True):
            was_confirmed = donation.status == DonationStatus.CONFIRMED
            if donation_fail_reverted(donation=donation):
                result.failed += 1
                if was_confirmed:
                    touched.add(donation.address)
    if result.confirmed or result.failed or result.inserted:
        stats_recompute(stats=stats, tiers=tiers)
        user_data_refresh(addresses=touched)
    return result


@transaction.atomic
def donations_confirm(*, donation_ids: Sequence[int], tiers: Sequence[SaleTier]) -> dict[int, str]:
    """Confirm recorded donations (the old-unconfirmed crawler's path, issue #4), oldest first.

    The caller has positive evidence that each one is in a finalized block. Same rule, same lock and
    same recompute as the finalized crawler; returns each donation's outcome.
    """
    stats = stats_lock()
    stats.total, stats.tokens, _ = confirmed_totals()
    rows = list(Donation.objects.select_for_update().filter(id__in=donation_ids).order_by("block_number", "id"))
    outcomes = {row.id: donation_confirm(stats=stats, donation=row, tiers=tiers) for row in rows}
    touched = [row.address for row in rows if outcomes[row.id] == Outcome.CONFIRMED]
    if touched:
        stats_recompute(stats=stats, tiers=tiers)
        user_data_refresh(addresses=touched)
    return outcomes


@transaction.atomic
def donations_fail_unconfirmed(*, donation_ids: Sequence[int], reason: str, tiers: Sequence[SaleTier]) -> list[int]:
    """The old-unconfirmed judge's failure: unconfirmed rows only (a confirmed one is never touched here).

    Under the campaign lock like every crediting write; the rows are kept, only their status changes.
    The statistics are recomputed afterwards (they do not change, since unconfirmed rows were never in
    them, but the status and token price are re-derived from the truth all the same).
    """
    stats = stats_lock()
    rows = list(
        Donation.objects.select_for_update()
        .filter(id__in=donation_ids, status=DonationStatus.UNCONFIRMED)
        .order_by("block_number", "id")
    )
    for row in rows:
        logger.warning("donation %s (%s, id %d) unconfirmed -> failed: %s", row.tx_hash, row.asset, row.id, reason)
        row.status = DonationStatus.FAILED
        row.save(update_fields=["status", "modified_at"])
        webhook_donation_event(
            row, "donation.failed", reason="reverted" if "revert" in reason else "dropped", detail=reason
        )
    if rows:
        stats_recompute(stats=stats, tiers=tiers)
        user_data_refresh(addresses=[row.address for row in rows])
    return [row.id for row in rows]


def donations_absence_record(*, absent_ids: Sequence[int], seen_ids: Sequence[int]) -> None:
    """One old-unconfirmed run's observations: +1 for every transaction found neither on chain nor in the
    mempool, back to 0 for every one seen anywhere. Unconfirmed rows only.

    Under the campaign lock like every other write to donation rows, so it never interleaves its row
    locks with a crawler's (which could deadlock).
    """
    with transaction.atomic():
        stats_lock()
        if absent_ids:
            Donation.objects.filter(id__in=absent_ids, status=DonationStatus.UNCONFIRMED).update(
                absent_count=F("absent_count") + 1, modified_at=timezone.now()
            )
        if seen_ids:
            Donation.objects.filter(id__in=seen_ids, absent_count__gt=0).update(
                absent_count=0, modified_at=timezone.now()
            )


_LOOK_LATER = """
UPDATE donation
SET next_look_at = %(now)s + LEAST(GREATEST((%(now)s - block_time) / 8, %(min)s), %(max)s), modified_at = now()
WHERE id = ANY(%(ids)s) AND status = 'unconfirmed'
"""


def donations_look_later(
    *, donation_ids: Sequence[int], now: datetime, min_delay: timedelta, max_delay: timedelta
) -> None:
    """Give the still-unconfirmed rows among `donation_ids` a next-look time: an eighth of their age from
    `now`, within [min_delay, max_delay] (the old-unconfirmed crawler's back-off). Under the campaign
    lock like every other write to donation rows."""
    if not donation_ids:
        return
    with transaction.atomic():
        stats_lock()
        with connection.cursor() as cursor:
            cursor.execute(_LOOK_LATER, {"now": now, "min": min_delay, "max": max_delay, "ids": sorted(donation_ids)})


# --- the operator's lever: pause and resume -------------------------------------------------------


@transaction.atomic
def campaign_pause(*, operator: str, reason: str = "") -> bool:
    """Halt crediting (the crawlers keep recording); False when it was paused already (the first
    pause's reason is kept)."""
    stats = stats_lock()
    if stats.status == CampaignStatus.PAUSED:
        return False
    was = stats.status
    stats.status = CampaignStatus.PAUSED
    stats.paused_reason, stats.paused_by, stats.paused_at = reason, operator[:200], timezone.now()
    stats.save(update_fields=["status", "paused_reason", "paused_by", "paused_at", "modified_at"])
    webhook_campaign_status(stats, "paused")
    logger.warning(
        "campaign paused by %s (was %s)%s: no donation is credited until it is resumed",
        operator,
        was,
        f", reason: {reason}" if reason else "",
    )
    return True


@transaction.atomic
def campaign_resume(*, operator: str, tiers: Sequence[SaleTier]) -> str | None:
    """Lift a pause: open or closed is re-derived from the confirmed tokens against the sale cap (by
    `stats_recompute`, the one place that derives it), never set bluntly. Returns the new status, or
    None when the campaign was not paused."""
    stats = stats_lock()
    if stats.status != CampaignStatus.PAUSED:
        return None
    stats.status = CampaignStatus.OPEN  # not the answer: stats_recompute derives it below
    stats.paused_reason, stats.paused_by, stats.paused_at = "", "", None
    stats.save(update_fields=["paused_reason", "paused_by", "paused_at"])
    stats_recompute(stats=stats, tiers=tiers)
    webhook_campaign_status(stats, "resumed")
    logger.warning("campaign resumed by %s: now %s (%d tokens confirmed)", operator, stats.status, stats.tokens)
    return stats.status
