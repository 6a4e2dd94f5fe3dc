"""The crediting writes: record a sighting, confirm, fail a revert, recompute the campaign and per-donor totals.

Every rule here exists once and is shared by the latest crawler, the finalized crawler (its block write
is donations/finalized.py) and the old-unconfirmed crawler (issue #4; its batch writes are in
donations/judging.py). Confirmation and the campaign totals change only under the donation_stats row
lock, so two writers can never interleave a crediting decision. Lock order: a chain's donation rows
lock (dws_project/locks.py `chain_donations_lock`) first; then the finalized crawler locks its block's
rows and takes the campaign row last, the judge takes the campaign row and then its rows; the donors'
user_data rows (by address) always after the campaign row.

Token counts (docs/detection.md, "Crediting"): a donation is priced once, when it is first recorded, by
`rules.donation_tokens` at the tier of the confirmed total at that moment. Confirmation never re-prices:
it only applies the closed rule (0 tokens once the confirmed total has reached the cap). A confirmed
donation never changes.

The campaign row and the donors' totals move by the deltas of what is confirmed or reverted, under the
lock (donations/totals.py), so a block costs O(its donations) whatever is on record; `stats_recompute`
(the operator's repair) and `reconcile` sum everything from scratch as the independent check.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.utils import timezone

from donations.identity import find_at_identity, sighting_match, transactions_rows
from donations.models import CampaignStatus, Donation, DonationStats, DonationStatus
from donations.refunds import refund_owe_donation
from donations.rules import donation_tokens, sale_state
from donations.sightings import Sighting
from donations.totals import stats_recompute
from donations.webhooks import webhook_campaign_status, webhook_donation_event, webhook_endpoints_once
from dws_project.config_values import SaleTier

logger = logging.getLogger("dws.donations")


class DonationOutcome:
    """What recording or judging did to a donation row (the crawlers log and count these)."""

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


@dataclass(frozen=True)
class Priced:
    """What a sighting is recorded with: the prices applied and the tokens they give."""

    token_price: Decimal
    eth_price: Decimal | None
    usd_amount: Decimal
    tokens: int


def sighting_priced(sighting: Sighting, token_price: Decimal) -> Priced:
    t = sighting.transfer
    eth_price = sighting.eth_price if t.asset == "eth" else None
    return Priced(
        token_price=token_price,
        eth_price=eth_price,
        usd_amount=sighting.usd_amount,
        tokens=donation_tokens(asset=t.asset, amount=t.amount, eth_price=eth_price, token_price=token_price),
    )


def _new_row(sighting: Sighting, priced: Priced) -> Donation:
    t = sighting.transfer
    return Donation(
        chain=sighting.chain,
        tx_hash=t.tx_hash,
        log_index=t.log_index,
        trace_address=t.trace_address,
        address=t.donor,
        asset=t.asset,
        amount=t.amount,
        usd_amount=priced.usd_amount,
        price=priced.token_price,
        eth_price=priced.eth_price,
        tokens=priced.tokens,
        status=DonationStatus.UNCONFIRMED,
        block_number=t.block_number,
        block_hash=t.block_hash,
        block_time=sighting.block_time,
    )


def donation_record_as_seen(donation: Donation, sighting: Sighting, priced: Priced) -> None:
    """A row recorded anew from a sighting of its identity that shows another transfer (donor, asset, amount)
    or another time: it takes the sighting's transfer, block, minute's ETH price and `priced` tokens."""
    donation.address = sighting.transfer.donor
    donation.asset = sighting.transfer.asset
    donation.amount = sighting.transfer.amount
    donation.save(update_fields=["address", "asset", "amount", "modified_at"])
    donation_move_to(donation, sighting, priced)


def donation_move_to(donation: Donation, sighting: Sighting, priced: Priced) -> None:
    """A row recorded anew from another sighting of this very transfer (`sighting_match`): an unconfirmed
    row whose block was re-orged away, or a failed one found in a finalized block. It takes that block,
    its minute's ETH price and the `priced` tokens the caller derived for it."""
    donation.log_index = sighting.transfer.log_index
    donation.block_number = sighting.transfer.block_number
    donation.block_hash = sighting.transfer.block_hash
    donation.block_time = sighting.block_time
    donation.usd_amount = priced.usd_amount
    donation.price = priced.token_price
    donation.eth_price = priced.eth_price
    donation.tokens = priced.tokens
    donation.next_look_at = None
    donation.block_replaced_at = None  # seen again, in a block of the chain as it is now
    donation.save(
        update_fields=[
            "block_replaced_at",
            "log_index",
            "block_number",
            "block_hash",
            "block_time",
            "usd_amount",
            "price",
            "eth_price",
            "tokens",
            "next_look_at",
            "modified_at",
        ]
    )


def donation_record_unconfirmed(
    *,
    sighting: Sighting,
    tiers: Sequence[SaleTier],
    confirmed_tokens: int | None = None,
    rows: list[Donation] | None = None,
) -> tuple[Donation, str]:
    """Insert a sighting as unconfirmed (idempotent); the latest crawler's only write.

    This is where a donation is priced, once: at the tier of the confirmed total now (`confirmed_tokens`
    when the caller holds the stats lock, else the stored row). Tokens are never zeroed here: the closed
    rule is applied at confirmation, since the sale may reopen before then. A confirmed or failed row is
    left alone; an unconfirmed row from a block that is no longer canonical moves to where the transfer
    is seen now (log index included, see `donations/identity.py`), recorded anew there: that block's hash,
    time and minute's ETH price, at the tier of the confirmed total now; a re-org never makes a second row.
    `rows`: the transaction's rows, already locked by the caller (`block_rows`).
    """
    if confirmed_tokens is None:
        confirmed_tokens = DonationStats.objects.values_list("tokens", flat=True).get()
    token_price = sale_state(confirmed_tokens, tiers).token_price
    row, outcome = sighting_record(sighting=sighting, token_price=lambda: token_price, rows=rows)
    sighting_announce(row, outcome)
    return row, outcome


def sighting_announce(row: Donation, outcome: str) -> None:
    """The webhook event of what `sighting_record` did to a row (none when it left it as it was)."""
    if outcome == DonationOutcome.INSERTED:
        webhook_donation_event(row, "donation.seen")
    elif outcome == DonationOutcome.MOVED:
        webhook_donation_event(row, "donation.moved")


def sighting_record(
    *, sighting: Sighting, token_price: Callable[[], Decimal], rows: list[Donation] | None
) -> tuple[Donation, str]:
    """`donation_record_unconfirmed`'s write, priced at `token_price()` (asked only when the row is priced),
    without its webhook event: the finalized crawler's write prices it again at the tier of the confirmed
    total under the campaign lock (donations/finalized.py) and announces it after that."""
    # No savepoint of its own: whatever fails here fails the caller's whole block, which is retried.
    with transaction.atomic(savepoint=False):
        match = sighting_match(sighting.chain, sighting.transfer, rows)
        if match.move:
            # Re-orged into another block: recorded anew there (DESIGN, Crediting), at that block's minute's
            # ETH price and the tier of the confirmed total now, as a first sighting there would be.
            moved = match.row
            assert moved is not None  # sighting_match moves only a row it found
            donation_move_to(moved, sighting, sighting_priced(sighting, token_price()))
            return moved, DonationOutcome.MOVED
        if match.row is not None:
            return match.row, DonationOutcome.UNCHANGED
        try:
            with transaction.atomic():
                row = _new_row(sighting, sighting_priced(sighting, token_price()))
                row.save(force_insert=True)
                return row, DonationOutcome.INSERTED
        except IntegrityError:  # another writer inserted it first: theirs stands
            theirs = find_at_identity(sighting.chain, sighting.transfer, lock=True)
            assert theirs is not None, "an insert refused at a donation's identity, and no row holds it"
            return theirs, DonationOutcome.UNCHANGED


def block_rows(chain: str, sightings: Sequence[Sighting]) -> dict[str, list[Donation]]:
    """A block's rows, locked in one statement, for the transactions with one sighting in it. A
    transaction with several (a batch transfer) is read afresh for each: recording one may move
    another's row."""
    if any(s.chain != chain for s in sightings):
        raise ValueError(f"a block of {chain} holds a sighting of another chain")
    counts = Counter(s.transfer.tx_hash for s in sightings)
    return transactions_rows(chain, (tx for tx, n in counts.items() if n == 1))


def block_record_unconfirmed(
    *, chain: str, sightings: Sequence[Sighting], tiers: Sequence[SaleTier]
) -> list[tuple[Donation, str]]:
    """The latest crawler's write for one block of `chain`: each sighting as `donation_record_unconfirmed`
    records it, with the confirmed total (across every chain) and the block's rows read once for the block,
    not per donation."""
    if not sightings:
        return []
    with transaction.atomic(), webhook_endpoints_once():
        confirmed_tokens = DonationStats.objects.values_list("tokens", flat=True).get()
        rows = block_rows(chain, sightings)
        return [
            donation_record_unconfirmed(
                sighting=s, tiers=tiers, confirmed_tokens=confirmed_tokens, rows=rows.get(s.transfer.tx_hash)
            )
            for s in sightings
        ]


def donation_confirm(*, stats: DonationStats, donation: Donation, tiers: Sequence[SaleTier]) -> str:
    """Apply the crediting rule to one unconfirmed donation, exactly once. Caller holds `stats_lock()`.

    The row keeps the price and tokens it was recorded with; the only rule applied here is the closed
    one: once the confirmed total (`stats.tokens`, advanced here so several confirmations under one
    lock see each other) has reached the cap, the donation is confirmed with 0 tokens. Paused: the row
    stays unconfirmed. Already confirmed: untouched, whatever the sale does now. The campaign row is
    moved by the donation's delta; the caller saves it and applies the donors' deltas.
    """
    if donation.status == DonationStatus.CONFIRMED:
        return DonationOutcome.ALREADY_CONFIRMED
    if donation.status == DonationStatus.FAILED:
        # A failed row is recorded anew from the sighting that proves it (finalized_block_record) first.
        raise ValueError(f"donation {donation.id} is failed; record it from its finalized sighting first")
    if stats.status == CampaignStatus.PAUSED:
        if donation.held_at is None:
            # the pause's backlog: due as soon as crediting resumes, whatever back-off it had (next_look_at)
            donation.held_at, donation.next_look_at = timezone.now(), None
            donation.save(update_fields=["held_at", "next_look_at", "modified_at"])
        return DonationOutcome.HELD_PAUSED
    update = ["status", "held_at", "modified_at"]
    donation.held_at = None
    closed = sale_state(stats.tokens, tiers).closed
    if closed and donation.tokens:
        logger.info(
            "donation %s confirmed with 0 tokens (was %d): the sale cap is reached", donation.tx_hash, donation.tokens
        )
        donation.tokens = 0
        update.append("tokens")
    donation.status = DonationStatus.CONFIRMED
    donation.confirmed_at = timezone.now()
    donation.save(update_fields=[*update, "confirmed_at"])
    stats.tokens += donation.tokens
    stats.total += donation.usd_amount
    webhook_donation_event(donation, "donation.confirmed")
    if closed:  # the money arrived and buys nothing: owed back (the refund register), in this transaction
        refund_owe_donation(donation)
    return DonationOutcome.CONFIRMED


# --- the operator's lever: pause and resume -------------------------------------------------------


@transaction.atomic
def campaign_pause(*, operator: str, reason: str = "", chain: str | None = None) -> bool:
    """Halt crediting on every chain (the crawlers keep recording); False when it was paused already (the
    first pause's reason is kept). `chain`: the chain whose drift paused it, when one did."""
    stats = stats_lock()
    if stats.status == CampaignStatus.PAUSED:
        return False
    was = stats.status
    stats.status = CampaignStatus.PAUSED
    stats.paused_reason, stats.paused_by, stats.paused_at = reason, operator[:200], timezone.now()
    stats.save(update_fields=["status", "paused_reason", "paused_by", "paused_at", "modified_at"])
    webhook_campaign_status(stats, "paused", chain=chain)
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
    `stats_save`, the one place that derives it, through `stats_recompute`), never set bluntly.
    Returns the new status, or None when the campaign was not paused."""
    stats = stats_lock()
    if stats.status != CampaignStatus.PAUSED:
        return None
    stats.status = CampaignStatus.OPEN  # not the answer: stats_recompute derives it below
    stats.paused_reason, stats.paused_by, stats.paused_at = "", "", None
    stats.save(update_fields=["paused_reason", "paused_by", "paused_at"])
    # A rare operator action, and the usual end of a freeze on drift: the campaign totals are re-summed
    # from the confirmed donations here (a full scan), unlike on the crawlers' per-block path.
    stats_recompute(stats=stats, tiers=tiers)
    # The pause's backlog needs nothing here: its rows are marked `held_at` (donation_confirm), and the
    # old-unconfirmed crawler takes them first once the campaign is not paused, so the README's SQL
    # resume has the same effect on them as this one.
    webhook_campaign_status(stats, "resumed")
    logger.warning("campaign resumed by %s: now %s (%d tokens confirmed)", operator, stats.status, stats.tokens)
    return stats.status
