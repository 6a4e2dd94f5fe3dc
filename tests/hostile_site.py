"""Sites for the public verifier's tests (deploy/verify_proof.py): a man in the middle that rewrites an honest
site's answers (`TamperingSite`), and a site that answers from a script of its own (`ScriptedSite`) with the
transport faults a hostile sale can serve (a hang, an answer dripped a byte at a time, an endless or deeply
nested answer, a 429 with a Retry-After that is no number); `run_verifier` runs the verifier as a donor
would, in a Python without the project's packages."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Self

import requests

VERIFIER = Path(__file__).resolve().parents[1] / "deploy" / "verify_proof.py"


def run_verifier(site: str, rpc: str, *extra: str, timeout: float = 180) -> subprocess.CompletedProcess:
    # -I -S: no site-packages and no environment, so anything beyond the standard library fails to import.
    return subprocess.run(
        [sys.executable, "-I", "-S", str(VERIFIER), "--site", site, "--rpc", rpc, *extra],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def verify_site(site: str, rpc: str, *extra: str, timeout: float = 180) -> subprocess.CompletedProcess:
    """The verifier against a site this test run serves (or one in front of it): the donation CSV built first,
    as the task keeps it (every 10 s) after the crawls."""
    from donations.export import proof_csv_refresh

    proof_csv_refresh()
    return run_verifier(site, rpc, *extra, timeout=timeout)


def verifier_module(name: str) -> ModuleType:
    """The verifier loaded as a module (it cannot import project code, nor be imported by its path)."""
    spec = importlib.util.spec_from_file_location(name, VERIFIER)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def lie_about(first_block: int, change: Callable[[dict], None], csv_without: str | None = None):
    """A rewrite for TamperingSite: /proof.json with the range starting at `first_block` changed by `change`
    (it gets the range itself; setting "drop" in it leaves the range out), and perhaps every CSV row of the
    transaction `csv_without` gone."""

    def rewrite(path: str, body: bytes) -> bytes:
        if path.startswith("/proof/donations.csv") and csv_without:
            return b"".join(line for line in body.splitlines(keepends=True) if csv_without.encode() not in line)
        if not path.startswith("/proof.json"):
            return body
        answer = json.loads(body)
        ranges = answer["chains"][0]["ranges"]
        for found in list(ranges):
            if found["first_block"] == first_block:
                change(found)
                if found.get("drop"):
                    ranges.remove(found)
        return json.dumps(answer).encode()

    return rewrite


def shift(found: dict, asset: str, **deltas: int) -> None:
    """Move a range's published figures of `asset` by `deltas` (raw units; `donations` a count)."""
    figures = next(a for a in found["assets"] if a["asset"] == asset)
    for name, delta in deltas.items():
        figures[name] = figures[name] + delta if name == "donations" else str(int(figures[name]) + delta)


class _Server:
    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        # A port the kernel picks as it binds: no window in which another test's server can take it.
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()


class TamperingSite(_Server):
    """The site as a man in the middle (or a dishonest operator) would serve it: every GET goes to the real
    site and `rewrite(path, body)` may change the answer."""

    def __init__(self, upstream: str, rewrite: Callable[[str, bytes], bytes]) -> None:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: object) -> None:
                pass

            def do_GET(self) -> None:
                answer = requests.get(upstream + self.path, timeout=30)
                body = rewrite(self.path, answer.content)
                self.send_response(answer.status_code)
                self.send_header("Content-Type", answer.headers.get("Content-Type", "application/octet-stream"))
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        super().__init__(Handler)


class ScriptedSite(_Server):
    """A site whose every GET is answered by `answer(handler)`; `stop` ends the drips and hangs at exit."""

    def __init__(self, answer: Callable[[BaseHTTPRequestHandler], None]) -> None:
        self.stop = threading.Event()
        self.requests: list[str] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # the answer ends when the connection closes

            def log_message(self, *_: object) -> None:
                pass

            def do_GET(self) -> None:
                site.requests.append(self.path)
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the verifier gave up: as meant
                    answer(self)

        super().__init__(Handler)

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        super().__exit__(*exc)

    # --- ready-made answers --------------------------------------------------------------------------
    def hang(self, handler: BaseHTTPRequestHandler) -> None:
        self.stop.wait(120)

    def drip(self, handler: BaseHTTPRequestHandler, every: float = 0.3) -> None:
        """A 200 whose body comes a byte at a time, each well inside any per-read time-out, for ever."""
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", "1000000")
        handler.end_headers()
        handler.wfile.write(b'{"chains": [')
        handler.wfile.flush()
        while not self.stop.wait(every):
            handler.wfile.write(b" ")
            handler.wfile.flush()

    def endless(self, handler: BaseHTTPRequestHandler, size: int = 100 * 2**20) -> None:
        """A 200 of `size` bytes of white space before a JSON value, without a Content-Length."""
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.end_headers()
        chunk, sent = b" " * 2**20, 0
        started = time.monotonic()
        while sent < size and not self.stop.is_set() and time.monotonic() - started < 60:
            handler.wfile.write(chunk)
            sent += len(chunk)
        handler.wfile.write(b'{"chains": []}')

    @staticmethod
    def body(handler: BaseHTTPRequestHandler, body: bytes, status: int = 200, **headers: str) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            handler.send_header(name.replace("_", "-"), value)
        handler.end_headers()
        handler.wfile.write(body)
