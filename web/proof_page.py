"""/proof: the public proof of completeness as a page (the same figures as /proof.json, rendered by the server,
so it reads without JavaScript). Kept apart from the donation page's view and scripts."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from crawlers.proof_apis import proof_budget
from crawlers.proof_report import cached_proof_report, verifier_fingerprint
from dws_project import api_errors
from dws_project.digits import whole_number
from web.views import CONTENT_SECURITY_POLICY

PAGE_RANGES = 50
ASSET_NAMES = {"eth": "ETH", "usdt": "USDT", "usdc": "USDC"}
_FIGURES = ("opening", "closing", "credited", "left", "unexplained", "uncredited")


def units(raw: str | None, decimals: int) -> str:
    """Raw units as the asset's own, every significant digit kept ("1.5", "0.000000000000000001")."""
    if raw is None:
        return "unknown"
    value = Decimal(raw).scaleb(-decimals)
    text = format(value, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def shown_time(text: str | None) -> str | None:
    """`2026-11-30T18:20:11Z` as `2026-11-30 18:20:11 UTC`."""
    return None if text is None else text.replace("T", " ").replace("Z", " UTC")


def _chain_view(chain: dict[str, Any]) -> dict[str, Any]:
    decimals = {a["asset"]: a["decimals"] for a in chain["assets"]}
    shown = []
    for found in chain["ranges"]:
        assets = [
            {
                "name": ASSET_NAMES.get(a["asset"], a["asset"].upper()),
                **{k: units(a[k], decimals[a["asset"]]) for k in _FIGURES},
                "donations": a["donations"],
            }
            for a in found["assets"]
        ]
        shown.append({**found, "asset_rows": assets, "span": len(assets)})
    inflows = [
        {
            **i,
            "name": ASSET_NAMES.get(i["asset"], i["asset"].upper()),
            "shown": units(i["amount_raw"], decimals[i["asset"]]),
            "when": shown_time(i["recorded_at"]),
        }
        for i in chain["open_inflows"]
    ]
    refunds = [
        {
            **r,
            "name": ASSET_NAMES.get(r["asset"], r["asset"].upper()),
            "shown": units(r["amount_raw"], r["decimals"]),
        }
        for found in chain["ranges"]
        for r in found.get("refunds", [])
    ]
    return {
        **chain,
        "shown_ranges": shown,
        "shown_refunds": refunds,
        "shown_inflows": inflows,
        "shown_checked_at": shown_time(chain["last_checked_at"]),
    }


@require_safe
def proof_page(request: HttpRequest) -> HttpResponse:
    refused = proof_budget(request)
    if refused is not None:
        return refused
    raw = request.GET.get("from_block")
    from_block = whole_number(raw) if raw is not None else None
    if raw is not None and (from_block is None or raw != raw.strip()):
        return api_errors.json_error(api_errors.INVALID_REQUEST)
    report = cached_proof_report(
        settings.CONFIG, seconds=settings.PROOF_CACHE_SECONDS, chain=None, from_block=from_block, limit=PAGE_RANGES
    )
    context = {
        "chains": [_chain_view(c) for c in report["chains"]],
        "from_block": from_block,
        "verifier": verifier_fingerprint(),
    }
    response = render(request, "web/proof.html", context)
    response["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    response["Cache-Control"] = "public, max-age=10"
    return response
