"""Crawler cursors in the admin: read-only (moving one is `manage.py set_cursor`, under the crawler's lock)."""

from __future__ import annotations

from django.contrib import admin

from crawlers.models import LastBlock


@admin.register(LastBlock)
class LastBlockAdmin(admin.ModelAdmin):
    list_display = ("chain", "label", "value", "block_hash", "modified_at")
    readonly_fields = ("chain", "label", "value", "block_hash", "created_at", "modified_at")

    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
