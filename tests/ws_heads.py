"""A WebSocket provider of `newHeads` the test scripts, beside the node's HTTP provider: it answers
`eth_subscribe` with a subscription of its own, then pushes heads as told, the node's current head each time:

* ``silent`` pushes nothing, the connection kept open and answering pings (a subscription the provider's
  side dropped, behind a load balancer that keeps the socket)
* ``flood`` pushes the node's head ``per_second`` times a second, each head over and over (a provider that
  repeats its heads, or several subscriptions' messages on one socket)
* ``climb`` pushes a new head ``per_second`` times a second, one past the last (a chain of fast blocks)

`pushed` counts the heads sent."""

from __future__ import annotations

import json
import threading
import time
from typing import Self

from websockets.exceptions import ConnectionClosed
from websockets.sync.server import ServerConnection, serve

from tests.chain import Anvil, free_port

SUBSCRIPTION = "0x9ce59a13059e417087c02d3236a0b1cc"


class HeadsPusher:
    def __init__(self, node: Anvil, mode: str, *, per_second: float = 200.0) -> None:
        assert mode in ("silent", "flood", "climb")
        self.node = node
        self.mode = mode
        self.per_second = per_second
        self.pushed = 0
        self.port = free_port()
        self._stop = threading.Event()
        self._server = serve(self._serve, "127.0.0.1", self.port, compression=None)
        self._thread = threading.Thread(target=self._server.serve_forever, name="ws-heads", daemon=True)

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._server.shutdown()
        self._thread.join(timeout=10)

    def _serve(self, socket: ServerConnection) -> None:
        request = json.loads(socket.recv())
        socket.send(json.dumps({"jsonrpc": "2.0", "id": request.get("id"), "result": SUBSCRIPTION}))
        try:
            if self.mode == "silent":
                self._stop.wait()
                return
            while not self._stop.is_set():
                head = self.node.block("latest")
                number = int(head["number"], 16) + (self.pushed + 1 if self.mode == "climb" else 0)
                header = {"number": hex(number), "hash": head["hash"], "timestamp": head["timestamp"]}
                params = {"subscription": SUBSCRIPTION, "result": header}
                socket.send(json.dumps({"jsonrpc": "2.0", "method": "eth_subscription", "params": params}))
                self.pushed += 1
                time.sleep(1 / self.per_second)
        except ConnectionClosed:
            return
