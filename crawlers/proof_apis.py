"""The public proof's endpoints: /proof.json (DRF, in the OpenAPI schema), /proof/donations.csv and
/proof/verify.py. Thin shells over crawlers.proof_report and donations.export."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBase, StreamingHttpResponse
from django.views.decorators.http import condition, require_safe
from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from crawlers.models import ProofStatus
from crawlers.proof_report import DEFAULT_RANGES, MAX_RANGES, cached_proof_report, proof_chains
from donations.export import confirmed_donation_lines, confirmed_donations_version
from dws_project import api_errors
from dws_project.api_base import PublicApi, error_responses, whole_field
from dws_project.ratelimit import check_budget, retry_after_header

VERIFIER = Path(settings.BASE_DIR) / "deploy" / "verify_proof.py"
PROOF_MAX_AGE = 10  # the figures change at most once a finalized block
CSV_MAX_AGE = 60
VERIFIER_MAX_AGE = 3600


def _raw_field(help_text: str) -> serializers.RegexField:
    return serializers.RegexField(r"^-?[0-9]+$", allow_null=True, help_text=help_text)


class ProofAssetSerializer(serializers.Serializer):
    asset = serializers.CharField()
    opening = _raw_field("balance at first_block - 1, raw units (wei, the coin's base units); null if unknown")
    closing = _raw_field("balance at last_block, raw units; null if unknown")
    credited = whole_field("the range's confirmed donations (the CSV's rows), raw units")
    donations = serializers.IntegerField(help_text="how many confirmed donations of this asset the range holds")
    unexplained = whole_field("inflows no transfer explains, not credited (open or closed as not a donation)")
    uncredited = _raw_field("arrived but not a confirmed donation (dust, rounding to the column, a paused backlog)")
    left = _raw_field("what left the address (transaction values and fees, Transfer logs from it); null if unknown")


class ProofNonceSerializer(serializers.Serializer):
    opening = _raw_field("the address's nonce at first_block - 1")
    closing = _raw_field("its nonce at last_block")


class ProofRefundSerializer(serializers.Serializer):
    tx_hash = serializers.CharField(help_text="the treasury's transaction that paid it")
    log_index = serializers.IntegerField(allow_null=True, help_text="its Transfer log (a token); null for ETH")
    trace_address = serializers.CharField(
        allow_null=True, help_text="ETH paid by a call of the address (a Safe): the call frame's path; else null"
    )
    block_number = serializers.IntegerField()
    recipient = serializers.CharField(help_text="who was paid back, lower case")
    asset = serializers.CharField()
    contract = serializers.CharField(allow_null=True, help_text="the token's contract; null for ETH")
    decimals = serializers.IntegerField()
    amount_raw = whole_field("what was paid, in wei or the token's base units")
    reason = serializers.CharField(help_text="sale-closed, not-a-donation, stray-coin or by-hand")
    source_tx_hash = serializers.CharField(allow_null=True, help_text="the transaction that brought the money")


class ProofRangeSerializer(serializers.Serializer):
    first_block = serializers.IntegerField()
    last_block = serializers.IntegerField()
    last_block_hash = serializers.CharField()
    status = serializers.ChoiceField(choices=ProofStatus.choices)
    reason = serializers.CharField(allow_blank=True, help_text="why an unproven range could not be proven")
    checked_at = serializers.CharField()
    nonce = ProofNonceSerializer()
    assets = ProofAssetSerializer(many=True)
    refunds = ProofRefundSerializer(
        many=True, help_text="refunds paid by transfers in these blocks (for ETH and the coins: part of `left`)"
    )


class ProofInflowSerializer(serializers.Serializer):
    block_number = serializers.IntegerField()
    block_hash = serializers.CharField()
    asset = serializers.CharField()
    amount_raw = whole_field("raw units")
    amount = serializers.CharField(help_text="in the asset's own units")
    recorded_at = serializers.CharField()


class ProofUnprovenSerializer(serializers.Serializer):
    first_block = serializers.IntegerField()
    last_block = serializers.IntegerField()
    reason = serializers.CharField()


class ProofCoinSerializer(serializers.Serializer):
    asset = serializers.CharField()
    contract = serializers.CharField(allow_null=True, help_text="the coin's contract; null for ETH")
    decimals = serializers.IntegerField()


class ProofChainSerializer(serializers.Serializer):
    chain = serializers.CharField()
    chain_id = serializers.IntegerField(allow_null=True)
    donation_address = serializers.CharField()
    assets = ProofCoinSerializer(many=True)
    last_checked_at = serializers.CharField(allow_null=True, help_text="when the proof last wrote a range")
    first_block = serializers.IntegerField(allow_null=True, help_text="the first block any range covers")
    proven_through = serializers.IntegerField(allow_null=True, help_text="the last block of the last proven range")
    unproven = ProofUnprovenSerializer(many=True)
    open_inflows_total = serializers.IntegerField()
    open_inflows = ProofInflowSerializer(many=True, help_text="the oldest 100 open unexplained inflows")
    ranges = ProofRangeSerializer(many=True)
    next_from_block = serializers.IntegerField(allow_null=True, help_text="from_block of the next page; null: none")


class ProofApi(PublicApi):
    """The public proof of completeness: per chain, the proven ranges with their balances, what was credited
    and what left in each, the open unexplained inflows and the last check's time (docs/proof.md)."""

    cache_seconds = PROOF_MAX_AGE

    @extend_schema_serializer(component_name="ProofInput")
    class InputSerializer(serializers.Serializer):
        chain = serializers.CharField(required=False, max_length=16, help_text="only this chain (default: all)")
        from_block = serializers.IntegerField(
            min_value=0, max_value=2**63 - 1, default=0, help_text="ranges from the one holding this block on"
        )
        limit = serializers.IntegerField(
            min_value=1, max_value=MAX_RANGES, default=DEFAULT_RANGES, help_text="ranges per chain, at most 500"
        )

    @extend_schema_serializer(component_name="ProofOutput")
    class OutputSerializer(serializers.Serializer):
        chains = ProofChainSerializer(many=True)

    @extend_schema(
        operation_id="proof",
        parameters=[InputSerializer],
        responses={200: OutputSerializer, **error_responses(api_errors.INVALID_REQUEST)},
    )
    def get(self, request: Request) -> Response:
        params = self.InputSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        config = settings.CONFIG
        chain = params.validated_data.get("chain")
        if chain is not None and chain not in {c.chain for c in proof_chains(config)}:
            raise api_errors.ApiException(api_errors.INVALID_REQUEST)
        report = cached_proof_report(
            config,
            seconds=settings.PROOF_CACHE_SECONDS,
            chain=chain,
            from_block=params.validated_data["from_block"],
            limit=params.validated_data["limit"],
        )
        return Response(report)  # already the wire shape; OutputSerializer documents it


def _csv_budget(request: HttpRequest) -> HttpResponse | None:
    """A download costs far more than a JSON read: a budget of its own, on top of the site-wide one."""
    retry_after = check_budget(
        request, rate=settings.PROOF_CSV_RATE_PER_SECOND, burst=settings.PROOF_CSV_RATE_BURST, scope="csv:"
    )
    if retry_after is None:
        return None
    return api_errors.json_error(api_errors.RATE_LIMITED, **{"Retry-After": retry_after_header(retry_after)})


@require_safe
def donations_csv(request: HttpRequest) -> HttpResponseBase:
    return _csv_budget(request) or _donations_csv(request)


@condition(etag_func=lambda request: confirmed_donations_version())
def _donations_csv(request: HttpRequest) -> HttpResponseBase:
    response = StreamingHttpResponse(confirmed_donation_lines(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="donations.csv"'
    response["Cache-Control"] = f"public, max-age={CSV_MAX_AGE}"
    return response


@require_safe
def verifier_script(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(VERIFIER.read_bytes(), content_type="text/x-python; charset=utf-8")
    response["Content-Disposition"] = 'inline; filename="verify_proof.py"'
    response["Cache-Control"] = f"public, max-age={VERIFIER_MAX_AGE}"
    return response
