"""Read-only admin views of referrals: operators inspect them; the API is the only writer."""

from __future__ import annotations

from django.contrib import admin

from affiliates.models import AffiliateDonation, WalletConnection
from dws_project.admin_base import ReadOnlyAdmin


@admin.register(WalletConnection)
class WalletConnectionAdmin(ReadOnlyAdmin):
    list_display = ("address", "affiliate_code", "created_at")
    search_fields = ("address", "affiliate_code")


@admin.register(AffiliateDonation)
class AffiliateDonationAdmin(ReadOnlyAdmin):
    list_display = ("chain", "tx_hash", "affiliate_code", "signer", "status", "created_at")
    list_filter = ("status", "chain")
    search_fields = ("tx_hash", "affiliate_code", "signer")
