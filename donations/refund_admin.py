"""The refund register in the admin: who do we owe, and did we pay them.

The list filters by chain, asset, status and reason and totals what it shows per chain, asset and status.
Rows are made by rule; an operator's levers are explicit and logged with their name (in the log and the
admin's history): waive selected owed rows with a reason, add a row by hand with the transaction it refunds,
export selected owed rows as the batch the treasury signs (a Safe Transaction Builder file, one chain at a
time; or a CSV with EIP-681 links for an externally owned account). The crawler marks rows paid; a transfer
out of the address that matches none is listed under "unmatched payouts".
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from decimal import Decimal
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.core.exceptions import PermissionDenied
from django.db.models import Count, QuerySet, Sum
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html

from donations.refund_export import eoa_csv, safe_batch
from donations.refund_models import CHANGE_REFUND, PayoutStatus, Refund, RefundStatus, UnmatchedPayout
from donations.refund_values import amount_text
from donations.refunds import (
    RefundRefused,
    refund_add_by_hand,
    refund_waive,
    refunds_mark_exported,
    unmatched_payout_dismiss,
)
from dws_project.admin_base import ReadOnlyAdmin

logger = logging.getLogger("dws.admin")


class WaiveForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea, help_text="why these refunds are not paid (kept with each row)")


class AddRefundForm(forms.Form):
    chain = forms.ChoiceField(choices=())
    donor = forms.CharField(max_length=42, help_text="the address owed (0x...)")
    asset = forms.CharField(max_length=16, help_text='"eth", a donation coin or a stray token of that chain')
    amount = forms.DecimalField(min_value=Decimal(0), max_digits=60, decimal_places=18, help_text="in its own units")
    tx_hash = forms.CharField(max_length=66, help_text="the transaction that brought the money")
    note = forms.CharField(widget=forms.Textarea, help_text="why it is owed (kept with the row)")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        chain = self.fields["chain"]
        assert isinstance(chain, forms.ChoiceField)
        chain.choices = [(name, name) for name in settings.CONFIG.chain_names]


class DismissPayoutForm(forms.Form):
    note = forms.CharField(widget=forms.Textarea, help_text="what this transfer out was (kept with the record)")


def register_totals(rows: QuerySet[Refund]) -> list[dict[str, Any]]:
    """Per chain and asset: what is owed, paid and waived (sum and count) among `rows`."""
    totals: dict[tuple[str, str], dict[str, Any]] = defaultdict(dict)
    for row in rows.order_by().values("chain", "asset", "status").annotate(total=Sum("amount"), rows=Count("id")):
        totals[(row["chain"], row["asset"])][row["status"]] = (amount_text(row["total"]), row["rows"])
    return [
        {"chain": chain, "asset": asset, **{s.value: by.get(s.value, (0, 0)) for s in RefundStatus}}
        for (chain, asset), by in sorted(totals.items())
    ]


@admin.register(Refund)
class RefundAdmin(ReadOnlyAdmin):
    change_list_template = "admin/donations/refund/change_list.html"
    list_display = (
        "id",
        "chain",
        "donor",
        "asset",
        "amount",
        "reason",
        "status",
        "source",
        "paid_by",
        "exported_at",
        "created_at",
    )
    list_filter = ("status", "chain", "asset", "reason")
    search_fields = ("=donor", "=source_tx_hash", "=paid_tx_hash")
    ordering = ("status", "created_at", "id")
    readonly_fields = [f.name for f in Refund._meta.fields]
    actions = ["waive", "export_safe_batch", "export_eoa_csv"]

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Refund], search_term: str
    ) -> tuple[QuerySet[Refund], bool]:
        return super().get_search_results(request, queryset, search_term.strip().lower())

    @admin.display(description="from")
    def source(self, obj: Refund) -> str:
        if obj.donation_id is not None:
            return f"donation {obj.donation_id} ({obj.source_tx_hash})"
        if obj.inflow_id is not None:
            return f"unexplained inflow {obj.inflow_id}"
        where = f" log {obj.source_log_index}" if obj.source_log_index is not None else ""
        return f"{obj.source_tx_hash}{where}"

    @admin.display(description="paid by")
    def paid_by(self, obj: Refund) -> str:
        if obj.status == RefundStatus.WAIVED:
            return f"waived by {obj.waived_by}: {obj.waived_reason}"
        return obj.paid_tx_hash

    def has_change_refund_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(CHANGE_REFUND)

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        response = super().changelist_view(request, extra_context)
        if isinstance(response, TemplateResponse) and response.context_data is not None:
            shown = response.context_data.get("cl")
            if shown is not None:
                response.context_data["register_totals"] = register_totals(shown.queryset)
            response.context_data["can_add_by_hand"] = request.user.has_perm(CHANGE_REFUND)
        return response

    def get_urls(self) -> list[URLPattern]:
        add = self.admin_site.admin_view(self.add_by_hand_view)
        return [path("add-by-hand/", add, name="donations_refund_add_by_hand"), *super().get_urls()]

    def add_by_hand_view(self, request: HttpRequest) -> HttpResponse:
        if not request.user.has_perm(CHANGE_REFUND):
            raise PermissionDenied
        form = AddRefundForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            operator = f"{request.user.get_username()} (admin)"
            try:
                row = refund_add_by_hand(operator=operator, **form.cleaned_data)
            except RefundRefused as exc:
                form.add_error(None, str(exc))
            else:
                self.log_addition(request, row, f"added by hand: {row} for {row.source_tx_hash}: {row.note}")
                self.message_user(request, f"refund {row.pk} added: {row}", messages.SUCCESS)
                return HttpResponseRedirect(reverse("admin:donations_refund_changelist"))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Add a refund by hand",
            "help": "Money the rules did not catch: say who is owed what, for which transaction, and why.",
            "form": form,
        }
        return TemplateResponse(request, "admin/donations/refund/form.html", context)

    @admin.action(
        description="Waive: these owed refunds are not paid (asks for a reason)", permissions=["change_refund"]
    )
    def waive(self, request: HttpRequest, queryset: QuerySet[Refund]) -> HttpResponse | None:
        owed = list(queryset.filter(status=RefundStatus.OWED).order_by("id"))
        form = WaiveForm(request.POST if "reason" in request.POST else None)
        if form.is_bound and form.is_valid():
            operator = f"{request.user.get_username()} (admin)"
            for row in owed:
                done = refund_waive(refund_id=row.pk, reason=form.cleaned_data["reason"], operator=operator)
                self.log_change(request, done, f"waived: {done.waived_reason}")
            self.message_user(request, f"{len(owed)} refund(s) waived", messages.SUCCESS)
            return None
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"Waive {len(owed)} owed refund(s)",
            "help": "Waived rows stay in the register with your name and reason; they are never paid.",
            "form": form,
            "rows": owed,
            "action": "waive",
            "selected": request.POST.getlist(ACTION_CHECKBOX_NAME),
        }
        return TemplateResponse(request, "admin/donations/refund/form.html", context)

    def _owed_selection(self, request: HttpRequest, queryset: QuerySet[Refund]) -> list[Refund]:
        owed = list(queryset.filter(status=RefundStatus.OWED).order_by("chain", "created_at", "id"))
        skipped = queryset.exclude(status=RefundStatus.OWED).count()
        if skipped:
            self.message_user(request, f"{skipped} selected row(s) are not owed and are left out", messages.WARNING)
        return owed

    @admin.action(description="Export for a Safe: Transaction Builder batch (one chain)", permissions=["change_refund"])
    def export_safe_batch(self, request: HttpRequest, queryset: QuerySet[Refund]) -> HttpResponse | None:
        owed = self._owed_selection(request, queryset)
        chains = sorted({r.chain for r in owed})
        if len(chains) != 1:
            self.message_user(
                request,
                "select owed refunds of exactly one chain (filter by chain): a Safe batch is one chain's transaction"
                + (f"; selected: {', '.join(chains)}" if chains else ""),
                messages.ERROR,
            )
            return None
        chain = settings.CONFIG.chain(chains[0])
        batch = safe_batch(chain, owed, created_at=timezone.now())
        self._exported(request, owed, f"Safe batch for {chain.name}")
        response = HttpResponse(json.dumps(batch, indent=2) + "\n", content_type="application/json")
        stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
        response["Content-Disposition"] = f'attachment; filename="dws-refunds-{chain.name}-{stamp}.json"'
        return response

    @admin.action(description="Export for an account: CSV with EIP-681 links", permissions=["change_refund"])
    def export_eoa_csv(self, request: HttpRequest, queryset: QuerySet[Refund]) -> HttpResponse | None:
        owed = self._owed_selection(request, queryset)
        chains = {c.name: c for c in settings.CONFIG.chains}
        unknown = sorted({r.chain for r in owed} - set(chains))
        if unknown:
            self.message_user(request, f"chain(s) not configured: {', '.join(unknown)}", messages.ERROR)
            return None
        self._exported(request, owed, "CSV")
        response = HttpResponse(eoa_csv(chains, owed), content_type="text/csv")
        stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
        response["Content-Disposition"] = f'attachment; filename="dws-refunds-{stamp}.csv"'
        return response

    def _exported(self, request: HttpRequest, rows: list[Refund], what: str) -> None:
        before = refunds_mark_exported(refund_ids=[r.pk for r in rows])
        if before:
            # A batch still waiting for its signatures and this one would both pay: the register closes a row
            # once, a second payment is only listed as unmatched.
            self.message_user(
                request,
                f"some rows were exported for payment before: refund(s) {', '.join(map(str, before))} (see each "
                "row's history); execute only one batch paying them, or the treasury pays them twice",
                messages.WARNING,
            )
        ids = ", ".join(str(r.pk) for r in rows)
        operator = request.user.get_username()
        logger.warning("admin: %s exported %d owed refund(s) as a %s: ids %s", operator, len(rows), what, ids)
        for row in rows:
            self.log_change(request, row, f"exported for payment ({what})")


@admin.register(UnmatchedPayout)
class UnmatchedPayoutAdmin(ReadOnlyAdmin):
    """Transfers out of the donation address that match no owed refund: read, then dismissed with a note."""

    list_display = (
        "created_at",
        "chain",
        "block_number",
        "tx_hash",
        "recipient",
        "asset",
        "amount",
        "status",
        "note",
        "dismiss_link",
    )
    list_filter = ("status", "chain", "asset")
    search_fields = ("=tx_hash", "=recipient")
    ordering = ("status", "-block_number")
    readonly_fields = [f.name for f in UnmatchedPayout._meta.fields]

    @admin.display(description="")
    def dismiss_link(self, obj: UnmatchedPayout) -> str:
        if obj.status != PayoutStatus.OPEN:
            return ""
        url = reverse("admin:donations_unmatchedpayout_dismiss", args=[obj.pk])
        return format_html('<a href="{}">not a refund</a>', url)

    def get_urls(self) -> list[URLPattern]:
        dismiss = self.admin_site.admin_view(self.dismiss_view)
        mine = path("<int:object_id>/dismiss/", dismiss, name="donations_unmatchedpayout_dismiss")
        return [mine, *super().get_urls()]

    def dismiss_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        if not request.user.has_perm(CHANGE_REFUND):
            raise PermissionDenied
        payout = get_object_or_404(UnmatchedPayout, pk=object_id)
        form = DismissPayoutForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            try:
                operator = f"{request.user.get_username()} (admin)"
                done = unmatched_payout_dismiss(payout_id=payout.pk, note=form.cleaned_data["note"], operator=operator)
            except RefundRefused as exc:
                form.add_error(None, str(exc))
            else:
                self.log_change(request, done, f"not a refund: {done.note}")
                self.message_user(request, f"transfer {done.tx_hash} noted: not a refund", messages.SUCCESS)
                return HttpResponseRedirect(reverse("admin:donations_unmatchedpayout_changelist"))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"Not a refund: {payout}",
            "help": "The transfer stays on record with your note; no refund row is touched.",
            "form": form,
        }
        return TemplateResponse(request, "admin/donations/refund/form.html", context)
