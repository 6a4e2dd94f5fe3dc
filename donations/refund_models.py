"""The refund register (DESIGN "Data": `refund`): money the sale owes back, and how it was paid.

A row is made by rule (donations/refunds.py): a donation confirmed at 0 tokens because the sale was closed,
an unexplained inflow an operator closed as "not a donation, refund", a stray coin (a token the sale does not
take, from the well-known list DWS_STRAY_TOKENS); or by an operator's hand, with the transaction it refunds.
It starts `owed` and ends `paid` (the finalized crawler saw the donation address's own transfer that pays
it: chain, recipient, token and amount equal) or `waived` (an operator, with a reason). Rows are never
deleted. Imported by donations/models.py so the app's migrations see them.

`UnmatchedPayout`: a transfer out of the donation address that matched no owed row, listed for the operator
(never guessed onto a row).
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower, Now

from donations.refund_values import amount_text, base_units
from dws_project.touch import TouchingManager

# Amounts in the asset's own units, exact: 18 decimals hold wei and every token's base unit, 60 digits a uint256.
AMOUNT_DIGITS, AMOUNT_PLACES = 60, 18


# What every operator lever that makes the treasury owe, waive or pay needs (the admin's "Can change refund").
CHANGE_REFUND = "donations.change_refund"


class RefundStatus(models.TextChoices):
    OWED = "owed"
    PAID = "paid"
    WAIVED = "waived"


class RefundReason(models.TextChoices):
    SALE_CLOSED = "sale-closed", "donation confirmed at 0 tokens: the sale was closed"
    NOT_A_DONATION = "not-a-donation", "unexplained inflow closed as not a donation, refund"
    STRAY_COIN = "stray-coin", "a token the sale does not take"
    BY_HAND = "by-hand", "added by an operator"


class Refund(models.Model):
    chain = models.CharField(max_length=16)
    donor = models.CharField(max_length=42, help_text="the address owed, lower case")
    asset = models.CharField(max_length=16, help_text='"eth", a configured coin, or a stray token\'s name')
    contract = models.CharField(
        max_length=42, blank=True, default="", help_text="the token's contract, lower case; empty for ETH"
    )
    decimals = models.SmallIntegerField(help_text="the token's decimals (18 for ETH)")
    amount = models.DecimalField(
        max_digits=AMOUNT_DIGITS, decimal_places=AMOUNT_PLACES, help_text="in the asset's own units"
    )
    reason = models.CharField(max_length=16, choices=RefundReason.choices)
    # What the refund comes from: the donation (sale closed), the unexplained inflow (its id in the crawlers'
    # table, which this app cannot name), or the transaction (and log) of the stray transfer or, by hand, the
    # transaction the operator named.
    donation = models.OneToOneField(
        "donations.Donation", on_delete=models.PROTECT, null=True, blank=True, related_name="refund"
    )
    inflow_id = models.BigIntegerField(null=True, blank=True, help_text="the unexplained inflow it refunds")
    source_tx_hash = models.CharField(
        max_length=66, blank=True, default="", help_text="the transaction that brought the money (if known)"
    )
    source_log_index = models.BigIntegerField(null=True, blank=True, help_text="its Transfer log, for a coin")
    source_block_number = models.BigIntegerField(null=True, blank=True)
    note = models.TextField(blank=True, default="", help_text="the operator's words, for a row added by hand")
    status = models.CharField(max_length=8, choices=RefundStatus.choices, default=RefundStatus.OWED)
    # The paying transfer, once the finalized crawler saw it: its transaction and its position there (a Transfer
    # log's index for a token; for ETH the call frame's path when a contract (a Safe) paid it, empty for a
    # transaction of the address's own).
    paid_tx_hash = models.CharField(max_length=66, blank=True, default="")
    paid_log_index = models.BigIntegerField(null=True, blank=True)
    paid_trace_address = models.TextField(blank=True, default="")
    paid_block_number = models.BigIntegerField(null=True, blank=True)
    paid_at = models.DateTimeField(null=True, blank=True, help_text="when the crawler recorded the payment")
    # When an operator last exported it in a batch for the treasury: a payment matching several owed rows pays
    # the one exported (the operator's intent), not merely the oldest.
    exported_at = models.DateTimeField(null=True, blank=True)
    added_by = models.CharField(max_length=150, blank=True, default="", help_text="the operator who added it")
    waived_by = models.CharField(max_length=150, blank=True, default="")
    waived_reason = models.TextField(blank=True, default="")
    waived_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_default=Now())
    modified_at = models.DateTimeField(auto_now=True, db_default=Now())

    objects = TouchingManager()  # update() moves modified_at too

    class Meta:
        db_table = "refund"
        constraints = [
            models.CheckConstraint(condition=Q(amount__gt=0), name="refund_amount_positive"),
            models.CheckConstraint(condition=Q(donor=Lower("donor")), name="refund_donor_lower"),
            models.CheckConstraint(condition=Q(status__in=[s.value for s in RefundStatus]), name="refund_status_known"),
            models.CheckConstraint(condition=Q(reason__in=[r.value for r in RefundReason]), name="refund_reason_known"),
            # A paid row names its payment; no other does.
            models.CheckConstraint(
                condition=(Q(status=RefundStatus.PAID) & ~Q(paid_tx_hash="") & Q(paid_block_number__isnull=False))
                | (~Q(status=RefundStatus.PAID) & Q(paid_tx_hash="")),
                name="refund_paid_names_its_payment",
            ),
            models.CheckConstraint(
                condition=~Q(status=RefundStatus.WAIVED) | (~Q(waived_by="") & ~Q(waived_reason="")),
                name="refund_waived_says_who_and_why",
            ),
            models.CheckConstraint(
                condition=~Q(reason=RefundReason.BY_HAND) | ~Q(added_by=""), name="refund_by_hand_says_who"
            ),
            # One refund per inflow and per stray Transfer: a block crawled again records nothing twice.
            models.UniqueConstraint(fields=["inflow_id"], name="refund_inflow_key"),
            models.UniqueConstraint(
                fields=["chain", "source_tx_hash", "source_log_index"],
                condition=Q(reason=RefundReason.STRAY_COIN),
                name="refund_stray_transfer_key",
            ),
            # A payment pays one row.
            models.UniqueConstraint(
                fields=["chain", "paid_tx_hash", "paid_log_index", "paid_trace_address"],
                condition=Q(status=RefundStatus.PAID),
                nulls_distinct=False,
                name="refund_payment_key",
            ),
        ]
        indexes = [
            models.Index(fields=["status", "chain", "donor"], name="refund_status_chain_donor_idx"),
            models.Index(fields=["donor"], name="refund_donor_idx"),
            models.Index(fields=["chain", "paid_block_number"], name="refund_paid_block_idx"),
        ]

    def __str__(self) -> str:
        return f"{amount_text(self.amount)} {self.asset} owed to {self.donor} on {self.chain} ({self.status})"

    @property
    def amount_raw(self) -> int:
        """The amount in the token's base units (wei for ETH): what the paying transfer must move."""
        return base_units(self.amount, self.decimals)


class PayoutStatus(models.TextChoices):
    OPEN = "open"
    DISMISSED = "dismissed"


class UnmatchedPayout(models.Model):
    """A transfer out of the donation address, in a finalized block, that matched no owed refund: the register
    never guesses which row a payment was meant for; the operator reads it here (and dismisses it, with a
    reason: a treasury sweep, a wrong amount settled otherwise)."""

    chain = models.CharField(max_length=16)
    tx_hash = models.CharField(max_length=66)
    log_index = models.BigIntegerField(null=True, blank=True)
    trace_address = models.TextField(blank=True, default="")
    block_number = models.BigIntegerField()
    recipient = models.CharField(max_length=42)
    asset = models.CharField(max_length=16)
    contract = models.CharField(max_length=42, blank=True, default="")
    amount = models.DecimalField(max_digits=AMOUNT_DIGITS, decimal_places=AMOUNT_PLACES)
    status = models.CharField(max_length=16, choices=PayoutStatus.choices, default=PayoutStatus.OPEN)
    note = models.TextField(blank=True, default="")
    operator = models.CharField(max_length=150, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True, db_default=Now())

    class Meta:
        db_table = "refund_unmatched_payout"
        constraints = [
            models.UniqueConstraint(
                fields=["chain", "tx_hash", "log_index", "trace_address"],
                nulls_distinct=False,
                name="refund_unmatched_payout_key",
            ),
        ]
        indexes = [models.Index(fields=["status", "chain"], name="refund_unmatched_status_idx")]

    def __str__(self) -> str:
        return f"{amount_text(self.amount)} {self.asset} to {self.recipient} in {self.tx_hash} ({self.status})"
