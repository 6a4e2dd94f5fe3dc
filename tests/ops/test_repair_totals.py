"""`manage.py repair_totals` and the admin's "Repair totals": the campaign row and every donor's totals
recomputed from the confirmed donations under the campaign lock, logged with the operator, after which
`reconcile` finds no ledger drift."""

from __future__ import annotations

import logging
from decimal import Decimal
from io import StringIO

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection
from django.urls import reverse

from donations.ledger import ledger_discrepancies
from donations.models import DonationStats, UserData
from tests.ops.test_reconcile import donated, run

__all__ = ["donated"]

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("crawl_config", "eth_prices")]


def drift_by_sql() -> None:
    """What only hand-written SQL can do: the campaign and two donors' totals off the confirmed rows,
    and a row for a donor who never had a confirmed donation."""
    with connection.cursor() as cursor:
        cursor.execute("UPDATE donation_stats SET total = total + 100, tokens = tokens + 5")
        cursor.execute("UPDATE user_data SET total = 1, tokens = 1")
        cursor.execute("INSERT INTO user_data (address, total, tokens) VALUES (%s, 7, 7)", ["0x" + "11" * 20])


def test_the_command_recomputes_every_total_from_the_confirmed_donations(donated, caplog):
    before = DonationStats.objects.get()
    rows = {u.address: (u.total, u.tokens) for u in UserData.objects.all()}
    drift_by_sql()
    assert len(ledger_discrepancies()) == 4

    out = StringIO()
    with caplog.at_level(logging.WARNING, logger="dws.donations"):
        call_command("repair_totals", "--operator", "bob", stdout=out)

    assert ledger_discrepancies() == []
    stats = DonationStats.objects.get()
    assert (stats.total, stats.tokens, stats.status) == (before.total, before.tokens, "open")
    assert {u.address: (u.total, u.tokens) for u in UserData.objects.exclude(address="0x" + "11" * 20)} == rows
    assert UserData.objects.get(address="0x" + "11" * 20).tokens == 0  # kept, zeroed: rows are never deleted
    text = out.getvalue()
    assert f"campaign: {before.total + 100} USD / {before.tokens + 5} tokens -> {before.total} USD" in text
    assert "3 donor row(s) changed" in text
    assert any("totals repaired by bob" in r.getMessage() for r in caplog.records)
    assert run(donated)[1] == 0  # reconcile agrees

    again = StringIO()
    call_command("repair_totals", "--operator", "bob", stdout=again)
    assert "nothing to repair" in again.getvalue()


def test_the_admin_action_repairs_and_is_logged_with_the_operator(donated, client, caplog):
    user = User.objects.create_superuser("alice", "alice@example.org", "pw-not-used")
    client.force_login(user)
    drift_by_sql()
    stats = DonationStats.objects.get()

    with caplog.at_level(logging.WARNING):
        page = client.post(
            reverse("admin:donations_donationstats_changelist"),
            {"action": "repair_totals", "_selected_action": [stats.pk]},
            follow=True,
        )

    assert page.status_code == 200
    assert b"Totals repaired" in page.content
    assert ledger_discrepancies() == []
    assert DonationStats.objects.get().total == stats.total - Decimal("100")
    assert any("totals repaired by alice (admin)" in r.getMessage() for r in caplog.records)
    assert LogEntry.objects.filter(change_message__startswith="repaired the totals").count() == 1
