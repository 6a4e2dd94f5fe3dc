"""Seed 000's stuck-block runbook reads `last_block.modified_at`: it must move with every cursor write, and
every other bulk UPDATE of a row that has a `modified_at` must move it too (QuerySet.update skips auto_now)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.apps import apps
from django.db import connection
from django.utils import timezone

from crawlers.models import LATEST, LastBlock
from crawlers.record.cursors import cursor_write
from dws_project.touch import TouchingQuerySet

pytestmark = [pytest.mark.django_db]


def test_every_cursor_write_moves_the_rows_modified_at_as_the_runbook_reads_it():
    cursor_write(chain="eth", label=LATEST, value=10, block_hash="0x" + "a" * 64)
    long_ago = timezone.now() - timedelta(hours=3)
    LastBlock.objects.filter(chain="eth", label=LATEST).update(modified_at=long_ago)

    cursor_write(chain="eth", label=LATEST, value=11, block_hash="0x" + "b" * 64)

    with connection.cursor() as cursor:  # the runbook's own query
        cursor.execute("SELECT label, value, modified_at FROM last_block WHERE chain='eth'")
        ((label, value, modified_at),) = cursor.fetchall()
    assert (label, value) == (LATEST, 11)
    assert timezone.now() - modified_at < timedelta(minutes=1)


def test_a_bulk_update_of_any_row_with_a_modified_at_moves_it():
    touched = [
        model
        for model in apps.get_models()
        if any(getattr(field, "auto_now", False) for field in model._meta.concrete_fields)
    ]
    assert len(touched) >= 8
    for model in touched:
        assert isinstance(model._default_manager.all(), TouchingQuerySet), model.__name__
