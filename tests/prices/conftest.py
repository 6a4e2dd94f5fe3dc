"""A local HTTP server standing in for the six venues, serving their documented response shapes."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from dws_project.redis_client import get_redis
from prices.venues import VENUES

HANG_LIMIT_SECONDS = 20  # a hanging route gives up by itself after this, or when the test ends


@dataclass
class Reply:
    body: str = ""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False  # accept the request and never answer (until the test ends)
    delay: float = 0.0  # answer after this many seconds
    trickle: float = 0.0  # send the body one byte per this many seconds (each read stays "alive")


Route = Reply | Callable[[dict[str, str]], Reply]


@dataclass
class Hit:
    path: str
    query: dict[str, str]
    user_agent: str


class VenueServer:
    """One ThreadingHTTPServer on 127.0.0.1 (ephemeral port) serving every venue's paths."""

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.hits: list[Hit] = []
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                server.hits.append(Hit(parts.path, query, self.headers.get("User-Agent", "")))
                route = server.routes.get(parts.path)
                if route is None:
                    reply = Reply('{"error": "no such route in this test"}', status=404)
                else:
                    reply = route(query) if callable(route) else route
                if reply.hang:
                    server.release.wait(HANG_LIMIT_SECONDS)
                    return
                if reply.delay:
                    server.release.wait(reply.delay)
                payload = reply.body.encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                if reply.trickle:
                    for byte in payload:
                        if server.release.wait(reply.trickle):
                            return
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                    return
                self.wfile.write(payload)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def route(self, path: str, reply: Route) -> None:
        self.routes[path] = reply

    def hits_on(self, path: str) -> list[Hit]:
        return [hit for hit in self.hits if hit.path == path]

    def urls(self) -> dict[str, str]:
        """Every venue's base URL pointed at this server (what DWS_VENUE_<NAME>_URL would do)."""
        return {venue.name: self.url for venue in VENUES}

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def venue_server() -> Iterator[VenueServer]:
    server = VenueServer()
    yield server
    server.close()


@pytest.fixture(autouse=True)
def _no_rate_limit_pauses() -> Iterator[None]:
    """Rate-limit pauses live in Redis (shared by all workers); each test starts without any."""

    def clear() -> None:
        redis = get_redis()
        for key in redis.scan_iter("dws:venue-pause:*"):
            redis.delete(key)

    clear()
    yield
    clear()
