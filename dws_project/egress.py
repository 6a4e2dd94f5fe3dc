"""Outbound HTTP to hosts others control (webhook receivers, exchanges): one request, one hard deadline.

`request()` resolves the host once, checks every address it resolved to (for webhooks: all must be
public, `destination_addresses`), connects to a checked address itself, and runs the exchange under a
watchdog that shuts the socket down at the deadline, whatever is blocking on it. The answer is read up
to a cap; redirects are never followed (a 3xx is just the status).

Why not requests: it resolves the name again when it connects (a DNS answer that changes between the
check and the connection — no rebinding trick needed — reaches a private address), and its time-outs are
per socket operation, so a peer dripping a byte a second holds it for as long as it likes. http.client
lets us hand it the connected socket; TLS still sends SNI for the name and verifies the certificate
against it (`ssl_context`), not against the address.
"""

from __future__ import annotations

import contextlib
import http.client
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from urllib.parse import urlsplit

import certifi

from dws_project.ip import IPAddress, normalize_ip

Resolver = Callable[[str, int], list[str]]


class EgressError(Exception):
    """The request gave no answer; the message is short and safe to log or store (no URL, no secret)."""


class EgressRefused(EgressError):
    """The destination is not one we may talk to (not http(s), or an address that is not public)."""


class EgressTimeout(EgressError):
    """The deadline passed before the answer was complete."""


class EgressTooLarge(EgressError):
    """The answer was longer than the caller's cap."""


@dataclass(frozen=True)
class Reply:
    status: int
    headers: Mapping[str, str] = field(default_factory=dict)  # names lower case
    body: bytes = b""


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address a 6to4, Teredo or NAT64 (64:ff9b::/96) address carries, if any."""
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in ipaddress.ip_network("64:ff9b::/96"):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def is_public(ip: IPAddress) -> bool:
    """A unicast address on the public internet (not private, loopback, link-local — the cloud metadata
    service at 169.254.169.254 —, shared, reserved, multicast), also behind an IPv6 wrapping."""
    if not ip.is_global or ip.is_multicast:
        return False
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_ipv4(ip)
        return inner is None or is_public(inner)
    return True


def _system_resolver(host: str, port: int) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise EgressError("the host name does not resolve") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def destination_addresses(
    host: str, port: int, *, public_only: bool, allow_loopback: bool = False, resolver: Resolver | None = None
) -> list[IPAddress]:
    """The addresses `host` resolves to, every one checked; EgressRefused names the first refused one.

    A name with one private address among public ones is refused whole: which one a connection would
    get is the resolver's choice, not ours."""
    found = []
    for text in (resolver or _system_resolver)(host, port):
        ip = normalize_ip(text.split("%", 1)[0])  # a zone id (fe80::1%eth0) is no public address anyway
        if ip is None:
            raise EgressRefused("the host name resolves to something that is not an address")
        if public_only and not is_public(ip) and not (allow_loopback and ip.is_loopback):
            raise EgressRefused(f"refused: {ip} is not a public address")
        found.append(ip)
    if not found:
        raise EgressError("the host name does not resolve")
    return found


def check_url(url: str, *, allow_loopback: bool = False, resolver: Resolver | None = None) -> None:
    """Raise EgressRefused/EgressError unless `url` is http(s) and its host resolves to public addresses
    only (what a webhook endpoint must satisfy when saved, and again at every send)."""
    host, port, _, _ = _target(url)
    destination_addresses(host, port, public_only=True, allow_loopback=allow_loopback, resolver=resolver)


@cache
def default_ssl_context() -> ssl.SSLContext:
    """Certificates checked against certifi's roots (the bundle requests uses) and the URL's host name."""
    return ssl.create_default_context(cafile=certifi.where())


def _target(url: str) -> tuple[str, int, bool, str]:
    """(host, port, tls, path with query) of an http(s) URL."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise EgressRefused("refused: not a valid URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EgressRefused("refused: not an http(s) URL")
    tls = parts.scheme == "https"
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.hostname, port or (443 if tls else 80), tls, path


class _Watchdog:
    """Shuts a socket down when the deadline passes; a blocked send, handshake or read then returns."""

    def __init__(self, sock: socket.socket, seconds: float) -> None:
        self.fired = False
        self._sock = sock
        self._timer = threading.Timer(max(seconds, 0.0), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        self.fired = True
        with contextlib.suppress(OSError):  # already closed
            self._sock.shutdown(socket.SHUT_RDWR)

    def cancel(self) -> None:
        self._timer.cancel()


class _ConnectedHTTP(http.client.HTTPConnection):
    """http.client over a socket we connected (and wrapped in TLS) ourselves."""

    def __init__(self, host: str, port: int, sock: socket.socket) -> None:
        super().__init__(host, port)
        self.sock = sock

    def connect(self) -> None:  # pragma: no cover - the socket is always given
        raise http.client.NotConnected("a pinned connection cannot reconnect")


def _connect(addresses: list[IPAddress], port: int, deadline: float) -> socket.socket:
    for ip in addresses:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        try:
            return socket.create_connection((str(ip), port), timeout=remaining)
        except OSError:
            continue
    if time.monotonic() >= deadline:
        raise EgressTimeout("time-out")
    raise EgressError("connection refused")


def request(
    method: str,
    url: str,
    *,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float,
    max_bytes: int,
    public_only: bool,
    allow_loopback: bool = False,
    resolver: Resolver | None = None,
    ssl_context: ssl.SSLContext | None = None,
) -> Reply:
    """One HTTP exchange that ends within `timeout` seconds in all (resolving, connecting, TLS, sending,
    the answer). The body is read up to `max_bytes` (0: not at all). Raises EgressError (and its kinds)."""
    deadline = time.monotonic() + timeout
    host, port, tls, path = _target(url)
    addresses = destination_addresses(
        host, port, public_only=public_only, allow_loopback=allow_loopback, resolver=resolver
    )
    raw = _connect(addresses, port, deadline)
    watchdog = _Watchdog(raw, deadline - time.monotonic())
    sock: socket.socket = raw
    try:
        raw.settimeout(max(deadline - time.monotonic(), 0.001))
        if tls:
            sock = (ssl_context or default_ssl_context()).wrap_socket(raw, server_hostname=host)
        connection = _ConnectedHTTP(host, port, sock)
        connection.request(method, path, body=body, headers={"Connection": "close", **(headers or {})})
        response = connection.getresponse()
        content = b""
        if max_bytes > 0:
            content = response.read(max_bytes + 1)
            if len(content) > max_bytes:
                raise EgressTooLarge(f"answer larger than {max_bytes} bytes")
        if watchdog.fired:
            raise EgressTimeout("time-out")  # the socket was shut mid-answer: what was read is partial
        if max_bytes > 0 and response.length:
            raise EgressError("the answer was cut short")  # fewer bytes than its Content-Length said
        return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, content)
    except EgressError:
        raise
    except ssl.SSLCertVerificationError:
        raise EgressError("TLS certificate not valid for the host") from None
    except (OSError, http.client.HTTPException, ValueError) as exc:
        if watchdog.fired or isinstance(exc, TimeoutError | socket.timeout):
            raise EgressTimeout("time-out") from None
        raise EgressError(f"connection failed ({type(exc).__name__})") from None
    finally:
        watchdog.cancel()
        with contextlib.suppress(OSError):
            sock.close()
