"""delphi's error responses: a fixed table of numbered codes with fixed, generic messages.

A response never carries the underlying error (it names tables, columns, the driver and its version);
that goes to the server log only. Operators ask a reporter for the numeric code.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

from django import db
from django.http import HttpRequest, JsonResponse
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response

logger = logging.getLogger("dws.api")


@dataclass(frozen=True)
class ApiError:
    code: int
    status: int
    message: str


INTERNAL = ApiError(1000, 500, "internal error")
INVALID_REQUEST = ApiError(1001, 400, "invalid request")
INVALID_ADDRESS = ApiError(1002, 400, "invalid address")
NOT_FOUND = ApiError(1003, 404, "not found")
METHOD_NOT_ALLOWED = ApiError(1004, 405, "method not allowed")
UNSUPPORTED_MEDIA_TYPE = ApiError(1005, 415, "unsupported media type")
RATE_LIMITED = ApiError(1006, 429, "too many requests")
NOT_ACCEPTABLE = ApiError(1007, 406, "not acceptable")
PRICE_UNAVAILABLE = ApiError(1008, 503, "price not available yet")
FORBIDDEN = ApiError(1009, 403, "forbidden")
REQUEST_TOO_LARGE = ApiError(1010, 413, "request body too large")
MALFORMED_BODY = ApiError(1011, 400, "malformed request body")
# PostgreSQL unreachable (restarting, failing over): nothing is wrong with the request; ask again shortly.
DATABASE_UNAVAILABLE = ApiError(1012, 503, "service temporarily unavailable; try again")
SIGNATURE_REJECTED = ApiError(1100, 401, "request signature rejected")
NOT_A_DONOR = ApiError(1101, 403, "no confirmed donation for this address")
# A contract wallet's signature (ERC-1271/6492) that the provider could not check: refused, retry later.
SIGNATURE_UNVERIFIABLE = ApiError(1102, 503, "the wallet contract's signature could not be checked; try again")
UNKNOWN_AFFILIATE_CODE = ApiError(1200, 404, "unknown affiliate code")
SELF_REFERRAL = ApiError(1201, 403, "an address cannot use its own affiliate code")
NOT_THE_DONOR = ApiError(1202, 403, "the transaction was not sent by the signing address")
ATTRIBUTION_CONFLICT = ApiError(1203, 409, "the transaction is already attributed to another code")
TOO_MANY_OPEN_CLAIMS = ApiError(1204, 409, "too many pending claims for this address")
# An affiliate code is made only for an address a donation of which has been seen (no row for free keys).
NO_DONATION_SEEN = ApiError(1205, 403, "no donation seen for this address yet")
# A chain name DWS_CHAINS does not list (the answer never names the configured ones: /donation/data does).
UNKNOWN_CHAIN = ApiError(1206, 404, "unknown chain")
INSUFFICIENT_TOKENS = ApiError(1300, 409, "not enough unstaked tokens")
STAKE_WHILE_UNSTAKING = ApiError(1301, 409, "tokens are being unstaked")
NOTHING_STAKED = ApiError(1302, 409, "no staked tokens")

ALL_ERRORS: tuple[ApiError, ...] = tuple(v for v in list(globals().values()) if isinstance(v, ApiError))


class ApiException(Exception):
    """Raised by services and views for an expected refusal; rendered as its numbered error."""

    def __init__(self, error: ApiError) -> None:
        self.error = error
        super().__init__(error.message)


def error_body(error: ApiError) -> dict[str, Any]:
    return {"code": error.code, "message": error.message}


def _error_for(exc: Exception) -> ApiError | None:
    if isinstance(exc, ApiException):
        return exc.error
    if isinstance(exc, db.OperationalError | db.InterfaceError):  # the connection, not the query
        return DATABASE_UNAVAILABLE
    if isinstance(exc, drf_exceptions.AuthenticationFailed | drf_exceptions.NotAuthenticated):
        return SIGNATURE_REJECTED
    if isinstance(exc, drf_exceptions.MethodNotAllowed):
        return METHOD_NOT_ALLOWED
    if isinstance(exc, drf_exceptions.UnsupportedMediaType):
        return UNSUPPORTED_MEDIA_TYPE
    if isinstance(exc, drf_exceptions.NotAcceptable):
        return NOT_ACCEPTABLE
    if isinstance(exc, drf_exceptions.NotFound):
        return NOT_FOUND
    if isinstance(exc, drf_exceptions.Throttled):
        return RATE_LIMITED
    if isinstance(exc, drf_exceptions.PermissionDenied):
        return FORBIDDEN
    if isinstance(exc, drf_exceptions.ParseError | drf_exceptions.ValidationError):
        return INVALID_REQUEST
    from django.http import Http404

    if isinstance(exc, Http404):
        return NOT_FOUND
    return None


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    """DRF's EXCEPTION_HANDLER: every exception becomes a numbered error; the detail stays in the log."""
    view = context.get("view")
    where = type(view).__name__ if view is not None else "?"
    error = _error_for(exc)
    if error is None:
        logger.error("unhandled error in %s", where, exc_info=exc)
        error = INTERNAL
    elif error.status >= 500:
        logger.warning("%s in %s: %s", error.code, where, exc)
    else:
        # Expected refusals: log the class only; validation details may echo attacker input.
        logger.info("%s in %s: %s", error.code, where, type(exc).__name__)
    response = Response(error_body(error), status=error.status)
    if isinstance(exc, drf_exceptions.AuthenticationFailed | drf_exceptions.NotAuthenticated):
        response["WWW-Authenticate"] = 'delphi-signature realm="delphi"'
    if error is DATABASE_UNAVAILABLE:
        response["Retry-After"] = "5"
    if isinstance(exc, drf_exceptions.Throttled):
        # djangorestframework-stubs 3.18 leave out `wait`, which Throttled.__init__ always sets.
        response["Retry-After"] = str(max(1, math.ceil(exc.wait or 1)))  # type: ignore[attr-defined]
    return response


def json_error(error: ApiError, **headers: str) -> JsonResponse:
    response = JsonResponse(error_body(error), status=error.status)
    for name, value in headers.items():
        response[name] = value
    return response


def handler404(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    return json_error(NOT_FOUND)


def handler500(request: HttpRequest) -> JsonResponse:
    # Django has already logged the exception (django.request) before calling this.
    return json_error(INTERNAL)


def handler400(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    return json_error(INVALID_REQUEST)


def handler403(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    return json_error(FORBIDDEN)
