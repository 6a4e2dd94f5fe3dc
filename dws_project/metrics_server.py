"""The worker's scrape endpoint: `/metrics` from a small HTTP server thread in the worker's main process.

Bound to loopback it answers anyone on the machine (the default). Bound elsewhere (a compose network, a
pod IP) it answers only a request carrying `Authorization: Bearer <DWS_METRICS_TOKEN>` (the
configuration refuses such a bind without a token): the worker's metrics name the provider's host, the
queues and the crawlers' positions, and nothing in front filters who reaches the port.
"""

from __future__ import annotations

import hmac
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

from dws_project.metrics_collectors import scrape_registry

logger = logging.getLogger("dws.metrics")

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, *_: object) -> None:  # every scrape would be a log line
        pass


def bearer_guard(application: WSGIApp, token: str) -> WSGIApp:
    """Answer 401 unless the request carries `Authorization: Bearer <token>` (compared in constant time)."""
    expected = f"Bearer {token}".encode()

    def guarded(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        given = environ.get("HTTP_AUTHORIZATION", "").encode("latin-1", "replace")
        if not hmac.compare_digest(given, expected):
            start_response("401 Unauthorized", [("Content-Type", "text/plain"), ("WWW-Authenticate", "Bearer")])
            return [b"unauthorized\n"]
        return application(environ, start_response)

    return guarded


def serve(port: int, host: str, token: str | None) -> ThreadingWSGIServer:
    """Start serving in a daemon thread; returns the server (tests stop it with shutdown())."""
    application: WSGIApp = make_wsgi_app(scrape_registry())
    if token:
        application = bearer_guard(application, token)
    server = make_server(host, port, application, ThreadingWSGIServer, handler_class=_QuietHandler)
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    logger.info("metrics served on http://%s:%d/metrics%s", host, port, " (bearer token required)" if token else "")
    return server
