"""Bad request bodies become numbered 400/413 answers, logged at WARNING, never a 500 and a traceback.

An oversized body (beyond API_MAX_BODY for delphi, whose bodies are a few dozen bytes; beyond
DATA_UPLOAD_MAX_MEMORY_SIZE for the admin's forms: Django's RequestDataTooBig), too many form fields, a
broken multipart upload: the middleware reads the body once, before any view, session or CSRF check
touches it, and answers for it. JSON bodies go through `GuardedJSONParser`, which refuses a document
nested deeper than MAX_JSON_DEPTH (counted in one pass without recursion, before the parser runs: deep
enough nesting overflows the C stack of the json module and kills the worker) and bytes that are not
UTF-8, with the same numbered 400.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import HttpRequest, HttpResponse
from django.http.multipartparser import MultiPartParserError
from rest_framework.parsers import JSONParser

from dws_project import api_errors
from dws_project.admin_access import is_admin_path
from dws_project.api_errors import ApiException
from dws_project.json_limits import json_depth

logger = logging.getLogger("dws.api")

_FORM_TYPES = ("multipart/form-data", "application/x-www-form-urlencoded")
# delphi's bodies are flat objects; nothing legitimate comes near this.
MAX_JSON_DEPTH = 32
# delphi's largest body ({"tx_hash": ..., "code": ...}) is about 100 bytes. The cap is taken before the
# body is read, let alone scanned; the admin keeps Django's DATA_UPLOAD_MAX_MEMORY_SIZE.
API_MAX_BODY = 4096


class RequestGuardMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        error = _read_body(request)
        if error is not None:
            logger.warning("%s on %s %s: %s", error.code, request.method, request.path_info, error.message)
            return api_errors.json_error(error)
        return self.get_response(request)


def _api_body_too_large(request: HttpRequest) -> bool:
    if is_admin_path(request.path_info):
        return False
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0) > API_MAX_BODY
    except ValueError:
        return False  # Django refuses a malformed length itself


def _read_body(request: HttpRequest) -> api_errors.ApiError | None:
    if _api_body_too_large(request):
        return api_errors.REQUEST_TOO_LARGE
    try:
        if request.META.get("CONTENT_LENGTH") not in (None, "", "0"):
            request.body  # noqa: B018 - reads once, bounded by DATA_UPLOAD_MAX_MEMORY_SIZE
            if len(request.body) > API_MAX_BODY and not is_admin_path(request.path_info):
                return api_errors.REQUEST_TOO_LARGE
        if request.method == "POST" and request.content_type in _FORM_TYPES:
            request.POST  # noqa: B018 - parse forms and uploads here, where a failure is answered
    except (RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent):
        return api_errors.REQUEST_TOO_LARGE
    except (MultiPartParserError, UnicodeDecodeError, ValueError):
        return api_errors.MALFORMED_BODY
    return None


class GuardedJSONParser(JSONParser):
    """DRF's JSON parser, with nesting and encoding failures as the numbered 400 (not a 500)."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Mapping[str, Any] | None = None) -> Any:
        raw = stream.read() if stream is not None else b""
        try:
            text = raw.decode(settings.DEFAULT_CHARSET)
        except UnicodeDecodeError:
            raise ApiException(api_errors.MALFORMED_BODY) from None
        if json_depth(text) > MAX_JSON_DEPTH:
            raise ApiException(api_errors.MALFORMED_BODY)
        try:
            return json.loads(text, parse_constant=_refuse_constant)
        except RecursionError:
            raise ApiException(api_errors.MALFORMED_BODY) from None
        except ValueError:
            raise ApiException(api_errors.INVALID_REQUEST) from None


def _refuse_constant(name: str) -> None:
    # NaN and Infinity are not JSON; DRF's own parser refuses them too (strict mode).
    raise ValueError(f"invalid JSON constant {name}")
