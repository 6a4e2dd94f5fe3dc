"""The refund register's writes (donations/refund_models.py): rows made by rule, an operator's two levers
(waive with a reason, add by hand with the transaction), and the payments the finalized crawler sees.

The rules, each called from the one place its event happens, inside that event's transaction:

* a donation confirmed at 0 tokens because the sale was closed: `donation_confirm` (donations/services.py),
  where the closed rule is applied, calls `refund_owe_donation`;
* an unexplained inflow an operator closes as "not a donation, refund" (crawlers/record/inflows.py);
* a stray coin, a well-known token the sale does not take, seen reaching the address in a finalized block
  (crawlers/record/blocks.py): `refund_owe_strays`.

Paid: `refund_payouts_record` takes the donation address's transfers out in a finalized block and marks paid
the owed row each one matches exactly (chain, recipient, token, amount; the oldest such row first). A transfer
that matches none is listed (`UnmatchedPayout`), never guessed onto a row. Every change to a row is logged
with who made it, and `refund.owed` / `refund.paid` go to the webhook outbox in the same transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from donations.models import Donation
from donations.refund_models import (
    AMOUNT_DIGITS,
    AMOUNT_PLACES,
    PayoutStatus,
    Refund,
    RefundReason,
    RefundStatus,
    UnmatchedPayout,
)
from donations.refund_values import Payout, StrayTransfer, Token, amount_text, asset_token, fits_decimals, units
from donations.webhook_models import WebhookEventType
from donations.webhooks import webhook_refund_event
from dws_project.chain_settings import UnknownChain
from dws_project.config_values import parse_address

logger = logging.getLogger("dws.refunds")

RULE = "dws (rule)"  # who made a change no operator made


class RefundRefused(Exception):
    """An operator's refund action cannot be taken; the message says why."""


def _owed(refund: Refund) -> Refund:
    refund.save(force_insert=True)
    webhook_refund_event(refund, WebhookEventType.REFUND_OWED)
    logger.warning(
        "refund owed: %s %s to %s on %s (%s; source %s), id %d",
        amount_text(refund.amount),
        refund.asset,
        refund.donor,
        refund.chain,
        refund.reason,
        refund.source_tx_hash or f"inflow {refund.inflow_id}",
        refund.pk,
    )
    return refund


def _token_of(chain: str, asset: str) -> Token:
    try:
        token = asset_token(settings.CONFIG.chain(chain), asset)
    except UnknownChain as exc:
        raise RefundRefused(str(exc)) from None
    if token is None:
        raise RefundRefused(f"{asset!r} is not ETH, a donation coin or a stray token of chain {chain}")
    return token


def _by_hand(chain: str, tx_hash: str, donor: str, asset: str) -> Refund | None:
    """An operator's row for the money `tx_hash` brought `donor` in `asset` that no rule has taken up yet (no
    donation, no Transfer log named on it): a rule finding it takes it up instead of owing the money twice."""
    return (
        Refund.objects.select_for_update()
        .filter(
            chain=chain,
            reason=RefundReason.BY_HAND,
            source_tx_hash=tx_hash,
            donor=donor,
            asset=asset,
            donation__isnull=True,
            inflow_id__isnull=True,
            source_log_index__isnull=True,
        )
        .order_by("id")
        .first()
    )


def _taken_up(row: Refund, what: str, amount: Decimal, **source: object) -> Refund:
    """A rule's refund that an operator had already added by hand: the row names its source now, and the
    money is owed once (a different amount is the operator's to settle: logged)."""
    for field, value in source.items():
        setattr(row, field, value)
    row.save(update_fields=[*source, "modified_at"])
    level = logging.WARNING if row.amount == amount else logging.ERROR
    logger.log(
        level,
        "%s: refund %d, added by hand by %s, already owes it (%s %s to %s on %s, %s); the rule would owe %s: not "
        "owed twice",
        what,
        row.pk,
        row.added_by,
        amount_text(row.amount),
        row.asset,
        row.donor,
        row.chain,
        row.status,
        amount_text(amount),
    )
    return row


def refund_owe_donation(donation: Donation) -> Refund | None:
    """The closed rule's refund: the donation was confirmed at 0 tokens because the sale was closed, so its
    amount (as recorded: ETH at the column's 8 decimals) is owed back to its donor. Called by
    `donation_confirm` inside the crediting transaction; once per donation (a row this rule waived when the
    donation failed is owed again when it is confirmed again: `_owed_again`)."""
    existing = Refund.objects.select_for_update().filter(donation=donation).first()
    if existing is not None:
        if existing.status == RefundStatus.WAIVED and existing.waived_by == RULE:
            _owed_again(existing, f"its donation was confirmed again (block {donation.block_number})")
        return None
    try:
        token = _token_of(donation.chain, donation.asset)
    except RefundRefused as exc:  # a chain or coin no longer configured: never a reason to stop crediting
        logger.error(
            "donation %s of %s was confirmed at 0 tokens (the sale was closed) but its refund is not recorded (%s): "
            'add it by hand (docs/operating.md, "refunds")',
            donation.tx_hash,
            donation.chain,
            exc,
        )
        return None
    by_hand = _by_hand(donation.chain, donation.tx_hash, donation.address, donation.asset)
    if by_hand is not None:
        _taken_up(by_hand, f"donation {donation.tx_hash} confirmed at 0 tokens", donation.amount, donation=donation)
        return None
    return _owed(
        Refund(
            chain=donation.chain,
            donor=donation.address,
            asset=donation.asset,
            contract=token.contract,
            decimals=token.decimals,
            amount=donation.amount,
            reason=RefundReason.SALE_CLOSED,
            donation=donation,
            source_tx_hash=donation.tx_hash,
            source_log_index=donation.log_index,
            source_block_number=donation.block_number,
        )
    )


def _owed_again(refund: Refund, why: str) -> None:
    """A row the rules waived, owed again: the waiver is kept in its note, the money is owed."""
    when = f"{refund.waived_at:%Y-%m-%d %H:%M:%S}Z" if refund.waived_at else "?"
    waived = f"waived by {refund.waived_by} at {when} ({refund.waived_reason}); owed again: {why}"
    refund.note = f"{refund.note}\n{waived}".strip()
    refund.status, refund.waived_by, refund.waived_reason, refund.waived_at = RefundStatus.OWED, "", "", None
    refund.save(update_fields=["status", "note", "waived_by", "waived_reason", "waived_at", "modified_at"])
    logger.warning(
        "refund %d (%s %s to %s on %s) owed again: %s",
        refund.pk,
        amount_text(refund.amount),
        refund.asset,
        refund.donor,
        refund.chain,
        waived,
    )


def refund_cancel_for_failed(donation: Donation) -> None:
    """A confirmed donation failed (its finalized receipt reports a revert): no money arrived, so an owed
    refund for it is waived by rule. One already paid paid money that never came: an ERROR for the operator."""
    refund = Refund.objects.select_for_update().filter(donation=donation).first()
    if refund is None:
        return
    if refund.status == RefundStatus.OWED:
        _waive(refund, reason="its donation's transaction reverted: no money arrived", operator=RULE)
    elif refund.status == RefundStatus.PAID:
        logger.error(
            "refund %d was paid (tx %s) for donation %s, which has now failed: the money paid back never arrived",
            refund.pk,
            refund.paid_tx_hash,
            donation.tx_hash,
        )


def refund_owe_inflow(
    *,
    inflow_id: int,
    chain: str,
    asset: str,
    amount: Decimal,
    donor: str,
    tx_hash: str,
    block_number: int,
    operator: str,
) -> Refund:
    """An unexplained inflow closed as "not a donation, refund": its amount is owed to `donor` (the operator
    names who sent it). Called inside the inflow's closing transaction."""
    token = _token_of(chain, asset)
    if amount <= 0:
        raise RefundRefused("only value that arrived can be refunded (this inflow is not positive)")
    donor, tx_hash = _address(donor), _tx_hash(tx_hash) if tx_hash.strip() else ""
    by_hand = _by_hand(chain, tx_hash, donor, asset) if tx_hash else None
    if by_hand is not None:
        return _taken_up(
            by_hand, f"unexplained inflow {inflow_id} closed as not a donation, refund", amount, inflow_id=inflow_id
        )
    return _owed(
        Refund(
            chain=chain,
            donor=donor,
            asset=asset,
            contract=token.contract,
            decimals=token.decimals,
            amount=amount,
            reason=RefundReason.NOT_A_DONATION,
            inflow_id=inflow_id,
            source_tx_hash=tx_hash,
            source_block_number=block_number,
            note=f"closed as not a donation, refund, by {operator}",
            added_by=operator,
        )
    )


def refund_owe_strays(*, chain: str, strays: Iterable[StrayTransfer]) -> list[Refund]:
    """Stray coins seen in a finalized block, each owed back to its sender once (a block crawled again finds
    its rows and makes none). Called inside the finalized crawler's transaction for the block."""
    strays = list(strays)
    if not strays:
        return []
    known = set(
        Refund.objects.filter(
            chain=chain, source_tx_hash__in={s.tx_hash for s in strays}, source_log_index__isnull=False
        ).values_list("source_tx_hash", "source_log_index")
    )
    made = []
    for stray in strays:
        if (stray.tx_hash, stray.log_index) in known or stray.raw <= 0:
            continue
        if not _fits(units(stray.raw, stray.token.decimals)):
            logger.error(
                "stray transfer %s log %d of %s: %d raw units of %s is more than the refund register holds; not "
                "recorded (a token that misreports its amounts?)",
                stray.tx_hash,
                stray.log_index,
                chain,
                stray.raw,
                stray.token.asset,
            )
            continue
        by_hand = _by_hand(chain, stray.tx_hash, stray.sender, stray.token.asset)
        if by_hand is not None:
            where = {"source_log_index": stray.log_index, "source_block_number": stray.block_number}
            _taken_up(
                by_hand,
                f"stray transfer {stray.tx_hash} log {stray.log_index}",
                units(stray.raw, stray.token.decimals),
                **where,
            )
            continue
        made.append(
            _owed(
                Refund(
                    chain=chain,
                    donor=stray.sender,
                    asset=stray.token.asset,
                    contract=stray.token.contract,
                    decimals=stray.token.decimals,
                    amount=units(stray.raw, stray.token.decimals),
                    reason=RefundReason.STRAY_COIN,
                    source_tx_hash=stray.tx_hash,
                    source_log_index=stray.log_index,
                    source_block_number=stray.block_number,
                )
            )
        )
    return made


def _fits(amount: Decimal) -> bool:
    """Whether an amount fits the register's column (60 digits, 18 of them decimals)."""
    return amount < Decimal(10) ** (AMOUNT_DIGITS - AMOUNT_PLACES)


def _address(value: str) -> str:
    try:
        return parse_address(value)
    except ValueError as exc:
        raise RefundRefused(f"the address owed: {exc}") from None


def _tx_hash(value: str) -> str:
    value = value.strip().lower()
    if len(value) != 66 or not value.startswith("0x") or any(c not in "0123456789abcdef" for c in value[2:]):
        raise RefundRefused("a transaction hash is 0x followed by 64 hex digits")
    return value


@transaction.atomic
def refund_add_by_hand(
    *, chain: str, donor: str, asset: str, amount: Decimal, tx_hash: str, note: str, operator: str
) -> Refund:
    """An operator's row: `amount` of `asset` owed to `donor` on `chain` for the money transaction `tx_hash`
    brought, with the operator's words. Refused while an owed row for the same transaction, donor and asset
    exists (the rules may have made it already)."""
    if not note.strip():
        raise RefundRefused("say why (kept with the row)")
    if amount <= 0:
        raise RefundRefused("the amount must be positive")
    token = _token_of(chain, asset)
    if not fits_decimals(amount, token.decimals):
        raise RefundRefused(f"{asset} has {token.decimals} decimals: the amount has more")
    donor, tx_hash = _address(donor), _tx_hash(tx_hash)
    if Refund.objects.filter(chain=chain, source_tx_hash=tx_hash, donor=donor, asset=asset).exists():
        raise RefundRefused(f"transaction {tx_hash} already has a refund of {asset} to {donor} in the register")
    return _owed(
        Refund(
            chain=chain,
            donor=donor,
            asset=asset,
            contract=token.contract,
            decimals=token.decimals,
            amount=amount,
            reason=RefundReason.BY_HAND,
            source_tx_hash=tx_hash,
            note=note.strip(),
            added_by=operator,
        )
    )


@transaction.atomic
def refund_waive(*, refund_id: int, reason: str, operator: str) -> Refund:
    """An operator decides an owed refund is not paid (the donor agreed otherwise, dust, a duplicate)."""
    if not reason.strip():
        raise RefundRefused("a reason is required")
    refund = Refund.objects.select_for_update().get(pk=refund_id)
    if refund.status != RefundStatus.OWED:
        raise RefundRefused(f"refund {refund.pk} is {refund.status}, not owed")
    return _waive(refund, reason=reason.strip(), operator=operator)


def _waive(refund: Refund, *, reason: str, operator: str) -> Refund:
    refund.status = RefundStatus.WAIVED
    refund.waived_by, refund.waived_reason, refund.waived_at = operator, reason, timezone.now()
    refund.save(update_fields=["status", "waived_by", "waived_reason", "waived_at", "modified_at"])
    logger.warning(
        "refund %d (%s %s to %s on %s) waived by %s: %s",
        refund.pk,
        amount_text(refund.amount),
        refund.asset,
        refund.donor,
        refund.chain,
        operator,
        reason,
    )
    return refund


def refunds_mark_exported(*, refund_ids: Sequence[int]) -> list[int]:
    """Note that these rows went out in a batch for the treasury (the admin's exports); returns the ids of
    those that had gone out before (a batch still waiting for its signatures pays them too)."""
    rows = Refund.objects.filter(pk__in=refund_ids)
    before = sorted(rows.filter(exported_at__isnull=False).values_list("id", flat=True))
    rows.update(exported_at=timezone.now())
    return before


def refund_payouts_record(*, chain: str, payouts: Sequence[Payout]) -> tuple[int, int]:
    """The donation address's transfers out in a finalized block of `chain`: each pays the owed row with the
    same recipient, token and amount (one an operator exported first, then the oldest), or is listed as
    unmatched. Idempotent (a transfer already
    recorded either way is left alone). Called inside the finalized crawler's transaction for the block.
    Returns (rows paid, transfers unmatched)."""
    paid = unmatched = 0
    for payout in payouts:
        if not _fits(payout.amount):
            continue  # no refund is that large (the register's column): nothing it could pay
        identity = {"tx_hash": payout.tx_hash, "log_index": payout.log_index, "trace_address": payout.trace_address}
        if (
            Refund.objects.filter(
                chain=chain,
                status=RefundStatus.PAID,
                **{f"paid_{field}": value for field, value in identity.items()},
            ).exists()
            or UnmatchedPayout.objects.filter(chain=chain, **identity).exists()
        ):
            continue
        owed = (
            Refund.objects.select_for_update()
            .filter(
                chain=chain,
                status=RefundStatus.OWED,
                donor=payout.recipient,
                contract=payout.token.contract,
                amount=payout.amount,
            )
            .order_by(F("exported_at").asc(nulls_last=True), "created_at", "id")
            .first()
        )
        if owed is None:
            _unmatched(chain, payout)
            unmatched += 1
            continue
        owed.status = RefundStatus.PAID
        owed.paid_tx_hash, owed.paid_log_index = payout.tx_hash, payout.log_index
        owed.paid_trace_address, owed.paid_block_number = payout.trace_address, payout.block_number
        owed.paid_at = timezone.now()
        owed.save(
            update_fields=[
                "status",
                "paid_tx_hash",
                "paid_log_index",
                "paid_trace_address",
                "paid_block_number",
                "paid_at",
                "modified_at",
            ]
        )
        webhook_refund_event(owed, WebhookEventType.REFUND_PAID)
        logger.warning(
            "refund %d paid: %s %s to %s on %s by tx %s in block %d",
            owed.pk,
            amount_text(owed.amount),
            owed.asset,
            owed.donor,
            chain,
            payout.tx_hash,
            payout.block_number,
        )
        paid += 1
    return paid, unmatched


def _unmatched(chain: str, payout: Payout) -> None:
    UnmatchedPayout.objects.create(
        chain=chain,
        tx_hash=payout.tx_hash,
        log_index=payout.log_index,
        trace_address=payout.trace_address,
        block_number=payout.block_number,
        recipient=payout.recipient,
        asset=payout.token.asset,
        contract=payout.token.contract,
        amount=payout.amount,
    )
    logger.warning(
        "a transfer out of the donation address matches no owed refund: %s %s to %s on %s (tx %s, block %d); "
        'listed for the operator (see docs/operating.md, "refunds")',
        amount_text(payout.amount),
        payout.token.asset,
        payout.recipient,
        chain,
        payout.tx_hash,
        payout.block_number,
    )


@transaction.atomic
def unmatched_payout_dismiss(*, payout_id: int, note: str, operator: str) -> UnmatchedPayout:
    """The operator read an unmatched transfer out (a treasury sweep, a payment settled otherwise)."""
    if not note.strip():
        raise RefundRefused("a reason is required")
    payout = UnmatchedPayout.objects.select_for_update().get(pk=payout_id)
    if payout.status != PayoutStatus.OPEN:
        raise RefundRefused(f"this transfer is already {payout.status}")
    payout.status, payout.note, payout.operator = PayoutStatus.DISMISSED, note.strip(), operator
    payout.save(update_fields=["status", "note", "operator"])
    logger.warning(
        "unmatched transfer out %d (%s %s to %s, tx %s) dismissed by %s: %s",
        payout.pk,
        amount_text(payout.amount),
        payout.asset,
        payout.recipient,
        payout.tx_hash,
        operator,
        payout.note,
    )
    return payout
