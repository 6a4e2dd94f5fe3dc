"""Access rules as the internet meets them: through gunicorn, with the headers a client can forge.

The admin allow-list, the login throttle, /metrics and /health's detail decide on the path Django routes
and on one reading of the client's address; a client's SCRIPT_NAME or X-Forwarded-Proto is not honoured.
"""

from __future__ import annotations

import pytest
import requests

from donations.models import DonationStats
from tests.web_server import gunicorn

# gunicorn reads the test database: the tables must exist (and what a test writes must be committed).
pytestmark = [pytest.mark.django_db(transaction=True)]

NOT_FOUND = {"code": 1003, "message": "not found"}


@pytest.fixture(autouse=True)
def campaign_row() -> None:
    DonationStats.objects.get_or_create()  # a transactional test before this one may have flushed it


def get(base: str, path: str, **headers: str) -> requests.Response:
    return requests.get(base + path, headers=headers, timeout=20, allow_redirects=False)


@pytest.mark.parametrize("deploy_config", [False, True], ids=["gunicorn-defaults", "deploy-config"])
def test_a_client_supplied_script_name_does_not_open_the_admin(deploy_config):
    # Loopback is outside the allowed networks here: the test client is "the internet".
    env = {"DWS_ADMIN_ALLOWED_NETWORKS": "10.9.9.0/24"}
    with gunicorn(workers=1, env=env, deploy_config=deploy_config) as base:
        plain = get(base, "/admin/login/")
        forged = get(base, "/x/admin/login/", SCRIPT_NAME="/x")
        posts = [
            requests.post(
                base + "/x/admin/login/",
                data={"username": "alice", "password": f"guess-{i}"},
                headers={"SCRIPT_NAME": "/x"},
                timeout=20,
                allow_redirects=False,
            )
            for i in range(12)
        ]

    assert (plain.status_code, plain.json()) == (404, NOT_FOUND)
    assert (forged.status_code, forged.json()) == (404, NOT_FOUND)
    assert b"password" not in forged.content
    # No login form, so no password hashed, however often it is tried.
    assert {p.status_code for p in posts} == {404}


def test_the_login_throttle_counts_attempts_whatever_script_name_says():
    env = {"DWS_ADMIN_ALLOWED_NETWORKS": "127.0.0.0/8"}  # the operator's own machine
    with gunicorn(workers=1, env=env) as base:
        statuses = [
            requests.post(
                base + ("/x/admin/login/" if i % 2 else "/admin/login/"),
                data={"username": f"nobody{i}", "password": "wrong"},
                headers={"SCRIPT_NAME": "/x"} if i % 2 else {},
                timeout=20,
                allow_redirects=False,
            ).status_code
            for i in range(24)
        ]

    # The forged half never reaches a login form; the plain half meets the 10-a-minute budget.
    assert set(statuses[1::2]) == {404}
    assert statuses[0::2][:10] in ([403] * 10, [200] * 10)  # 403: no CSRF cookie; either way no login
    assert set(statuses[0::2][10:]) == {429}


def test_an_ipv4_mapped_peer_is_the_same_client_for_every_rule():
    """Behind a dual-stack bind the TLS proxy on 127.0.0.1 arrives as ::ffff:127.0.0.1: it is trusted for
    X-Forwarded-For exactly as it would be as 127.0.0.1, so the visitor it names is the client."""
    env = {
        "DWS_TRUSTED_PROXIES": "127.0.0.1/32",
        "DWS_ADMIN_ALLOWED_NETWORKS": "127.0.0.1/32",
        "TEST_HEALTH_CACHE_SECONDS": "0",
    }
    visitor = {"X-Forwarded-For": "203.0.113.7"}
    operator = {"X-Forwarded-For": "127.0.0.1"}
    with gunicorn(workers=1, env=env, host="::") as base:
        admin = get(base, "/admin/login/", **visitor)
        metrics = get(base, "/metrics", **visitor)
        health = get(base, "/health", **visitor)
        operator_admin = get(base, "/admin/login/", **operator)

    assert (admin.status_code, admin.json()) == (404, NOT_FOUND)
    assert (metrics.status_code, metrics.json()) == (404, NOT_FOUND)
    assert set(health.json()) == {"status"}
    assert operator_admin.status_code == 200


def test_x_forwarded_proto_counts_only_from_a_trusted_proxy():
    https_on = {"DWS_HTTPS": "on", "DJANGO_ALLOWED_HOSTS": "127.0.0.1"}
    forged = {"X-Forwarded-Proto": "https"}
    with gunicorn(workers=1, env=https_on, deploy_config=True) as base:
        from_anyone = get(base, "/donation/data", **forged)
    with gunicorn(workers=1, env={**https_on, "DWS_TRUSTED_PROXIES": "127.0.0.1/32"}, deploy_config=True) as base:
        from_the_proxy = get(base, "/donation/data", **forged)

    # An untrusted peer claiming https is still on plain HTTP: redirected, and no HSTS is sent to it.
    assert from_anyone.status_code == 301
    assert from_anyone.headers["Location"].startswith("https://")
    assert from_the_proxy.status_code == 200
    assert "Strict-Transport-Security" in from_the_proxy.headers


def test_networks_written_ipv4_mapped_are_the_ipv4_networks():
    from dws_project.config import load_config
    from tests.processes import base_environment

    mapped = {"DWS_TRUSTED_PROXIES": "::ffff:10.0.0.0/104", "DWS_ADMIN_ALLOWED_NETWORKS": "::ffff:127.0.0.1"}
    config = load_config({**base_environment(), **mapped})

    assert [str(n) for n in config.trusted_proxies] == ["10.0.0.0/8"]
    assert [str(n) for n in config.admin_allowed_networks] == ["127.0.0.1/32"]
