"""A fault-injecting JSON-RPC proxy: a real HTTP server in front of a node (anvil).

Faults are armed per JSON-RPC method and for a number of matching requests (None: until disarmed):

* ``null``    the method's result is replaced by null
* ``error``   the method's answer is a JSON-RPC error object (code and message of your choice)
* ``rewrite`` the method's result is passed through a function (a lying provider)
* ``status``  the whole HTTP reply is that status (429 carries ``Retry-After``)
* ``hang``    the reply is delayed by ``seconds`` (past the client's time-out)
* ``drop``    the connection is closed without a reply
* ``huge``    the reply is a valid JSON-RPC answer padded to ``size`` bytes (an answer past the client's cap)
* ``deep``    the reply's result is nested ``size`` arrays deep (json's recursion limit, as a lying node)
* ``drip``    the reply's headers come at once, then its body one byte every ``seconds`` (each read is
              quicker than the client's read time-out; only a total deadline ends it)
* ``redirect`` the reply is a 307 to ``location`` (a client that follows it re-POSTs elsewhere)

Element faults (null, error, rewrite) hit the matching elements of a batch; transport faults (status,
hang, drop, huge, deep, drip, redirect) hit the whole HTTP request when any element matches.
``method="*"`` matches everything,
``method="debug_*"`` every method of a namespace. Ready-made provider behaviours: ``lag_logs`` (a
load-balanced node that has not indexed the newest blocks answers them without logs), ``refuse_traces``
(a provider without any trace method) and ``amend_receipts`` (a rollup node's receipt fields anvil does
not write).
Every HTTP request is logged (path and the methods in it), so tests can count round trips and check
that a back-off really stopped the traffic; ``most_in_flight`` is the most requests it was ever
answering at once (a client's concurrency bound, seen from the provider's side). A ``hang`` sleeps in
its request's own thread, so the delays of concurrent requests overlap as a real provider's latency does.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

import requests

from tests.chain import free_port


@dataclass
class Fault:
    method: str
    kind: str
    count: int | None = 1
    code: int = -32000
    message: str = "injected failure"
    status: int = 429
    retry_after: int | None = 2
    seconds: float = 0.0
    size: int = 0  # huge: bytes of the reply; deep: levels of nesting
    location: str = ""  # redirect: where the 307 points
    rewrite: Callable[[Any, list], Any] | None = None  # (result, params) -> result
    when: Callable[[list], bool] | None = None  # only requests whose params match
    used: int = 0
    used_at: list[float] = field(default_factory=list)  # time.monotonic() of each use

    def matches(self, request: dict) -> bool:
        if self.count is not None and self.used >= self.count:
            return False
        method = str(request.get("method"))
        if self.method.endswith("*") and len(self.method) > 1:  # "debug_*": every method of that namespace
            if not method.startswith(self.method[:-1]):
                return False
        elif self.method not in ("*", method):
            return False
        return self.when is None or self.when(request.get("params") or [])


# Methods whose answer about a fixed block never changes: a proxy memoizing them replays a chain (the
# benchmarks' "provider that answers at once").
REPLAYABLE = frozenset(
    {
        "eth_getBlockByNumber",
        "eth_getLogs",
        "eth_getTransactionReceipt",
        "eth_getBalance",
        "eth_getTransactionCount",
        "eth_call",
        "eth_getCode",
        "eth_getStorageAt",
        "debug_traceBlockByNumber",
        "trace_block",
        "trace_filter",
    }
)

TRANSPORT_FAULTS = ("status", "hang", "drop", "huge", "deep", "drip", "redirect")
_MOVING_TAGS = ("latest", "finalized", "safe", "pending", "earliest")


def _fixed(request: dict) -> bool:
    """Whether the answer cannot change over time (no moving block tag in the params)."""
    return not any(p in _MOVING_TAGS for p in request.get("params") or [] if isinstance(p, str))


@dataclass
class Seen:
    path: str
    methods: list[str] = field(default_factory=list)
    at: float = field(default_factory=time.monotonic)  # when the request arrived
    calls: list[list] = field(default_factory=list)  # [method, params] of each request in it
    peer: tuple[str, int] | None = None  # the client's address and port: one per TCP connection


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return  # a client that stopped reading (an answer past its cap) and closed: nothing wrong here
        super().handle_error(request, client_address)


class RpcProxy:
    def __init__(self, upstream: str, *, port: int | None = None, memoize: frozenset[str] = frozenset()) -> None:
        self.upstream = upstream
        # Methods whose answers are kept and served again from memory (benchmarks: a fast provider).
        self.memoize = memoize
        self._memo: dict[str, dict] = {}
        self.port = port or free_port()
        self.faults: list[Fault] = []
        self.seen: list[Seen] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self._lock = threading.Lock()
        self._upstream = requests.Session()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in separate writes: with Nagle's algorithm on, the body waits for
            # the client's delayed ACK (~40 ms a reply), which is the proxy's cost, not the provider's.
            disable_nagle_algorithm = True

            def log_message(self, *_: object) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                proxy._handle(self, body)

        self._server = _Server(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    # --- arming --------------------------------------------------------------------------------
    def arm(self, method: str, kind: str, count: int | None = 1, **options: Any) -> Fault:
        fault = Fault(method=method, kind=kind, count=count, **options)
        with self._lock:
            self.faults.append(fault)
        return fault

    def lag_logs(self, first_missing: Callable[[], int], count: int | None = None) -> Fault:
        """eth_getLogs answers leave out every log of block `first_missing()` and later (a lagging node)."""

        def behind(logs: Any, params: list) -> Any:
            if not isinstance(logs, list):
                return logs
            return [log for log in logs if int(log["blockNumber"], 16) < first_missing()]

        return self.arm("eth_getLogs", "rewrite", count=count, rewrite=behind)

    def amend_receipts(self, fields: dict[str, dict[str, Any]]) -> Fault:
        """eth_getTransactionReceipt answers for the transactions named (by hash) gain (or replace) these
        fields, until disarmed: what an OP-stack or Arbitrum node writes that anvil does not (`l1Fee`, the
        operator fee scalars, `gasUsedForL1`), or a corrupt value. `fields` may grow after arming."""

        def amend(receipt: Any, params: list) -> Any:
            extra = fields.get(str(params[0]).lower()) if params else None
            return {**receipt, **extra} if isinstance(receipt, dict) and extra else receipt

        return self.arm("eth_getTransactionReceipt", "rewrite", count=None, rewrite=amend)

    def refuse_traces(self) -> list[Fault]:
        """Every debug_* and trace_* method answers "method not found" (code -32601), until disarmed."""
        return [
            self.arm(namespace, "error", count=None, code=-32601, message="the method does not exist/is not available")
            for namespace in ("debug_*", "trace_*")
        ]

    def forget_answers(self) -> None:
        """Drop the memoized answers: the next requests go upstream again."""
        with self._lock:
            self._memo.clear()

    def disarm(self) -> None:
        with self._lock:
            self.faults.clear()

    def requests_for(self, method: str) -> int:
        return sum(s.methods.count(method) for s in self.seen)

    # --- serving -------------------------------------------------------------------------------
    def _take(self, request: dict, kinds: tuple[str, ...]) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if fault.kind in kinds and fault.matches(request):
                    fault.used += 1
                    fault.used_at.append(time.monotonic())
                    return fault
        return None

    def _forward(self, batch: list[dict]) -> dict[Any, dict]:
        """Upstream's answers by request id; memoized methods are asked only once per params."""
        keys = {r.get("id"): json.dumps([r.get("method"), r.get("params")]) for r in batch if _fixed(r)}
        by_id = {}
        missing = []
        for request in batch:
            key = keys.get(request.get("id"))
            cached = self._memo.get(key) if key and request.get("method") in self.memoize else None
            if cached is not None:
                by_id[request.get("id")] = {**cached, "id": request.get("id")}
            else:
                missing.append(request)
        if missing:
            for reply in self._upstream.post(self.upstream, json=missing, timeout=120).json():
                by_id[reply.get("id")] = reply
                key = keys.get(reply.get("id"))
                if key and json.loads(key)[0] in self.memoize and reply.get("result") is not None:
                    self._memo[key] = reply
        return by_id

    def _misbehave(self, handler: BaseHTTPRequestHandler, fault: Fault, payload: Any) -> None:
        """An answer no client should take whole: oversized, too deep, dripped, or a redirect."""
        first = payload[0] if isinstance(payload, list) else payload
        if fault.kind == "redirect":
            handler.send_response(307)
            handler.send_header("Location", fault.location)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        if fault.kind == "deep":
            data = b'{"jsonrpc":"2.0","id":' + json.dumps(first.get("id")).encode() + b',"result":'
            data += b"[" * fault.size + b"]" * fault.size + b"}"
        else:
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": first.get("id"), "result": "0x1"}
            if fault.kind == "huge":
                reply["padding"] = "x" * fault.size
            data = json.dumps([reply] if isinstance(payload, list) else reply).encode()
        try:
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            if fault.kind != "drip":
                handler.wfile.write(data)
                return
            for byte in data:
                handler.wfile.write(bytes([byte]))
                handler.wfile.flush()
                time.sleep(fault.seconds)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up: what it should do

    def _handle(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        with self._lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            self._answer(handler, body)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _answer(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        payload = json.loads(body)
        batch = payload if isinstance(payload, list) else [payload]
        with self._lock:
            calls = [[r.get("method"), r.get("params")] for r in batch]
            self.seen.append(
                Seen(handler.path, [r.get("method") for r in batch], calls=calls, peer=handler.client_address[:2])
            )
        transport = None
        for request in batch:
            transport = self._take(request, TRANSPORT_FAULTS)
            if transport:
                break
        if transport and transport.kind in ("huge", "deep", "drip", "redirect"):
            self._misbehave(handler, transport, batch if isinstance(payload, list) else batch[0])
            return
        if transport and transport.kind == "drop":
            handler.close_connection = True
            handler.connection.shutdown(2)  # socket.SHUT_RDWR: no reply at all
            return
        if transport and transport.kind == "status":
            data = json.dumps({"error": "injected"}).encode()
            handler.send_response(transport.status)
            if transport.retry_after is not None:
                handler.send_header("Retry-After", str(transport.retry_after))
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
            return
        if transport and transport.kind == "hang":
            time.sleep(transport.seconds)
        by_id = self._forward(batch)
        out = []
        for request in batch:
            reply = dict(by_id[request.get("id")])
            fault = self._take(request, ("null", "error", "rewrite"))
            if fault and fault.kind == "null":
                reply.pop("error", None)
                reply["result"] = None
            elif fault and fault.kind == "error":
                reply.pop("result", None)
                reply["error"] = {"code": fault.code, "message": fault.message}
            elif fault and fault.kind == "rewrite" and "result" in reply:
                reply["result"] = fault.rewrite(reply["result"], request.get("params") or [])
            out.append(reply)
        data = json.dumps(out if isinstance(payload, list) else out[0]).encode()
        try:
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its time-out); nothing to deliver
