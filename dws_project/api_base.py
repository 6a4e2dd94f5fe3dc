"""What every delphi view shares: the error schema, the public and signed view bases, Cache-Control."""

from __future__ import annotations

from typing import Any, Protocol, cast

from django.conf import settings
from django.utils.module_loading import import_string
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers
from rest_framework.exceptions import MethodNotAllowed, Throttled
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from dws_project import api_errors
from dws_project.api_errors import ApiError
from dws_project.ratelimit import check_budget

# The signature check is an app's (affiliates verifies signed requests): the core names it by dotted
# string and imports no app, so any app may build on these bases.
SIGNED_REQUEST_AUTHENTICATION = "affiliates.authentication.SignedRequestAuthentication"


class ErrorSerializer(serializers.Serializer):
    code = serializers.IntegerField(help_text="the numbered error; see the error table in docs/api.md")
    message = serializers.CharField(help_text="a fixed, generic message for the code")


def error_responses(*errors: ApiError) -> dict[int, OpenApiResponse]:
    """Schema entries for the numbered errors an operation can answer with (plus 429 and 500)."""
    by_status: dict[int, list[ApiError]] = {}
    # Every signed operation may meet a contract wallet whose signature the provider could not check.
    signed = (api_errors.SIGNATURE_UNVERIFIABLE,) if api_errors.SIGNATURE_REJECTED in errors else ()
    for error in (*errors, *signed, api_errors.RATE_LIMITED, api_errors.INTERNAL):
        by_status.setdefault(error.status, []).append(error)
    return {
        status: OpenApiResponse(
            ErrorSerializer,
            description="; ".join(f"{e.code}: {e.message}" for e in sorted(found, key=lambda e: e.code)),
        )
        for status, found in sorted(by_status.items())
    }


DECIMAL_STRING = r"^[0-9]+(\.[0-9]+)?$"
WHOLE_STRING = r"^[0-9]+$"


def amount_field(help_text: str) -> serializers.RegexField:
    """A decimal string on the wire: digits, optionally a point and more digits; never an exponent."""
    return serializers.RegexField(DECIMAL_STRING, help_text=help_text)


def whole_field(help_text: str) -> serializers.RegexField:
    return serializers.RegexField(WHOLE_STRING, help_text=help_text)


class StrictRegexField(serializers.RegexField):
    """A string matching `regex`; a JSON number is refused, never coerced (amounts travel as strings)."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


def signed_body_errors(*errors: ApiError) -> dict[int, OpenApiResponse]:
    """`error_responses` of a signed operation that takes a JSON body: a body can be invalid or not JSON,
    a signature can be refused, before any of the operation's own `errors`."""
    return error_responses(
        api_errors.INVALID_REQUEST, api_errors.UNSUPPORTED_MEDIA_TYPE, api_errors.SIGNATURE_REJECTED, *errors
    )


class PublicApi(APIView):
    """An unauthenticated delphi endpoint."""

    authentication_classes: list[type] = []
    permission_classes: list[type] = []
    cache_seconds: int | None = None  # Cache-Control max-age of a successful GET

    def finalize_response(self, request: Any, response: Response, *args: Any, **kwargs: Any) -> Response:
        response = super().finalize_response(request, response, *args, **kwargs)
        if self.cache_seconds is not None and request.method == "GET" and response.status_code == 200:
            response["Cache-Control"] = f"public, max-age={self.cache_seconds}"
        elif "Cache-Control" not in response:
            response["Cache-Control"] = "no-store"
        return response


class _Signer(Protocol):
    address: str  # lower case


class SignedApi(PublicApi):
    """A delphi endpoint that needs a signed request; `signer(request)` is the address that signed it."""

    permission_classes = [IsAuthenticated]

    @staticmethod
    def signer(request: Request) -> str:
        # The stubs type request.user as a Django user; behind SIGNED_REQUEST_AUTHENTICATION (and
        # IsAuthenticated) it is the app's signed caller, which carries the signing address.
        return cast(_Signer, request.user).address

    def body(self, request: Request) -> dict[str, Any]:
        """The request's JSON body, validated by the view's `InputSerializer` (a numbered 400 when not)."""
        serializer = self.InputSerializer(data=request.data)  # type: ignore[attr-defined]
        serializer.is_valid(raise_exception=True)
        return dict(serializer.validated_data)

    def get_authenticators(self) -> list[Any]:
        return [import_string(SIGNED_REQUEST_AUTHENTICATION)()]

    def initial(self, request: Any, *args: Any, **kwargs: Any) -> None:
        # A wrong method is refused before the signature is checked (and its message used up).
        method = request.method.lower()
        if method not in self.http_method_names or not hasattr(self, method):
            raise MethodNotAllowed(request.method)
        # Checking a signature costs far more than a public read: a smaller budget of its own, taken
        # before the signature is looked at (DWS_SIGNED_RATE_LIMIT_*; never below 10/s, burst 20).
        retry_after = check_budget(
            request,
            rate=settings.DWS_SIGNED_RATE_LIMIT_PER_SECOND,
            burst=settings.DWS_SIGNED_RATE_LIMIT_BURST,
            scope="signed:",
        )
        if retry_after is not None:
            raise Throttled(wait=retry_after)
        super().initial(request, *args, **kwargs)


class SignedRequestScheme(OpenApiAuthenticationExtension):
    """Documents the three delphi headers; all three are required together."""

    target_class = SIGNED_REQUEST_AUTHENTICATION
    name = ["delphiKey", "delphiTs", "delphiSignature"]

    def get_security_definition(self, auto_schema: Any) -> list[dict[str, str]]:
        return [
            {"type": "apiKey", "in": "header", "name": "delphi-key", "description": "the signing address"},
            {
                "type": "apiKey",
                "in": "header",
                "name": "delphi-ts",
                "description": "UTC time of signing, `YYYY-MM-DD HH:MM:SS+00:00`",
            },
            {
                "type": "apiKey",
                "in": "header",
                "name": "delphi-signature",
                "description": 'EIP-191 personal_sign over "<path words>, <lower-case address>, <ts>"',
            },
        ]

    def get_security_requirement(self, auto_schema: Any) -> dict[str, list[str]]:
        return {"delphiKey": [], "delphiTs": [], "delphiSignature": []}
