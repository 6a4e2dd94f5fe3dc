"""dws_project.egress: the one outbound HTTP path for receivers and exchanges we do not control.

A name is resolved once and every address checked; the connection goes to the checked address while TLS
still sends SNI for the name and verifies the certificate against it; redirects are answers, not
followed; the answer is capped; one deadline covers the whole exchange."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from dws_project import egress


def _certificate(name: str, issuer_key, issuer_name, key, *, ca: bool) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if not ca:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> dict[str, Path]:
    """A CA, and a server certificate it signed for receiver.test."""
    folder = tmp_path_factory.mktemp("pki")
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "dws test CA")])
    ca = _certificate("dws test CA", ca_key, ca_name, ca_key, ca=True)
    server_key = ec.generate_private_key(ec.SECP256R1())
    server = _certificate("receiver.test", ca_key, ca_name, server_key, ca=False)
    paths = {"ca": folder / "ca.pem", "cert": folder / "server.pem", "key": folder / "server.key"}
    paths["ca"].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths["cert"].write_bytes(server.public_bytes(serialization.Encoding.PEM))
    paths["key"].write_bytes(
        server_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return paths


@contextmanager
def https_server(pki: dict[str, Path], answer: tuple[int, dict[str, str], bytes]) -> Iterator[dict]:
    seen: dict = {"sni": [], "hosts": []}
    status, headers, body = answer

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen["hosts"].append(self.headers.get("Host"))
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_POST = do_GET

        def log_message(self, *_: object) -> None:
            pass

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki["cert"], pki["key"])
    context.sni_callback = lambda sock, name, ctx: seen["sni"].append(name)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    seen["port"] = server.server_address[1]
    try:
        yield seen
    finally:
        server.shutdown()
        server.server_close()


def trusting(pki: dict[str, Path]) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(pki["ca"]))


def fetch(pki: dict[str, Path], url: str, *, method: str = "GET", max_bytes: int = 100, **options) -> egress.Reply:
    """egress.request to the local TLS server, whatever name `url` uses (it resolves to 127.0.0.1)."""
    options.setdefault("public_only", False)
    options.setdefault("resolver", lambda host, port: ["127.0.0.1"])
    return egress.request(method, url, timeout=10, max_bytes=max_bytes, ssl_context=trusting(pki), **options)


def test_the_connection_goes_to_the_checked_address_with_sni_and_the_name_verified(pki):
    resolved: list[str] = []

    def resolver(host: str, port: int) -> list[str]:
        resolved.append(host)
        return ["127.0.0.1"]

    with https_server(pki, (200, {}, b"fine")) as server:
        url = f"https://receiver.test:{server['port']}/hooks?x=1"
        reply = fetch(pki, url, public_only=True, allow_loopback=True, resolver=resolver)

    assert (reply.status, reply.body) == (200, b"fine")
    assert resolved == ["receiver.test"]  # one resolution: the address checked is the one connected to
    assert server["sni"] == ["receiver.test"]
    assert server["hosts"] == [f"receiver.test:{server['port']}"]


def test_a_certificate_for_another_name_is_refused_even_at_the_right_address(pki):
    with https_server(pki, (200, {}, b"fine")) as server, pytest.raises(egress.EgressError, match="certificate"):
        fetch(pki, f"https://other.test:{server['port']}/")


def test_a_redirect_is_an_answer_and_is_not_followed(pki):
    with https_server(pki, (307, {"Location": "http://169.254.169.254/latest/"}, b"")) as server:
        reply = fetch(pki, f"https://receiver.test:{server['port']}/", method="POST", body=b"{}")

    assert reply.status == 307
    assert server["hosts"] == [f"receiver.test:{server['port']}"]  # asked once, nothing else


def test_an_answer_beyond_the_cap_is_refused(pki):
    with (
        https_server(pki, (200, {}, b"x" * 5000)) as server,
        pytest.raises(egress.EgressTooLarge, match="4096 bytes"),
    ):
        fetch(pki, f"https://receiver.test:{server['port']}/", max_bytes=4096)


@pytest.mark.parametrize(
    "address",
    [
        "169.254.169.254",  # the cloud metadata service
        "10.0.0.5",
        "172.16.1.1",
        "192.168.1.1",
        "100.64.0.1",  # carrier-grade NAT
        "127.0.0.1",
        "0.0.0.0",
        "::1",
        "fe80::1",
        "fd00::1",
        "::ffff:10.0.0.5",  # an IPv4-mapped private address
        "64:ff9b::a9fe:a9fe",  # NAT64 of the metadata service
        "2002:a9fe:a9fe::1",  # 6to4 of it
        "224.0.0.1",
    ],
)
def test_an_address_that_is_not_public_is_refused(address):
    with pytest.raises(egress.EgressRefused, match="not a public address"):
        egress.check_url("https://hooks.example/", resolver=lambda host, port: [address])


def test_one_private_address_among_public_ones_refuses_the_name():
    with pytest.raises(egress.EgressRefused, match=r"10\.1\.2\.3"):
        egress.check_url("https://hooks.example/", resolver=lambda host, port: ["93.184.215.14", "10.1.2.3"])


def test_public_addresses_pass_and_loopback_only_when_allowed():
    egress.check_url("https://hooks.example/", resolver=lambda host, port: ["93.184.215.14", "2606:4700::1111"])
    egress.check_url("http://127.0.0.1:9/", allow_loopback=True)
    with pytest.raises(egress.EgressRefused):
        egress.check_url("http://10.0.0.1/", allow_loopback=True)  # loopback means this machine, nothing more
    assert egress.is_public(ipaddress.ip_address("8.8.8.8"))
