"""What a client may not tell the web process about itself: its script name, its scheme.

Two request values come from headers only a proxy should set, and both reach rules:

- `SCRIPT_NAME`: gunicorn takes it from a `SCRIPT_NAME` header (from any peer in its
  `forwarded_allow_ips`, loopback by default; TLS proxies on the same host pass underscored headers
  through) and strips it from the path. `/x/admin/login/` with `SCRIPT_NAME: /x` was then the admin
  to Django's router and `/x/admin/login/` to every rule that read `request.path`. dws is always
  served at the root: the script name is put back into the path, so the request goes where its URL
  says (deploy/gunicorn.conf.py also stops gunicorn from honouring the header at all).
- `X-Forwarded-Proto` (and its two siblings): Django's SECURE_PROXY_SSL_HEADER believes whoever sends
  it; only a peer in DWS_TRUSTED_PROXIES may.

This is a WSGI wrapper (dws_project/wsgi.py) rather than a Django middleware because Django fixes
`request.path` and the script prefix for `reverse()` before the first middleware runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any
from urllib.parse import unquote_to_bytes

from dws_project.ip import IPNetwork, in_networks

SCHEME_HEADERS = ("HTTP_X_FORWARDED_PROTO", "HTTP_X_FORWARDED_PROTOCOL", "HTTP_X_FORWARDED_SSL")

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def sanitize_environ(environ: dict[str, Any], trusted_proxies: Sequence[IPNetwork]) -> None:
    """Undo a client's script name and drop scheme headers an untrusted peer sent, in place."""
    script_name = environ.get("SCRIPT_NAME", "")
    if script_name:
        # PATH_INFO is already unquoted (latin-1, as WSGI wants); the script name is put back the same way.
        environ["PATH_INFO"] = unquote_to_bytes(script_name).decode("latin-1") + environ.get("PATH_INFO", "")
        environ["SCRIPT_NAME"] = ""
    if not in_networks(environ.get("REMOTE_ADDR"), trusted_proxies):
        for header in SCHEME_HEADERS:
            environ.pop(header, None)


def forwarded_headers_guard(application: WSGIApp, trusted_proxies: Callable[[], Sequence[IPNetwork]]) -> WSGIApp:
    def guarded(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        sanitize_environ(environ, trusted_proxies())
        return application(environ, start_response)

    return guarded
