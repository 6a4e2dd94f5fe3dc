"""Admin: prices are read-only records with their audit trail; requests show their state."""

from __future__ import annotations

import json

from django.contrib import admin
from django.utils.html import format_html

from dws_project.admin_base import ReadOnlyAdmin
from prices.models import Price, PriceRequest


@admin.register(Price)
class PriceAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "asset", "price", "made_from", "cross_checked", "dropped")
    list_filter = ("asset", "single_venue")
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    fields = ("asset", "price", "created_at", "sources_audit")
    readonly_fields = fields

    @admin.display(description="made from")
    def made_from(self, obj: Price) -> str:
        return ", ".join(f"{u['venue']} {u['quote']}" for u in (obj.sources or {}).get("used", []))

    @admin.display(description="cross-checked")
    def cross_checked(self, obj: Price) -> str:
        # A historical minute only one venue answered for values no donation until a second agrees.
        if obj.single_venue:
            return "NO: single venue, waiting for a second"
        used = len((obj.sources or {}).get("used", []))
        return f"{used} venues" if used else "-"

    @admin.display(description="dropped")
    def dropped(self, obj: Price) -> str:
        return ", ".join(d["venue"] for d in (obj.sources or {}).get("dropped", []))

    @admin.display(description="sources (audit trail)")
    def sources_audit(self, obj: Price) -> str:
        return format_html("<pre>{}</pre>", json.dumps(obj.sources, indent=2, sort_keys=True))


@admin.register(PriceRequest)
class PriceRequestAdmin(ReadOnlyAdmin):
    list_display = ("requested_at", "asset", "status", "claimed_at", "attempts", "created_at", "modified_at")
    list_filter = ("status", "asset")
    ordering = ("-requested_at",)
    readonly_fields = ("asset", "requested_at", "status", "claimed_at", "attempts", "created_at", "modified_at")
