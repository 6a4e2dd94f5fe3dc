"""Prices (ETH per minute from the exchanges; the sale token per tier) and historical price requests."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.db.models.functions import Now

from dws_project.fields import PostgresEnumField
from dws_project.touch import TouchingManager

ETH = "eth"
# The sale token's price rows are written by the finalized crawler whenever the tier changes.
TOKEN = "dws"  # noqa: S105 - an asset name, not a secret
PRICE_ASSETS = (ETH, TOKEN)


class PriceQuerySet(models.QuerySet):
    def corroborated(self) -> PriceQuerySet:
        """The rows a donation may be valued with: every row but a minute only one venue has quoted."""
        return self.filter(single_venue=False)


class Price(models.Model):
    asset = models.CharField(max_length=8, choices=[(a, a) for a in PRICE_ASSETS])
    price = models.DecimalField(max_digits=20, decimal_places=8)
    created_at = models.DateTimeField(help_text="the minute the price is for (ETH) or when it took effect")
    sources = models.JSONField(
        default=dict, blank=True, help_text="audit trail: venues used and dropped, with their quotes and reasons"
    )
    # A past minute only one venue quoted (klines): on record, but it values no donation until a second
    # venue agrees within the gate; the same row is then completed (prices.services.price_record).
    single_venue = models.BooleanField(default=False, db_default=False)

    objects = PriceQuerySet.as_manager()

    class Meta:
        db_table = "price"
        constraints = [
            models.UniqueConstraint(fields=["asset", "created_at"], name="price_asset_created_at_key"),
            models.CheckConstraint(condition=Q(price__gt=0), name="price_positive"),
            models.CheckConstraint(condition=Q(asset__in=PRICE_ASSETS), name="price_asset_check"),
        ]

    def __str__(self) -> str:
        return f"{self.asset} {self.price} at {self.created_at:%Y-%m-%d %H:%M}"


class PriceRequestStatus(models.TextChoices):
    NEW = "new"
    FAILED = "failed"
    SUCCEEDED = "succeeded"


class PriceRequest(models.Model):
    """A minute for which the crawler found no ETH price; served from the exchanges' klines."""

    asset = models.CharField(max_length=8, default=ETH, db_default=ETH)
    requested_at = models.DateTimeField(help_text="the minute a price is needed for")
    status = PostgresEnumField(
        enum_name="price_req_status_enum",
        choices=PriceRequestStatus.choices,
        default=PriceRequestStatus.NEW,
        db_default=PriceRequestStatus.NEW,
    )
    attempts = models.IntegerField(default=0, db_default=0)
    # Set while a poller serves the request (beside the status, which keeps seed 000's three values): a
    # claimed request is in progress, not failed. A claim older than prices.requests.CLAIM_TTL belongs to
    # a poller that died and may be taken again.
    claimed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_default=Now())
    modified_at = models.DateTimeField(auto_now=True, db_default=Now())

    objects = TouchingManager()  # update() moves modified_at too

    class Meta:
        db_table = "price_req"
        constraints = [
            models.UniqueConstraint(fields=["asset", "requested_at"], name="price_req_asset_requested_at_key"),
        ]
        # The (status, modified_at) poll index keeps seed 000's name, which is longer than Django
        # allows in Meta.indexes; migration 0002 creates it.

    def __str__(self) -> str:
        return f"{self.asset} price for {self.requested_at:%Y-%m-%d %H:%M} ({self.status})"
