"""Who reaches the admin, how often anyone may try a password there, and who may pause the sale."""

from __future__ import annotations

import dataclasses
import ipaddress

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse

from donations.models import DonationStats

pytestmark = [pytest.mark.django_db]

NOT_FOUND = {"code": 1003, "message": "not found"}
RATE_LIMITED = {"code": 1006, "message": "too many requests"}
PASSWORD = "correct horse battery staple"


@pytest.fixture
def alice(settings) -> User:
    # Hashing speed is not what these tests are about.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    return User.objects.create_superuser("alice", "alice@example.org", PASSWORD)


@pytest.fixture
def daily_login_budget(settings):
    """The production budgets per minute; per day here, so a minute boundary cannot refill mid-test."""
    settings.DWS_ADMIN_LOGIN_RATE_PER_CLIENT = "10/d"
    settings.DWS_ADMIN_LOGIN_RATE_PER_USERNAME = "5/d"


def login(client: Client, username: str, password: str, **extra):
    return client.post("/admin/login/", {"username": username, "password": password}, **extra)


@pytest.mark.parametrize("path", ["/admin/", "/admin/login/", "/admin", "/admin/donations/donation/"])
def test_the_admin_does_not_exist_for_the_public_internet(client, path):
    response = client.get(path, REMOTE_ADDR="203.0.113.9")

    assert response.status_code == 404
    assert response.json() == NOT_FOUND


def test_a_correct_password_from_outside_the_allowed_networks_logs_nobody_in(client, alice):
    response = login(client, "alice", PASSWORD, REMOTE_ADDR="203.0.113.9")

    assert response.status_code == 404
    assert "sessionid" not in response.cookies
    alice.refresh_from_db()
    assert alice.last_login is None  # the password was never checked


def test_an_allowed_network_reaches_the_admin(client, alice, settings):
    settings.CONFIG = dataclasses.replace(
        settings.CONFIG, admin_allowed_networks=(ipaddress.ip_network("10.20.0.0/16"),)
    )

    assert client.get("/admin/login/", REMOTE_ADDR="10.20.3.4").status_code == 200
    assert client.get("/admin/login/", REMOTE_ADDR="127.0.0.1").status_code == 404
    assert login(client, "alice", PASSWORD, REMOTE_ADDR="10.20.3.4").status_code == 302


def test_login_attempts_are_limited_per_client(client, alice, daily_login_budget):
    statuses = [login(client, f"user{i}", "wrong").status_code for i in range(10)]
    assert statuses == [200] * 10  # the form again, with its error

    refused = login(client, "alice", PASSWORD)

    assert refused.status_code == 429
    assert refused.json() == RATE_LIMITED
    assert refused["Retry-After"] == "60"
    alice.refresh_from_db()
    assert alice.last_login is None
    # Another client is not held back by this one.
    assert login(client, "alice", PASSWORD, REMOTE_ADDR="127.0.0.9").status_code == 302


def test_login_attempts_are_limited_per_username_across_clients(client, alice, daily_login_budget):
    statuses = [login(client, "Alice", "wrong", REMOTE_ADDR=f"127.0.0.{i}").status_code for i in range(2, 7)]
    assert statuses == [200] * 5

    assert login(client, "alice", PASSWORD, REMOTE_ADDR="127.0.0.50").status_code == 429
    alice.refresh_from_db()
    assert alice.last_login is None


def test_login_attempts_are_still_limited_per_client_while_the_cache_is_away(
    client, alice, daily_login_budget, settings
):
    from tests.chain import free_port

    settings.CACHES = {
        "default": {**settings.CACHES["default"], "LOCATION": f"redis://127.0.0.1:{free_port()}/0"}  # nobody there
    }
    away = {"REMOTE_ADDR": "127.0.0.77"}
    statuses = [login(client, f"user{i}", "wrong", **away).status_code for i in range(10)]
    assert statuses == [200] * 10

    refused = login(client, "alice", PASSWORD, **away)

    assert refused.status_code == 429
    alice.refresh_from_db()
    assert alice.last_login is None


@pytest.fixture
def viewer(client) -> Client:
    """A staff account that may look at the campaign, nothing more."""
    user = User.objects.create_user("bob", "bob@example.org", "pw-not-used", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_donationstats"))
    client.force_login(user)
    return client


def changelist() -> str:
    return reverse("admin:donations_donationstats_changelist")


def test_view_permission_does_not_pause_the_campaign(viewer):
    stats = DonationStats.objects.get()

    page = viewer.get(changelist())
    response = viewer.post(changelist(), {"action": "pause", "_selected_action": [stats.pk]})

    assert page.status_code == 200
    assert b'value="pause"' not in page.content
    assert response.status_code in (200, 302)
    assert DonationStats.objects.get().status == "open"


def test_the_pause_permission_pauses_and_resumes(viewer):
    bob = User.objects.get(username="bob")
    bob.user_permissions.add(Permission.objects.get(codename="pause_campaign"))
    stats = DonationStats.objects.get()

    viewer.post(changelist(), {"action": "pause", "_selected_action": [stats.pk]})
    assert DonationStats.objects.get().status == "paused"
    viewer.post(changelist(), {"action": "resume", "_selected_action": [stats.pk]})
    assert DonationStats.objects.get().status == "open"
