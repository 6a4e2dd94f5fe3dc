"""The crawlers' HTTP to their provider: one POST, one total deadline, a size cap, no redirect followed.

requests bounds each socket operation, not the request: a provider dripping a byte every few seconds
holds a crawler as long as it likes, it reads any body whole, and it follows a 307 with the same POST
(the API key and all) to wherever the Location points. Here a request (connecting, TLS, sending, the
headers and the body) ends by its deadline whatever blocks: a watchdog shuts the socket down when it
passes. The body is read up to the cap (past it the answer is refused, not truncated), and a redirect is
only its status. Connections stay open between requests (one per thread, as the proving threads post from
its own), so a crawl does not pay a TLS handshake per round trip; one the provider closed while it was
idle is noticed before it is used (as urllib3 does), and a new one is opened.
"""

from __future__ import annotations

import contextlib
import http.client
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from urllib.parse import urlsplit

import certifi


def _dropped(sock: socket.socket) -> bool:
    """Whether an idle kept connection was closed by the provider (readable with nothing asked: EOF)."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


class TransportError(Exception):
    """No (complete) answer. `kind`: timeout | too-large | connection; the text names no URL."""

    def __init__(self, kind: str, detail: str) -> None:
        self.kind = kind
        super().__init__(detail)


@dataclass(frozen=True)
class Reply:
    status: int
    retry_after: str | None
    body: bytes


@cache
def _ssl_context() -> ssl.SSLContext:
    return ssl.create_default_context(cafile=certifi.where())


class _Watchdog:
    """Calls `fire` once `seconds` have passed, unless cancelled first."""

    def __init__(self, seconds: float, fire: Callable[[], None]) -> None:
        self.fired = False
        self._fire = fire
        self._timer = threading.Timer(max(seconds, 0.0), self._run)
        self._timer.daemon = True
        self._timer.start()

    def _run(self) -> None:
        self.fired = True
        self._fire()

    def cancel(self) -> None:
        self._timer.cancel()


def _shut(connection: http.client.HTTPConnection) -> None:
    """Unblock whatever waits on the connection's socket (a send, a handshake, a read)."""
    sock = connection.sock
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


class BoundedPoster:
    """POSTs to one URL; safe to share between threads (each keeps its own connection)."""

    def __init__(self, url: str, *, connect_timeout: float, deadline: float, max_bytes: int) -> None:
        parts = urlsplit(url)
        self._tls = parts.scheme == "https"
        self._host = parts.hostname or ""
        self._port = parts.port or (443 if self._tls else 80)
        self._path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._connect_timeout = connect_timeout
        self.deadline = deadline
        self.max_bytes = max_bytes
        self._local = threading.local()

    def _connection(self) -> http.client.HTTPConnection:
        """This thread's connection: the kept one unless the provider closed it while it was idle."""
        kept: http.client.HTTPConnection | None = getattr(self._local, "connection", None)
        if kept is not None and kept.sock is not None and not _dropped(kept.sock):
            return kept
        self._drop()
        connection: http.client.HTTPConnection
        if self._tls:
            connection = http.client.HTTPSConnection(
                self._host, self._port, timeout=self._connect_timeout, context=_ssl_context()
            )
        else:
            connection = http.client.HTTPConnection(self._host, self._port, timeout=self._connect_timeout)
        self._local.connection = connection
        return connection

    def _drop(self) -> None:
        connection = getattr(self._local, "connection", None)
        self._local.connection = None
        if connection is not None:
            connection.close()

    def post(self, body: bytes) -> Reply:
        """One POST of a JSON body; raises TransportError. Connecting (with TLS) ends within the connect
        time-out, and from then on the request and its whole answer within the deadline."""
        connection = self._connection()
        try:
            if connection.sock is None:
                self._within(self._connect_timeout, connection, connection.connect)
            return self._exchange(connection, body, time.monotonic() + self.deadline)
        except TransportError:
            self._drop()
            raise
        except ssl.SSLCertVerificationError:
            self._drop()
            raise TransportError("connection", "TLS certificate not valid for the host") from None
        except (OSError, http.client.HTTPException, ValueError) as exc:
            self._drop()
            if isinstance(exc, TimeoutError | socket.timeout):
                raise TransportError("timeout", f"no answer within {self.deadline:g} s") from None
            raise TransportError("connection", f"connection failed ({type(exc).__name__})") from None

    @staticmethod
    def _within(seconds: float, connection: http.client.HTTPConnection, step: Callable[[], None]) -> None:
        """Connect (the TCP and TLS handshakes) under a watchdog of its own."""
        watchdog = _Watchdog(seconds, lambda: _shut(connection))
        try:
            step()
        except (OSError, http.client.HTTPException):
            if watchdog.fired:
                raise TransportError("timeout", f"no connection within {seconds:g} s") from None
            raise
        finally:
            watchdog.cancel()
        if watchdog.fired:
            raise TransportError("timeout", f"no connection within {seconds:g} s")

    def _exchange(self, connection: http.client.HTTPConnection, body: bytes, ends: float) -> Reply:
        watchdog = _Watchdog(ends - time.monotonic(), lambda: _shut(connection))
        try:
            sock = connection.sock
            if sock is not None:
                sock.settimeout(max(ends - time.monotonic(), 0.001))
            headers = {"Content-Type": "application/json", "Accept": "application/json"}
            connection.request("POST", self._path, body=body, headers=headers)
            response = connection.getresponse()
            content = response.read(self.max_bytes + 1)
            if watchdog.fired:
                raise TransportError("timeout", f"no complete answer within {self.deadline:g} s")
            if len(content) > self.max_bytes:
                raise TransportError("too-large", f"answer larger than {self.max_bytes} bytes")
            if not response.isclosed() or response.will_close:  # unread bytes left, or the provider closes
                self._drop()
            return Reply(response.status, response.getheader("Retry-After"), content)
        except (OSError, http.client.HTTPException):
            if watchdog.fired:
                raise TransportError("timeout", f"no complete answer within {self.deadline:g} s") from None
            raise
        finally:
            watchdog.cancel()
