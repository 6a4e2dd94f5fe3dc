"""Donations, the campaign row and per-donor totals. Table names follow seed 000 so its SQL works."""

from __future__ import annotations

from decimal import Decimal

from django.db import models
from django.db.models import BinaryField, F, Func, Q, Value
from django.db.models.functions import Cast, Lower, Now

from donations.sightings import AMOUNT_DECIMALS, AMOUNT_DIGITS, USD_DECIMALS, USD_DIGITS, USD_TOTAL_DIGITS
from dws_project.chain_settings import FIRST_CHAIN
from dws_project.fields import PostgresEnumField
from dws_project.touch import TouchingManager

ASSETS = ("eth", "usdt", "usdc")


def trace_path_digest() -> Func:
    """SHA-256 of the trace path, which the identity's unique index keys: a path as deep as the EVM allows
    (1024 frames, "1023.17.…") is longer than what a btree index row can hold."""
    return Func(Cast("trace_address", output_field=BinaryField()), function="SHA256", output_field=BinaryField())


class DonationStatus(models.TextChoices):
    UNCONFIRMED = "unconfirmed"
    CONFIRMED = "confirmed"
    FAILED = "failed"


class CampaignStatus(models.TextChoices):
    OPEN = "open"
    CLOSED = "closed"
    PAUSED = "paused"


class StakeStatus(models.TextChoices):
    NONE = "none"
    STAKED = "staked"
    UNSTAKING = "unstaking"


class Donation(models.Model):
    # The chain it was sent on, as DWS_CHAINS names it; rows from before several chains are `eth`.
    chain = models.CharField(max_length=16, default=FIRST_CHAIN, db_default=FIRST_CHAIN)
    tx_hash = models.CharField(max_length=66)
    # bigint: some providers number synthetic logs near 2^32 (0xffffffe2), past a signed 32-bit column
    log_index = models.BigIntegerField(null=True, blank=True, help_text="NULL for a native ETH transfer")
    address = models.CharField(max_length=42, help_text="the donor, lower case")
    asset = models.CharField(max_length=8, choices=[(a, a) for a in ASSETS])
    amount = models.DecimalField(max_digits=AMOUNT_DIGITS, decimal_places=AMOUNT_DECIMALS)
    usd_amount = models.DecimalField(max_digits=USD_DIGITS, decimal_places=USD_DECIMALS)
    price = models.DecimalField(max_digits=12, decimal_places=5, help_text="token price applied, USD")
    # The ETH price the row was priced with (the block minute's `price` row), kept so the token count
    # can be re-derived and audited from the row alone; NULL for a coin and for rows older than it.
    eth_price = models.DecimalField(
        max_digits=20, decimal_places=8, null=True, blank=True, help_text="ETH price applied, USD (ETH only)"
    )
    tokens = models.BigIntegerField()
    status = PostgresEnumField(
        enum_name="donation_status_enum",
        choices=DonationStatus.choices,
        default=DonationStatus.UNCONFIRMED,
        db_default=DonationStatus.UNCONFIRMED,
    )
    block_number = models.BigIntegerField()
    block_hash = models.CharField(max_length=66)
    block_time = models.DateTimeField()
    # Internal ETH (crawlers/scan/traces.py): the call frame's path in its transaction's call tree, e.g. "0.1".
    # NULL for a top-level ETH transaction and for a coin Transfer. Text: any depth the EVM allows is stored.
    trace_address = models.TextField(null=True, blank=True)  # noqa: DJ001 - NULL: not an internal transfer
    absent_count = models.IntegerField(default=0, db_default=0)
    # When the old-unconfirmed crawler looks at this row again; NULL: as soon as it is old enough.
    next_look_at = models.DateTimeField(null=True, blank=True)
    # When a crediting path first found this row proven in a finalized block while the campaign was paused
    # (donation_confirm's HELD_PAUSED); NULL otherwise. The pause's backlog: the old-unconfirmed crawler
    # leaves it alone while paused and confirms it first once the campaign is not paused, however the pause
    # was lifted; reconcile calls it pending until then.
    held_at = models.DateTimeField(null=True, blank=True)
    # Why a failed row failed (the evidence, as the old-unconfirmed judge or the finalized crawler found it);
    # empty for any other status.
    failed_reason = models.TextField(blank=True, default="", db_default="")
    # When the crediting rule confirmed the row (donation_confirm); NULL until then. Rows confirmed before
    # the column existed carry their last change, which for a confirmed row is its confirmation.
    confirmed_at = models.DateTimeField(null=True, blank=True)
    # When the finalized crawler passed the row's block and found another block at its height (a re-org
    # replaced it) while the row was unconfirmed; NULL otherwise. The transaction may still be mined again
    # (the row stays unconfirmed for seed 000's 24 hours; a new sighting moves it and clears this), but
    # meanwhile the page says so and the row leaves the campaign's pending figures.
    block_replaced_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_default=Now())
    modified_at = models.DateTimeField(auto_now=True, db_default=Now())

    objects = TouchingManager()  # update() moves modified_at too

    class Meta:
        db_table = "donation"
        constraints = [
            # A donation's identity, on its chain: (tx_hash, NULL, NULL) top-level ETH, (tx_hash, NULL, path)
            # internal ETH, (tx_hash, log index, NULL) a coin Transfer. The index keeps the seed's name; it keys
            # the path's digest, the path itself is kept beside it. The chain is part of it: an unprotected
            # (pre-EIP-155) transaction has the same hash on every chain it is replayed on.
            models.UniqueConstraint(
                F("chain"),
                F("tx_hash"),
                F("log_index"),
                trace_path_digest(),
                nulls_distinct=False,
                name="donation_tx_hash_log_index_key",
            ),
            models.CheckConstraint(condition=Q(asset__in=ASSETS), name="donation_asset_check"),
            models.CheckConstraint(condition=Q(amount__gt=0), name="donation_amount_positive"),
            models.CheckConstraint(condition=Q(usd_amount__gte=0), name="donation_usd_amount_nonnegative"),
            models.CheckConstraint(condition=Q(tokens__gte=0), name="donation_tokens_nonnegative"),
            models.CheckConstraint(condition=Q(absent_count__gte=0), name="donation_absent_count_nonnegative"),
            models.CheckConstraint(condition=Q(address=Lower("address")), name="donation_address_lower"),
            models.CheckConstraint(
                condition=Q(trace_address__isnull=True) | Q(asset="eth", log_index__isnull=True),
                name="donation_trace_address_eth_only",
            ),
            models.CheckConstraint(condition=Q(chain__regex=r"^[a-z][a-z0-9]{0,15}$"), name="donation_chain_name"),
        ]
        indexes = [
            models.Index(fields=["status", "block_time"], name="donation_status_block_time_idx"),
            models.Index(fields=["address"], name="donation_address_idx"),
            models.Index(fields=["chain", "block_number"], name="donation_chain_block_idx"),
            models.Index(
                fields=["next_look_at", "block_time"],
                name="donation_unconfirmed_look_idx",
                condition=Q(status=DonationStatus.UNCONFIRMED),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.asset} {self.amount} from {self.address} ({self.status})"


class DonationStats(models.Model):
    """The campaign: exactly one row, created by a migration and locked by every crediting write."""

    total = models.DecimalField(
        max_digits=USD_TOTAL_DIGITS, decimal_places=USD_DECIMALS, default=Decimal("0"), db_default=Decimal("0")
    )
    tokens = models.BigIntegerField(default=0, db_default=0)
    status = PostgresEnumField(
        enum_name="donation_stats_status_enum",
        choices=CampaignStatus.choices,
        default=CampaignStatus.OPEN,
        db_default=CampaignStatus.OPEN,
    )
    created_at = models.DateTimeField(auto_now_add=True, db_default=Now())
    modified_at = models.DateTimeField(auto_now=True, db_default=Now())
    # Why the campaign is paused and by whom (an operator, or `reconcile` freezing on drift); empty
    # while it is not paused.
    paused_reason = models.TextField(blank=True, default="", db_default="")
    paused_by = models.CharField(max_length=200, blank=True, default="", db_default="")
    paused_at = models.DateTimeField(null=True, blank=True)

    objects = TouchingManager()  # update() moves modified_at too

    class Meta:
        db_table = "donation_stats"
        verbose_name = "campaign"
        verbose_name_plural = "campaign"
        # Pausing stops crediting: a lever of its own, not something every staff account with view
        # permission may pull.
        permissions = [("pause_campaign", "Can pause and resume the campaign")]
        constraints = [
            # A unique index on a constant admits exactly one row.
            models.UniqueConstraint(Value(True), name="donation_stats_single_row"),
            models.CheckConstraint(condition=Q(total__gte=0), name="donation_stats_total_nonnegative"),
            models.CheckConstraint(condition=Q(tokens__gte=0), name="donation_stats_tokens_nonnegative"),
        ]

    def __str__(self) -> str:
        return f"campaign {self.status}: {self.total} USD, {self.tokens} tokens"


class UserData(models.Model):
    """Per-donor totals, always equal to the sums of the address's confirmed donations."""

    address = models.CharField(max_length=42)
    total = models.DecimalField(
        max_digits=USD_TOTAL_DIGITS, decimal_places=USD_DECIMALS, default=Decimal("0"), db_default=Decimal("0")
    )
    tokens = models.BigIntegerField(default=0, db_default=0)
    staked = models.BigIntegerField(default=0, db_default=0)
    reward = models.BigIntegerField(default=0, db_default=0)
    status = PostgresEnumField(
        enum_name="user_data_status_enum",
        choices=StakeStatus.choices,
        default=StakeStatus.NONE,
        db_default=StakeStatus.NONE,
    )
    affiliate_code = models.CharField(max_length=16, null=True, blank=True)  # noqa: DJ001 - NULL: no code yet, unique when set
    unstake_requested_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_default=Now())
    modified_at = models.DateTimeField(auto_now=True, db_default=Now())

    objects = TouchingManager()  # update() moves modified_at too

    class Meta:
        db_table = "user_data"
        verbose_name_plural = "user data"
        constraints = [
            # Constraints rather than unique=True: no redundant LIKE-pattern indexes to maintain.
            models.UniqueConstraint(fields=["address"], name="user_data_address_key"),
            models.UniqueConstraint(fields=["affiliate_code"], name="user_data_affiliate_code_key"),
            models.CheckConstraint(condition=Q(total__gte=0), name="user_data_total_nonnegative"),
            models.CheckConstraint(condition=Q(tokens__gte=0), name="user_data_tokens_nonnegative"),
            models.CheckConstraint(condition=Q(staked__gte=0), name="user_data_staked_nonnegative"),
            models.CheckConstraint(condition=Q(address=Lower("address")), name="user_data_address_lower"),
        ]

    def __str__(self) -> str:
        return self.address


# Webhook models and the stored donation CSV's (donations/export.py) live in their own modules; imported
# here so the donations app owns their migrations.
from donations.export_models import ProofCsvChange, ProofCsvPart  # noqa: E402,F401

# The refund register and the webhook models live in their own modules; imported here so the donations app
# owns their migrations.
from donations.refund_models import Refund, UnmatchedPayout  # noqa: E402,F401
from donations.webhook_models import (  # noqa: E402,F401
    WebhookAttempt,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEvent,
)
