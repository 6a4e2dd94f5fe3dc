"""A real HTTP webhook receiver for tests: answers from a script (500, a stall, a drip, a hold, 200) and
records requests; and `registered_endpoint`, the endpoint row that sends to one."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from donations.webhook_models import WebhookEndpoint


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    answered: str  # what the script made the receiver do


@dataclass
class Receiver:
    url: str
    # One entry per request, in order: "500", "stall" (answer after `stall_seconds`), "drip" (the answer one
    # byte per `drip_seconds`, each byte inside any per-read time-out), "hold" (answer 200 once `release` is
    # set, or after `hold_seconds`) or "200"; then "200".
    script: list[str] = field(default_factory=list)
    requests: list[Received] = field(default_factory=list)
    stall_seconds: float = 3.0
    drip_seconds: float = 0.5
    hold_seconds: float = 20.0
    release: threading.Event = field(default_factory=threading.Event)
    # Called with each request as it arrives, before it is answered (e.g. to look at the database then).
    on_request: Callable[[Received], None] | None = None

    def accepted(self) -> list[Received]:
        return [r for r in self.requests if r.answered == "200"]


def registered_endpoint(url: str, events: list[str], *, secret: str, active: bool = True) -> WebhookEndpoint:
    """An endpoint row, its secret sealed by the model's `secret` setter (the column is `sealed_secret`;
    create() would take the property as a keyword too, but only the fields are typed as its keywords)."""
    endpoint = WebhookEndpoint(url=url, events=events, active=active)
    endpoint.secret = secret
    endpoint.save()
    return endpoint


@contextmanager
def webhook_receiver(script: list[str] | None = None) -> Iterator[Receiver]:
    state = Receiver(url="", script=list(script or []))
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            with lock:
                action = state.script.pop(0) if state.script else "200"
                received = Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body, action)
                state.requests.append(received)
            if state.on_request is not None:
                state.on_request(received)
            if action == "drip":
                try:
                    for byte in b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok":
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        time.sleep(state.drip_seconds)
                except OSError:
                    pass  # the sender hung up at its deadline
                return
            if action == "hold":
                state.release.wait(state.hold_seconds)
                action = "200"
            if action == "stall":
                time.sleep(state.stall_seconds)
                action = "200"  # too late: the sender has given up on this attempt
            code = int(action)
            try:
                self.send_response(code)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"ok")
            except OSError:
                pass  # the sender hung up after its time-out

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hooks/dws"
    try:
        yield state
    finally:
        state.release.set()
        server.shutdown()
        server.server_close()
