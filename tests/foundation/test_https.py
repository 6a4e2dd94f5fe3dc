"""DWS_HTTPS: a production configuration passes Django's deployment checks; local runs stay on HTTP."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.processes import base_environment, run_manage

# Django's deployment check wants a long, varied key (security.W009).
PRODUCTION_SECRET = "prod-like-secret-key-aZ9bY8cX7dW6eV5fU4gT3hS2iR1jQ0kP-mnopqrstuvwxyz"


def production_environment() -> dict[str, str]:
    env = base_environment()
    env.update(
        {
            "DJANGO_SECRET_KEY": PRODUCTION_SECRET,
            "DJANGO_DEBUG": "false",
            "DJANGO_ALLOWED_HOSTS": "dws.example.org",
            "DWS_CSRF_TRUSTED_ORIGINS": "https://dws.example.org",
            "DWS_CHAIN_ID": "1",
        }
    )
    return env


def test_a_production_configuration_passes_the_deployment_checks() -> None:
    result = run_manage("check", "--deploy", "--fail-level", "WARNING", env=production_environment())

    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_https_off_in_production_is_flagged_by_the_deployment_checks() -> None:
    env = production_environment() | {"DWS_HTTPS": "off"}

    result = run_manage("check", "--deploy", "--fail-level", "WARNING", env=env)

    assert result.returncode != 0
    for check in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert check in result.stdout + result.stderr


SHOW_SETTINGS = """
from django.conf import settings as s
print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS > 0,
      s.SECURE_PROXY_SSL_HEADER, s.CSRF_TRUSTED_ORIGINS)
"""


def test_https_is_the_default_off_a_development_chain() -> None:
    result = run_manage("shell", "-c", SHOW_SETTINGS, env=production_environment())

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == (
        "True True True True ('HTTP_X_FORWARDED_PROTO', 'https') ['https://dws.example.org']"
    )


def test_a_development_chain_defaults_to_plain_http() -> None:
    env = base_environment() | {"DWS_CHAIN_ID": "31337"}

    result = run_manage("shell", "-c", SHOW_SETTINGS, env=env)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "False False False False None []"


def test_the_test_settings_and_the_local_defaults_speak_plain_http() -> None:
    from django.conf import settings

    assert settings.CONFIG.https is False
    assert not settings.SECURE_SSL_REDIRECT
    env_local = (base_environment.__globals__["ROOT"] / "deploy" / "env.local").read_text()
    assert "DWS_HTTPS=off" in env_local.splitlines()


@pytest.fixture
def https_on(settings):
    """The web settings DWS_HTTPS=on produces (the process under test runs with it off)."""
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_REDIRECT_EXEMPT = [r"^live$", r"^ready$", r"^version$", r"^health$"]
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")


@pytest.mark.django_db
def test_plain_http_is_redirected_except_the_probes(https_on) -> None:
    client = Client()

    page = client.get("/donation/data")
    assert page.status_code == 301
    assert page["Location"] == "https://testserver/donation/data"
    for probe in ("/live", "/ready", "/version"):
        assert client.get(probe).status_code == 200


@pytest.mark.django_db
def test_the_proxys_https_header_is_honoured_and_hsts_sent(https_on) -> None:
    response = Client().get("/donation/data", HTTP_X_FORWARDED_PROTO="https")

    assert response.status_code == 200
    assert response["Strict-Transport-Security"].startswith("max-age=31536000")
