"""Crawler cursors: the last block each crawler has fully processed."""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Now

CHAIN = "eth"
LATEST = "latest"
FINALIZED = "finalized"


class LastBlock(models.Model):
    chain = models.CharField(max_length=16, default=CHAIN, db_default=CHAIN)
    label = models.CharField(max_length=32)
    value = models.BigIntegerField()
    # Hash of block `value` as the crawler saw it (NULL when set by hand): the next run checks that the
    # chain still builds on it, which is how the latest crawler notices a re-org behind its cursor.
    block_hash = models.CharField(max_length=66, null=True, blank=True)  # noqa: DJ001 - NULL: unknown
    created_at = models.DateTimeField(auto_now_add=True, db_default=Now())
    modified_at = models.DateTimeField(auto_now=True, db_default=Now())

    class Meta:
        db_table = "last_block"
        constraints = [
            models.UniqueConstraint(fields=["chain", "label"], name="last_block_chain_label_key"),
            models.CheckConstraint(condition=models.Q(value__gte=0), name="last_block_value_nonnegative"),
        ]

    def __str__(self) -> str:
        return f"{self.chain}/{self.label} at {self.value}"


class ReconcileRun(models.Model):
    """One `reconcile` over a block range: what it checked and every discrepancy it found (for the admin
    and /health; the newest row is the last result)."""

    trigger = models.CharField(max_length=16)  # "command" or "daily"
    from_block = models.BigIntegerField()
    to_block = models.BigIntegerField(help_text="the last block actually checked")
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(auto_now_add=True, db_default=Now())
    ok = models.BooleanField()
    transfers = models.IntegerField(help_text="transfers to the donation address found on chain")
    discrepancies = models.JSONField(default=list, blank=True)
    summary = models.TextField()

    class Meta:
        db_table = "reconcile_run"
        indexes = [models.Index(fields=["-finished_at"], name="reconcile_run_finished_idx")]

    def __str__(self) -> str:
        return self.summary
