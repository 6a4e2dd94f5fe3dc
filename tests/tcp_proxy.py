"""A TCP proxy the test controls, in front of a real server (PostgreSQL): `cut()` drops every open
connection and refuses new ones, as a server that went away or a network partition does; `restore()` lets
connections through again. The shared server itself is never stopped (other test runs use it)."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

from tests.chain import free_port


class TcpProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = free_port()
        self._open = threading.Event()
        self._open.set()
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self.upstream_ports: set[int] = set()  # our side of every connection made to the server
        self._listener = socket.create_server(("127.0.0.1", self.port), reuse_port=False)
        self._listener.settimeout(0.2)
        self._thread = threading.Thread(target=self._accept, name="tcp-proxy", daemon=True)

    def start(self) -> TcpProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._drop_all()
        self._thread.join(timeout=5)
        self._listener.close()

    def cut(self) -> None:
        """The server is gone: open connections are reset, new ones refused (closed at once)."""
        self._open.clear()
        self._drop_all()

    def restore(self) -> None:
        self._open.set()

    def __enter__(self) -> TcpProxy:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    # --- plumbing ---------------------------------------------------------------------------------
    def _drop_all(self) -> None:
        with self._lock:
            sockets, self._sockets = self._sockets, set()
        for sock in sockets:
            # shutdown first: it wakes the pump blocked in recv on it (a bare close would wait for that
            # call, and the server would never hear of the drop)
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if not self._open.is_set():
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._sockets |= {client, upstream}
                self.upstream_ports.add(upstream.getsockname()[1])
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            for chunk in iter(lambda: source.recv(65536), b""):
                sink.sendall(chunk)
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


@contextlib.contextmanager
def postgres_proxy() -> Iterator[TcpProxy]:
    """A proxy in front of the test database's server; on exit, waits until the server has ended every
    session that came through it (the test database is dropped at the end of the run)."""
    import time

    from django.conf import settings
    from django.db import connection

    db = settings.DATABASES["default"]
    with TcpProxy(str(db["HOST"] or "127.0.0.1"), int(str(db["PORT"] or 5432))) as proxy:
        yield proxy
    deadline = time.monotonic() + 10
    while proxy.upstream_ports and time.monotonic() < deadline:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE client_port = ANY(%s)", [sorted(proxy.upstream_ports)]
            )
            (left,) = cursor.fetchone()
        if not left:
            return
        time.sleep(0.1)
