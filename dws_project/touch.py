"""Bulk updates that move `modified_at`: Django's `QuerySet.update` skips `auto_now` (only `save()` sets it),
so a cursor written by UPDATE kept the time of its row's creation, and seed 000's stuck-block runbook, /health
and the cursor-age metric read a crawler that advances every block as one that never moved.

Every model with an `auto_now` field uses this queryset as its manager: an `update()` that does not set such
a field itself sets it to the database's `now()` (the transaction's start, like the explicit writes)."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.models.functions import Now


class TouchingQuerySet(models.QuerySet):
    def update(self, **kwargs: Any) -> int:
        for field in self.model._meta.concrete_fields:
            if getattr(field, "auto_now", False) and field.name not in kwargs and field.attname not in kwargs:
                kwargs[field.name] = Now()
        return super().update(**kwargs)


class TouchingManager(models.Manager):
    """The manager of such a model: an explicit class (mypy's Django plugin resolves a manager built by
    `as_manager()` from another module only on a cold cache)."""

    def get_queryset(self) -> TouchingQuerySet:
        return TouchingQuerySet(self.model, using=self._db)
