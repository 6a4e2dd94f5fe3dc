"""Read-only admin views of referrals: operators inspect them; the API is the only writer."""

from __future__ import annotations

from django.contrib import admin

from affiliates.models import AffiliateDonation, WalletConnection


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(WalletConnection)
class WalletConnectionAdmin(ReadOnlyAdmin):
    list_display = ("address", "affiliate_code", "created_at")
    search_fields = ("address", "affiliate_code")


@admin.register(AffiliateDonation)
class AffiliateDonationAdmin(ReadOnlyAdmin):
    list_display = ("tx_hash", "affiliate_code", "signer", "status", "created_at")
    list_filter = ("status",)
    search_fields = ("tx_hash", "affiliate_code", "signer")
