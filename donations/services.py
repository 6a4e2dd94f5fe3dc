"""The crediting writes: record a sighting, confirm, fail a revert, recompute the campaign and per-donor totals.

Every rule here exists once and is shared by the latest crawler, the finalized crawler and the
old-unconfirmed crawler (issue #4; its batch writes are in donations/judging.py). Confirmation and the
campaign totals change only under the donation_stats row lock, taken first and always in the same
order (campaign row, then donation rows, then user_data rows by address), so two writers can never
interleave a crediting decision.

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
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.utils import timezone

from donations.identity import find_at_identity, records_as_seen, sighting_match, transactions_rows
from donations.models import CampaignStatus, Donation, DonationStats, DonationStatus
from donations.refunds import refund_cancel_for_failed, refund_owe_donation
from donations.rules import donation_tokens, sale_state
from donations.sightings import Sighting
from donations.totals import Deltas, stats_recompute, stats_save
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


def _priced(sighting: Sighting, token_price: Decimal) -> Priced:
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


def _record_as_seen(donation: Donation, sighting: Sighting, priced: Priced) -> None:
    """A row recorded anew from a sighting of its identity that shows another transfer (donor, asset, amount)
    or another time: it takes the sighting's transfer, block, minute's ETH price and `priced` tokens."""
    donation.address = sighting.transfer.donor
    donation.asset = sighting.transfer.asset
    donation.amount = sighting.transfer.amount
    donation.save(update_fields=["address", "asset", "amount", "modified_at"])
    _move_to(donation, sighting, priced)


def _move_to(donation: Donation, sighting: Sighting, priced: Priced) -> None:
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
    state = sale_state(confirmed_tokens, tiers)
    # No savepoint of its own: whatever fails here fails the caller's whole block, which is retried.
    with transaction.atomic(savepoint=False):
        match = sighting_match(sighting.chain, sighting.transfer, rows)
        if match.move:
            # Re-orged into another block: recorded anew there (DESIGN, Crediting), at that block's minute's
            # ETH price and the tier of the confirmed total now, as a first sighting there would be.
            moved = match.row
            assert moved is not None  # sighting_match moves only a row it found
            _move_to(moved, sighting, _priced(sighting, state.token_price))
            webhook_donation_event(moved, "donation.moved")
            return moved, DonationOutcome.MOVED
        if match.row is not None:
            return match.row, DonationOutcome.UNCHANGED
        try:
            with transaction.atomic():
                row = _new_row(sighting, _priced(sighting, state.token_price))
                row.save(force_insert=True)
                webhook_donation_event(row, "donation.seen")
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


def donation_fail_reverted(*, donation: Donation) -> bool:
    """A finalized receipt reports the transaction reverted: no money moved. Caller holds the stats lock
    and subtracts a confirmed row's deltas (see `Deltas`)."""
    if donation.status == DonationStatus.FAILED:
        return False
    logger.warning(
        "donation %s (%s) reverted on chain per its finalized receipt; %s -> failed",
        donation.tx_hash,
        donation.asset,
        donation.status,
    )
    donation.status = DonationStatus.FAILED
    donation.failed_reason = "its finalized receipt reports a revert"
    donation.save(update_fields=["status", "failed_reason", "modified_at"])
    webhook_donation_event(donation, "donation.failed", reason="reverted", detail=donation.failed_reason)
    return True


def _revert(stats: DonationStats, donation: Donation, deltas: Deltas) -> bool:
    """Fail a reverted row; a confirmed one takes its USD and tokens back out of the totals."""
    was_confirmed = donation.status == DonationStatus.CONFIRMED
    if not donation_fail_reverted(donation=donation):
        return False
    refund_cancel_for_failed(donation)
    if was_confirmed:
        stats.total -= donation.usd_amount
        stats.tokens -= donation.tokens
        deltas.add(donation, -1)
    return True


@dataclass
class FinalizedBlockResult:
    confirmed: int = 0
    inserted: int = 0
    held_paused: int = 0
    failed: int = 0


@transaction.atomic
@webhook_endpoints_once()
def finalized_block_record(
    *, chain: str, sightings: Sequence[Sighting], reverted_tx_hashes: Sequence[str], tiers: Sequence[SaleTier]
) -> FinalizedBlockResult:
    """Everything the finalized crawler writes for one block of `chain`, under the campaign lock (one for
    every chain: the tiers and the cap are the campaign's), in one transaction.

    Each sighting is inserted (and priced) if the latest crawler missed it, recorded anew from this
    block if it had been failed, and then confirmed by the crediting rule; each native ETH transaction
    whose finalized receipt reports a revert fails its row (a confirmed one leaves the totals, so the
    sale may reopen). The campaign row and the touched donors' rows move by the deltas: the cost of a
    block does not grow with the donations on record.
    """
    result = FinalizedBlockResult()
    stats = stats_lock()
    before = sale_state(stats.tokens, tiers)
    deltas = Deltas()
    rows = block_rows(chain, sightings)
    for sighting in sightings:
        donation, outcome = donation_record_unconfirmed(
            sighting=sighting, tiers=tiers, confirmed_tokens=stats.tokens, rows=rows.get(sighting.transfer.tx_hash)
        )
        if outcome == DonationOutcome.INSERTED:
            result.inserted += 1
        if (
            donation.status == DonationStatus.UNCONFIRMED
            and donation.block_hash == sighting.transfer.block_hash
            and not records_as_seen(donation, sighting.transfer, sighting.block_time)
        ):
            # The latest crawler's row says otherwise than the finalized block (its provider alone told it):
            # what is confirmed is the transfer as the finalized block shows it, priced from that block.
            logger.warning(
                "donation %s as recorded from the latest block (%s %s from %s at %s) is not what finalized block "
                "%d shows (%s %s from %s at %s); recorded from the finalized block",
                donation.tx_hash,
                donation.amount,
                donation.asset,
                donation.address,
                donation.block_time.isoformat(),
                sighting.transfer.block_number,
                sighting.transfer.amount,
                sighting.transfer.asset,
                sighting.transfer.donor,
                sighting.block_time.isoformat(),
            )
            _record_as_seen(donation, sighting, _priced(sighting, sale_state(stats.tokens, tiers).token_price))
        if donation.status == DonationStatus.FAILED:
            # Positive evidence (the transfer in a finalized block) outweighs an earlier absence; the row
            # is recorded from this sighting (its block, that minute's price, the tier now), not its old one.
            logger.warning(
                "donation %s was failed but is in finalized block %d; recorded from it and confirmed",
                donation.tx_hash,
                sighting.transfer.block_number,
            )
            _move_to(donation, sighting, _priced(sighting, sale_state(stats.tokens, tiers).token_price))
            donation.status = DonationStatus.UNCONFIRMED  # confirmed below, or held by a pause as unconfirmed
            donation.failed_reason = ""
            donation.save(update_fields=["status", "failed_reason", "modified_at"])
        decision = donation_confirm(stats=stats, donation=donation, tiers=tiers)
        if decision == DonationOutcome.CONFIRMED:
            result.confirmed += 1
            deltas.add(donation, +1)
        elif decision == DonationOutcome.HELD_PAUSED:
            result.held_paused += 1
    for tx_hash in reverted_tx_hashes:
        for donation in Donation.objects.select_for_update().filter(
            chain=chain, tx_hash=tx_hash, log_index__isnull=True
        ):
            result.failed += _revert(stats, donation, deltas)
    if result.confirmed or result.failed:
        stats_save(stats=stats, tiers=tiers, before=before, chain=chain)
        deltas.apply()
    return result


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
