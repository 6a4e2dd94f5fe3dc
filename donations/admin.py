"""The operators' view of the money: donations, the campaign (with Pause and Resume), donor totals.

Nothing here edits an amount or deletes a row: the records are written by the crawlers only. The
campaign's two actions call the services (`campaign_pause`, `campaign_resume`) and are logged with the
operator's name, in the log and in the admin's history.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from donations.models import Donation, DonationStats, UserData
from donations.repair import totals_repair
from donations.rules import sale_state, tokens_beyond_cap
from donations.services import campaign_pause, campaign_resume
from dws_project.admin_base import ReadOnlyAdmin

logger = logging.getLogger("dws.admin")

SHOWN = 5  # repair lines kept in the admin's history entry (all of them are in the log line)


@admin.register(Donation)
class DonationAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "chain",
        "tx_hash",
        "log_index",
        "trace_address",
        "address",
        "asset",
        "amount",
        "usd_amount",
        "tokens",
        "status",
        "block_number",
        "block_time",
        "absent_count",
        "next_look_at",
        "held_at",
        "failed_reason",
    )
    list_filter = ("status", "chain", "asset", ("block_time", admin.DateFieldListFilter))
    search_fields = ("=tx_hash", "=address")
    date_hierarchy = "block_time"
    ordering = ("-block_time", "-id")
    readonly_fields = [f.name for f in Donation._meta.fields]

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Donation], search_term: str
    ) -> tuple[QuerySet[Donation], bool]:
        # hashes and addresses are stored lower case; an operator pastes them checksummed
        return super().get_search_results(request, queryset, search_term.strip().lower())


@admin.register(DonationStats)
class CampaignAdmin(ReadOnlyAdmin):
    list_display = (
        "status",
        "total",
        "tokens",
        "tier",
        "sale_cap",
        "beyond_cap",
        "paused_by",
        "paused_reason",
        "modified_at",
    )
    readonly_fields = (
        "status",
        "total",
        "tokens",
        "paused_reason",
        "paused_by",
        "paused_at",
        "created_at",
        "modified_at",
    )
    actions = ["pause", "resume", "repair_totals"]

    @admin.display(description="tier (from the confirmed tokens)")
    def tier(self, obj: DonationStats) -> str:
        state = sale_state(obj.tokens, settings.CONFIG.sale_tiers)
        return "sold out" if state.closed else f"{state.tier_number} at {state.token_price} USD"

    @admin.display(description="sale cap (tokens)")
    def sale_cap(self, obj: DonationStats) -> int:
        return settings.CONFIG.sale_cap

    @admin.display(description="tokens beyond the cap")
    def beyond_cap(self, obj: DonationStats) -> int:
        # Whole donations are credited: the one that crosses the cap overshoots it by up to its own tokens.
        return tokens_beyond_cap(obj.tokens, settings.CONFIG.sale_tiers)

    def has_pause_campaign_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("donations.pause_campaign")

    @admin.action(
        description="Pause: stop crediting donations (they are still recorded)", permissions=["pause_campaign"]
    )
    def pause(self, request: HttpRequest, queryset: QuerySet[DonationStats]) -> None:
        operator = request.user.get_username()
        if campaign_pause(operator=f"{operator} (admin)"):
            self._record(request, "paused the campaign")
            self.message_user(request, "Campaign paused: donations are recorded but not credited.", messages.WARNING)
        else:
            self.message_user(request, "The campaign was already paused.", messages.INFO)

    @admin.action(description="Resume: re-derive open/closed from the confirmed tokens", permissions=["pause_campaign"])
    def resume(self, request: HttpRequest, queryset: QuerySet[DonationStats]) -> None:
        operator = request.user.get_username()
        status = campaign_resume(operator=f"{operator} (admin)", tiers=settings.CONFIG.sale_tiers)
        if status is None:
            self.message_user(request, "The campaign was not paused.", messages.INFO)
            return
        self._record(request, f"resumed the campaign: now {status}")
        self.message_user(
            request,
            f"Campaign resumed: {status}. Donations held during the pause are credited by the old-unconfirmed "
            "crawler's next run (every 15 minutes).",
            messages.SUCCESS,
        )

    @admin.action(
        description="Repair totals: recompute the campaign and every donor's totals from the confirmed donations",
        permissions=["pause_campaign"],
    )
    def repair_totals(self, request: HttpRequest, queryset: QuerySet[DonationStats]) -> None:
        repair = totals_repair(operator=f"{request.user.get_username()} (admin)", tiers=settings.CONFIG.sale_tiers)
        lines = repair.lines()
        shown = "; ".join(lines[:SHOWN]) + (
            f"; and {len(lines) - SHOWN} more (see the log)" if len(lines) > SHOWN else ""
        )
        self._record(request, f"repaired the totals: {shown}")
        self.message_user(request, f"Totals repaired: {shown}", messages.SUCCESS)

    def _record(self, request: HttpRequest, what: str) -> None:
        logger.warning("admin: %s %s", request.user.get_username(), what)
        self.log_change(request, DonationStats.objects.get(), what)


@admin.register(UserData)
class UserDataAdmin(ReadOnlyAdmin):
    list_display = ("address", "total", "tokens", "staked", "reward", "status", "modified_at")
    list_filter = ("status",)
    search_fields = ("=address",)
    readonly_fields = [f.name for f in UserData._meta.fields]

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[UserData], search_term: str
    ) -> tuple[QuerySet[UserData], bool]:
        return super().get_search_results(request, queryset, search_term.strip().lower())


# The webhook endpoints and deliveries, the refund register and the unmatched payouts register themselves
# (donations/webhook_admin.py, donations/refund_admin.py).
from donations import refund_admin, webhook_admin  # noqa: E402, F401
