"""Wallet connections: which referrer's affiliate code a wallet arrived with."""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Now


class WalletConnection(models.Model):
    address = models.CharField(max_length=42)
    affiliate_code = models.CharField(max_length=16)
    created_at = models.DateTimeField(auto_now_add=True, db_default=Now())

    class Meta:
        db_table = "wallet_connection"
        indexes = [models.Index(fields=["address"], name="wallet_connection_address_idx")]

    def __str__(self) -> str:
        return f"{self.address} via {self.affiliate_code}"
