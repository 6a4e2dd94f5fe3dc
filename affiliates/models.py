"""Wallet connections: which referrer's affiliate code a wallet arrived with."""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Now
from django.utils import timezone

from dws_project.chain_settings import FIRST_CHAIN
from dws_project.fields import PostgresEnumField
from dws_project.touch import TouchingManager


class WalletConnection(models.Model):
    """The referrer's code an address arrived with: one row per address, the latest code replacing the
    one before (a free key can sign for itself, so rows per key must not grow with its requests)."""

    address = models.CharField(max_length=42)
    affiliate_code = models.CharField(max_length=16)
    created_at = models.DateTimeField(auto_now_add=True, db_default=Now())

    class Meta:
        db_table = "wallet_connection"
        constraints = [models.UniqueConstraint(fields=["address"], name="wallet_connection_address_key")]

    def __str__(self) -> str:
        return f"{self.address} via {self.affiliate_code}"


class AttributionStatus(models.TextChoices):
    PENDING = "pending"  # the donation is not recorded or not confirmed yet; looked at again later
    ATTRIBUTED = "attributed"  # the signer's donation is confirmed: it counts for the code
    REJECTED = "rejected"  # the recorded donor is someone else: the claim is void
    EXPIRED = "expired"  # no confirmed donation of the signer within the claim lifetime (affiliates.rules)


class AffiliateDonation(models.Model):
    """A claim that a donation transaction was referred by an affiliate code, made by its signer.

    Unique per (chain, tx_hash, signer) rather than per transaction: a stranger who saw the transaction in the
    mempool could otherwise claim it first and lock its real donor out. At most one claim per
    transaction can become `attributed` (the donor's), which a partial unique index enforces.
    """

    # The donation's chain, as DWS_CHAINS names it (the first chain when the claim does not say).
    chain = models.CharField(max_length=16, default=FIRST_CHAIN, db_default=FIRST_CHAIN)
    tx_hash = models.CharField(max_length=66)
    affiliate_code = models.CharField(max_length=16)
    signer = models.CharField(max_length=42, help_text="the address that signed the claim, lower case")
    status = PostgresEnumField(
        enum_name="affiliate_donation_status_enum",
        choices=AttributionStatus.choices,
        default=AttributionStatus.PENDING,
        db_default=AttributionStatus.PENDING,
    )
    created_at = models.DateTimeField(auto_now_add=True, db_default=Now())
    modified_at = models.DateTimeField(auto_now=True, db_default=Now())
    # The resolver walks pending claims by this time, so claims that never settle cannot hold the queue.
    next_check_at = models.DateTimeField(default=timezone.now, db_default=Now())
    checks = models.PositiveIntegerField(default=0, db_default=0)

    objects = TouchingManager()  # update() moves modified_at too

    class Meta:
        db_table = "affiliate_donation"
        constraints = [
            models.UniqueConstraint(
                fields=["chain", "tx_hash", "signer"], name="affiliate_donation_chain_tx_signer_key"
            ),
            models.UniqueConstraint(
                fields=["chain", "tx_hash"],
                condition=models.Q(status="attributed"),
                name="affiliate_donation_one_attribution",
            ),
        ]
        indexes = [
            models.Index(fields=["status", "created_at"], name="affiliate_donation_status_idx"),
            models.Index(fields=["status", "next_check_at"], name="affiliate_donation_due_idx"),
            models.Index(fields=["signer", "status"], name="affiliate_donation_signer_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.tx_hash} via {self.affiliate_code} ({self.status})"


class UsedSignature(models.Model):
    """A signed delphi message already accepted: kept until no clock could accept it again.

    In PostgreSQL rather than Redis, so a Redis flush or restart (or an eviction) cannot reopen the
    window in which the same signed request would be accepted twice. The primary key is the SHA-256 of
    the message: the insert that takes it is the check, and its unique violation is the refusal.
    """

    message_hash = models.CharField(max_length=64, primary_key=True)
    expires_at = models.DateTimeField(db_index=True, help_text="after this the message is too old anyway")

    class Meta:
        db_table = "used_signature"

    def __str__(self) -> str:
        return f"{self.message_hash[:16]}… until {self.expires_at:%Y-%m-%d %H:%M:%S}"
