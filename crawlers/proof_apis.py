"""The public proof's endpoints: /proof.json (DRF, in the OpenAPI schema), /proof/donations.csv and
/proof/verify.py. Thin shells over crawlers.proof_report and donations.export."""

from __future__ import annotations

import re

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBase, StreamingHttpResponse
from django.utils.cache import get_conditional_response
from django.utils.http import http_date
from django.views.decorators.http import require_safe
from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request

from crawlers.models import ProofStatus
from crawlers.proof_report import DEFAULT_RANGES, MAX_RANGES, VERIFIER, cached_proof_json, proof_chains
from donations.export import StoredCsv, stored_csv, stored_csv_bytes
from dws_project import api_errors
from dws_project.api_base import PublicApi, error_responses, whole_field
from dws_project.ratelimit import check_budget, retry_after_header

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


class ProofRangeInflowSerializer(serializers.Serializer):
    kind = serializers.CharField(help_text='"inflow"')
    block_number = serializers.IntegerField()
    block_hash = serializers.CharField()
    asset = serializers.CharField()
    amount_raw = whole_field("raw units (negative: a coin that left without a Transfer log)")
    amount = serializers.CharField(help_text="in the asset's own units")
    status = serializers.CharField(help_text="open, or dismissed (closed as not a donation)")
    tx_hash = serializers.CharField(allow_blank=True, help_text="the transaction an operator named, if any")


class ProofPendingSerializer(serializers.Serializer):
    kind = serializers.CharField(help_text='"pending"')
    block_number = serializers.IntegerField()
    block_hash = serializers.CharField()
    asset = serializers.CharField()
    tx_hash = serializers.CharField()
    log_index = serializers.CharField(allow_blank=True, help_text="a coin Transfer's log index; empty for ETH")
    trace_address = serializers.CharField(allow_blank=True, help_text="ETH sent in an internal call: its path")
    donor = serializers.CharField()
    amount = serializers.CharField(help_text="at the stored scale, as in the donation CSV")


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
    inflows = ProofRangeInflowSerializer(many=True, help_text="the range's unexplained inflows, one by one")
    pending = ProofPendingSerializer(
        many=True, help_text="donations recorded in the range and not confirmed yet (a paused sale's backlog)"
    )
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


class ProofVerifierSerializer(serializers.Serializer):
    path = serializers.CharField(help_text="where this site serves the verifier")
    version = serializers.CharField(help_text="the verifier's version (its __version__)")
    sha256 = serializers.CharField(help_text="the SHA-256 of the file served; README.md publishes the same")


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
        verifier = ProofVerifierSerializer()
        chains = ProofChainSerializer(many=True)

    @extend_schema(
        operation_id="proof",
        parameters=[InputSerializer],
        responses={200: OutputSerializer, **error_responses(api_errors.INVALID_REQUEST)},
    )
    def get(self, request: Request) -> HttpResponse:
        refused = proof_budget(request)
        if refused is not None:
            return refused
        params = self.InputSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        config = settings.CONFIG
        chain = params.validated_data.get("chain")
        if chain is not None and chain not in {c.chain for c in proof_chains(config)}:
            raise api_errors.ApiException(api_errors.INVALID_REQUEST)
        body = cached_proof_json(
            config,
            seconds=settings.PROOF_CACHE_SECONDS,
            chain=chain,
            from_block=params.validated_data["from_block"],
            limit=params.validated_data["limit"],
        )
        # Already the wire shape (OutputSerializer documents it), spliced from the cached pages' text.
        return HttpResponse(body, content_type="application/json")


def _over_budget(request: HttpRequest, *, rate: float, burst: int, scope: str) -> HttpResponse | None:
    retry_after = check_budget(request, rate=rate, burst=burst, scope=scope)
    if retry_after is None:
        return None
    return api_errors.json_error(api_errors.RATE_LIMITED, **{"Retry-After": retry_after_header(retry_after)})


def _csv_budget(request: HttpRequest) -> HttpResponse | None:
    """A download costs far more than a JSON read: a budget of its own, on top of the site-wide one."""
    return _over_budget(
        request, rate=settings.PROOF_CSV_RATE_PER_SECOND, burst=settings.PROOF_CSV_RATE_BURST, scope="csv:"
    )


def proof_budget(request: HttpRequest) -> HttpResponse | None:
    """/proof.json and /proof answer up to 500 ranges a request: a budget of their own per client, on top of
    the site-wide one, so one client's reads stay a small share of the workers (the verifier waits out a
    429 as its Retry-After says)."""
    return _over_budget(request, rate=settings.PROOF_RATE_PER_SECOND, burst=settings.PROOF_RATE_BURST, scope="proof:")


@require_safe
def donations_csv(request: HttpRequest) -> HttpResponseBase:
    return _csv_budget(request) or _donations_csv(request, stored_csv())


def _donations_csv(request: HttpRequest, stored: StoredCsv) -> HttpResponseBase:
    """The stored file (donations/export.py: built by a task once per change, never here), revalidated by
    its ETag or Last-Modified, whole or one byte range."""
    headers = {
        "ETag": stored.etag,
        "Accept-Ranges": "bytes",
        "Cache-Control": f"public, max-age={CSV_MAX_AGE}",
        **({"Last-Modified": http_date(stored.last_modified.timestamp())} if stored.last_modified else {}),
    }
    unchanged = get_conditional_response(
        request,
        etag=stored.etag,
        last_modified=int(stored.last_modified.timestamp()) if stored.last_modified else None,
    )
    if unchanged is not None:
        for name, value in headers.items():
            unchanged[name] = value
        return unchanged
    wanted = _byte_range(request, stored)
    if wanted == UNSATISFIABLE:
        refused = HttpResponse(status=416)
        refused["Content-Range"] = f"bytes */{stored.size}"
        return refused
    start, end = wanted or (0, stored.size - 1)
    response = StreamingHttpResponse(
        stored_csv_bytes(stored, start, end), status=206 if wanted else 200, content_type="text/csv; charset=utf-8"
    )
    for name, value in headers.items():
        response[name] = value
    response["Content-Length"] = str(end - start + 1)
    response["Content-Disposition"] = 'attachment; filename="donations.csv"'
    if wanted:
        response["Content-Range"] = f"bytes {start}-{end}/{stored.size}"
    return response


UNSATISFIABLE = (-1, -1)


def _byte_range(request: HttpRequest, stored: StoredCsv) -> tuple[int, int] | None:
    """The one byte range asked for (inclusive), UNSATISFIABLE, or None for the whole file (no Range, one
    we do not serve -- several ranges, other units -- or an If-Range that no longer matches)."""
    header = request.headers.get("Range", "")
    if_range = request.headers.get("If-Range")
    if not header or (if_range is not None and if_range != stored.etag):
        return None
    found = re.fullmatch(r"bytes=(\d*)-(\d*)", header.strip())
    if found is None or found.group(1) == found.group(2) == "":
        return None
    first, last = found.groups()
    if first == "":  # the last N bytes
        start, end = max(0, stored.size - _position(last)), stored.size - 1
    else:
        start, end = _position(first), min(_position(last) if last else stored.size - 1, stored.size - 1)
    if start >= stored.size or start > end:
        return UNSATISFIABLE
    return start, end


def _position(digits: str) -> int:
    """A byte position of the Range header: past 18 digits, beyond any file (int() refuses 4,300 digits)."""
    return int(digits) if len(digits) <= 18 else 10**18


@require_safe
def verifier_script(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(VERIFIER.read_bytes(), content_type="text/x-python; charset=utf-8")
    response["Content-Disposition"] = 'inline; filename="verify_proof.py"'
    response["Cache-Control"] = f"public, max-age={VERIFIER_MAX_AGE}"
    return response
