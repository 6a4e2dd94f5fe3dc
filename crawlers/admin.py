"""Crawler cursors and reconcile results in the admin.

A cursor is moved only through its "set cursor" form, which shows the chain head and finalized block and
calls `set_cursor` (the function `manage.py set_cursor` calls): refused beyond the head, taken under the
crawler's lock, logged with the operator's name.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from crawlers.chain.clients import make_probe_client
from crawlers.chain.tips import chain_tips
from crawlers.models import InflowStatus, InternalMovement, LastBlock, ReconcileRun, UnexplainedInflow
from crawlers.record.inflows import InflowRefused, inflow_dismiss, inflow_refund
from crawlers.runs.operator import CursorRefused, inflow_credit, set_cursor
from donations.models import Donation, DonationStatus
from donations.refund_models import CHANGE_REFUND
from dws_project.admin_base import ReadOnlyAdmin

logger = logging.getLogger("dws.admin")


class SetCursorForm(forms.Form):
    block = forms.IntegerField(min_value=0, help_text="the last block the crawler has processed")


@admin.register(LastBlock)
class LastBlockAdmin(ReadOnlyAdmin):
    list_display = ("chain", "label", "value", "block_hash", "modified_at", "set_cursor_link")
    readonly_fields = ("chain", "label", "value", "block_hash", "created_at", "modified_at")

    @admin.display(description="")
    def set_cursor_link(self, obj: LastBlock) -> str:
        return format_html('<a href="{}">set cursor</a>', reverse("admin:crawlers_lastblock_set_cursor", args=[obj.pk]))

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view(self.set_cursor_view)
        return [path("<int:object_id>/set-cursor/", view, name="crawlers_lastblock_set_cursor"), *super().get_urls()]

    def set_cursor_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        if not request.user.has_perm("crawlers.change_lastblock"):
            raise PermissionDenied
        cursor = get_object_or_404(LastBlock, pk=object_id)
        if cursor.chain not in settings.CONFIG.chain_names:
            raise PermissionDenied(f"chain {cursor.chain} is not configured (DWS_CHAINS)")
        client = make_probe_client(settings.CONFIG.chain(cursor.chain))
        form = SetCursorForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            block = form.cleaned_data["block"]
            operator = request.user.get_username()
            try:
                previous = set_cursor(
                    cursor.label, block, chain=cursor.chain, operator=f"{operator} (admin)", client=client
                )
            except CursorRefused as exc:
                logger.warning(
                    "admin: %s tried to set the %s cursor of %s to %d: refused (%s)",
                    operator,
                    cursor.label,
                    cursor.chain,
                    block,
                    exc,
                )
                form.add_error("block", str(exc))
            else:
                text = (
                    f"cursor {cursor.label} of {cursor.chain}: {previous} -> {block}; "
                    f"the next run starts at block {block + 1}"
                )
                self.log_change(request, cursor, text)
                self.message_user(request, text, messages.SUCCESS)
                return HttpResponseRedirect(reverse("admin:crawlers_lastblock_changelist"))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"Set the {cursor.label} cursor of {cursor.chain}",
            "cursor": cursor,
            "tips": chain_tips(client),
            "form": form,
        }
        return TemplateResponse(request, "admin/crawlers/lastblock/set_cursor.html", context)


@admin.register(ReconcileRun)
class ReconcileRunAdmin(ReadOnlyAdmin):
    list_display = (
        "finished_at",
        "chain",
        "trigger",
        "from_block",
        "to_block",
        "transfers",
        "ok",
        "discrepancy_count",
    )
    list_filter = ("chain", "ok", "trigger")
    ordering = ("-finished_at",)
    fields = (
        "summary",
        "chain",
        "trigger",
        "from_block",
        "to_block",
        "started_at",
        "finished_at",
        "ok",
        "discrepancy_list",
    )
    readonly_fields = fields

    @admin.display(description="discrepancies")
    def discrepancy_count(self, obj: ReconcileRun) -> int:
        return len(obj.discrepancies)

    @admin.display(description="discrepancies")
    def discrepancy_list(self, obj: ReconcileRun) -> str:
        return format_html("<pre>{}</pre>", "\n".join(obj.discrepancies) or "none")


@admin.register(InternalMovement)
class InternalMovementAdmin(ReadOnlyAdmin):
    """The donation address's own money coming back to it: listed, never credited (docs/detection.md)."""

    list_display = ("chain", "block_number", "tx_hash", "asset", "amount", "kind", "what_it_is")
    list_filter = ("chain", "asset", "kind")
    search_fields = ("tx_hash", "block_hash")
    ordering = ("-block_number",)

    @admin.display(description="")
    def what_it_is(self, obj: InternalMovement) -> str:
        """Not a donation; a row the old rules confirmed for it stays, and is named here."""
        earlier = Donation.objects.filter(
            chain=obj.chain, tx_hash=obj.tx_hash, asset=obj.asset, status=DonationStatus.CONFIRMED
        )
        ids = ", ".join(str(pk) for pk in earlier.values_list("id", flat=True))
        if ids:
            return f"internal movement: not a donation; credited under an earlier rule: donation id {ids} (stays)"
        return "internal movement: not a donation"


class CreditInflowForm(forms.Form):
    tx_hash = forms.CharField(min_length=66, max_length=66, help_text="the transaction that paid this inflow")


class DismissInflowForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea, help_text="why this is not a donation (kept with the record)")


class RefundInflowForm(forms.Form):
    donor = forms.CharField(max_length=42, help_text="the address that sent it, to be paid back (0x...)")
    tx_hash = forms.CharField(
        max_length=66, required=False, help_text="the transaction that brought it, when you know it"
    )
    reason = forms.CharField(widget=forms.Textarea, help_text="why it is refunded (kept with the record)")


@admin.register(UnexplainedInflow)
class UnexplainedInflowAdmin(ReadOnlyAdmin):
    """Value no transfer explains; closed only by the two actions below, each logged with the operator."""

    list_display = (
        "created_at",
        "chain",
        "block_number",
        "asset",
        "amount",
        "status",
        "tx_hash",
        "operator",
        "resolve_links",
    )
    list_filter = ("status", "chain", "asset")
    search_fields = ("block_hash", "tx_hash")
    ordering = ("status", "created_at")
    readonly_fields = [f.name for f in UnexplainedInflow._meta.fields]

    @admin.display(description="")
    def resolve_links(self, obj: UnexplainedInflow) -> str:
        if obj.status != InflowStatus.OPEN:
            return ""
        return format_html(
            '<a href="{}">credit this transaction</a> | <a href="{}">not a donation, keep</a> | '
            '<a href="{}">not a donation, refund</a>',
            reverse("admin:crawlers_unexplainedinflow_credit", args=[obj.pk]),
            reverse("admin:crawlers_unexplainedinflow_dismiss", args=[obj.pk]),
            reverse("admin:crawlers_unexplainedinflow_refund", args=[obj.pk]),
        )

    def get_urls(self) -> list[URLPattern]:
        credit = self.admin_site.admin_view(self.credit_view)
        dismiss = self.admin_site.admin_view(self.dismiss_view)
        refund = self.admin_site.admin_view(self.refund_view)
        return [
            path("<int:object_id>/credit/", credit, name="crawlers_unexplainedinflow_credit"),
            path("<int:object_id>/dismiss/", dismiss, name="crawlers_unexplainedinflow_dismiss"),
            path("<int:object_id>/refund/", refund, name="crawlers_unexplainedinflow_refund"),
            *super().get_urls(),
        ]

    def credit_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        return self._resolve(
            request,
            object_id,
            CreditInflowForm,
            "Credit this transaction",
            "The inflow's block is crawled again (transactions, call traces, logs); the transaction is credited "
            "like any donation if the detection finds it there.",
            lambda inflow, data, operator: inflow_credit(
                inflow_id=inflow.pk, tx_hash=data["tx_hash"], operator=operator
            ),
        )

    def dismiss_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        return self._resolve(
            request,
            object_id,
            DismissInflowForm,
            "Not a donation, keep",
            "Nothing is credited and nothing is owed; the reason is kept with the record.",
            lambda inflow, data, operator: inflow_dismiss(
                inflow_id=inflow.pk, reason=data["reason"], operator=operator
            ),
        )

    def refund_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        if not request.user.has_perm(CHANGE_REFUND):  # it makes the treasury owe: the register's own lever too
            raise PermissionDenied

        def refund(inflow: UnexplainedInflow, data: dict[str, Any], operator: str) -> UnexplainedInflow:
            inflow_refund(
                inflow_id=inflow.pk,
                donor=data["donor"],
                tx_hash=data["tx_hash"],
                reason=data["reason"],
                operator=operator,
            )
            return UnexplainedInflow.objects.get(pk=inflow.pk)

        return self._resolve(
            request,
            object_id,
            RefundInflowForm,
            "Not a donation, refund",
            "Nothing is credited; the amount is owed back to the address you name, in the refund register (paid "
            'from the treasury like every refund, see docs/operating.md, "refunds"); the reason is kept.',
            refund,
        )

    def _resolve(
        self,
        request: HttpRequest,
        object_id: int,
        form_class: type[forms.Form],
        title: str,
        help_text: str,
        act: Callable[[UnexplainedInflow, dict[str, Any], str], UnexplainedInflow],
    ) -> HttpResponse:
        if not request.user.has_perm("crawlers.change_unexplainedinflow"):
            raise PermissionDenied
        inflow = get_object_or_404(UnexplainedInflow, pk=object_id)
        form = form_class(request.POST or None)
        if request.method == "POST" and form.is_valid():
            operator = request.user.get_username()
            try:
                done = act(inflow, form.cleaned_data, f"{operator} (admin)")
            except InflowRefused as exc:
                logger.warning("admin: %s: %s on unexplained inflow %d refused (%s)", operator, title, inflow.pk, exc)
                form.add_error(None, str(exc))
            else:
                text = f"unexplained inflow {done.pk}: {done.status}"
                self.log_change(request, done, text)
                self.message_user(request, text, messages.SUCCESS)
                return HttpResponseRedirect(reverse("admin:crawlers_unexplainedinflow_changelist"))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": title,
            "help": help_text,
            "inflow": inflow,
            "form": form,
        }
        return TemplateResponse(request, "admin/crawlers/unexplainedinflow/resolve.html", context)
