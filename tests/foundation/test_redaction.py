"""Secrets stay out of every log line, even when code logs them by mistake or they ride in a traceback."""

from __future__ import annotations

from dws_project.redaction import redact_url, signature_digest
from tests.processes import RPC_KEY, base_environment, leaked_secrets, run_manage

CARELESS_CODE = """
import logging
from django.conf import settings
log = logging.getLogger("dws.careless")
cfg = settings.CONFIG
log.error("calling %s with password %s", cfg.first_chain.rpc_url, cfg.database.password)
try:
    raise ConnectionError(f"failed to reach {cfg.first_chain.rpc_url} as {settings.DATABASES['default']['PASSWORD']}")
except ConnectionError:
    log.exception("provider down")
log.warning("signing with %s", cfg.tt_private_key)
print(repr(cfg))
"""


def test_secrets_logged_by_mistake_are_masked_in_messages_and_tracebacks() -> None:
    result = run_manage("shell", "-c", CARELESS_CODE, env=base_environment())

    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "Traceback" in result.stderr  # the traceback is there, only masked
    assert "calling https://node.example.org with password ***" in result.stderr
    assert leaked_secrets(output) == []


def test_rpc_urls_are_shown_as_scheme_and_host_only() -> None:
    assert redact_url(f"https://mainnet.infura.io/v3/{RPC_KEY}") == "https://mainnet.infura.io"
    assert redact_url(f"https://user:{RPC_KEY}@node.example.org:8443/?key={RPC_KEY}") == "https://node.example.org:8443"
    assert redact_url("http://[::1]:8545/x") == "http://[::1]:8545"
    assert redact_url("not a url") == "<unparseable URL>"


def test_signatures_are_shown_as_a_truncated_digest() -> None:
    signature = "0x" + "ab" * 65
    shown = signature_digest(signature)
    assert shown.startswith("sha256:")
    assert len(shown) == len("sha256:") + 16
    assert "abab" not in shown


REDIS_PASSWORD = "R3dis/pass@word:99"
CARELESS_URL_CODE = """
import logging
from urllib.parse import quote, quote_plus
from django.conf import settings
log = logging.getLogger("dws.careless")
cfg = settings.CONFIG
log.error("broker at %s", cfg.redis_url)
log.error("redis password %s", "R3dis/pass@word:99")
log.error("db password in a URL %s", quote(cfg.database.password, safe=""))
log.error("db password in a form %s", quote_plus(cfg.database.password))
log.error("signing key in a query %s", quote(cfg.tt_private_key, safe=""))
"""


def test_the_redis_password_and_percent_encoded_secrets_are_masked() -> None:
    from urllib.parse import quote, quote_plus

    from tests.processes import DB_PASSWORD

    env = base_environment()
    server = env["REDIS_URL"].removeprefix("redis://")  # this run's host:port/db, with a password added
    env["REDIS_URL"] = f"redis://:{quote(REDIS_PASSWORD, safe='')}@{server}"

    result = run_manage("shell", "-c", CARELESS_URL_CODE, env=env)

    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert f"broker at redis://{server.partition('/')[0]}" in result.stderr
    for leaked in (
        REDIS_PASSWORD,
        quote(REDIS_PASSWORD, safe=""),
        quote(DB_PASSWORD, safe=""),
        quote_plus(DB_PASSWORD),
    ):
        assert leaked not in output
    assert leaked_secrets(output) == []
    assert result.stderr.count("***") >= 4
