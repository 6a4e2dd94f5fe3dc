"""GET /openapi.json: the schema, built once per process.

Generating it walks every view and serializer (~35 ms of a sync worker); it only changes with the
code, which a new process brings, so the first request builds it and every later one reuses it.
"""

from __future__ import annotations

import threading
from typing import Any

from drf_spectacular.views import SpectacularJSONAPIView
from rest_framework.response import Response

_lock = threading.Lock()
_schema: dict[str, Any] | None = None


def forget_schema() -> None:
    """Drop the built schema (tests that change what it is built from)."""
    global _schema
    with _lock:
        _schema = None


class SchemaView(SpectacularJSONAPIView):
    def _get_schema_response(self, request: Any) -> Response:
        global _schema
        if _schema is None:
            with _lock:
                if _schema is None:
                    generator = self.generator_class(urlconf=self.urlconf, api_version=None, patterns=self.patterns)
                    _schema = generator.get_schema(request=request, public=self.serve_public)
        return Response(data=_schema, headers={"Content-Disposition": 'inline; filename="delphi.json"'})
