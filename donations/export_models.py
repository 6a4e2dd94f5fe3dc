"""The stored /proof/donations.csv: its parts, and the blocks whose confirmed donations changed since they
were built (donations/export.py). Imported by donations/models.py so the app's migrations see them."""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Now


class ProofCsvPart(models.Model):
    """The CSV lines of one chain's confirmed donations in a span of blocks, rendered once.

    A chain's current parts (`superseded_at` NULL) follow each other without a gap from block 0; the file
    is the header, then every current part in (chain, first_block) order. A part is never changed: a
    rebuild writes a new row and marks the old one superseded, kept a while so a download that started
    on it can finish."""

    chain = models.CharField(max_length=16)
    first_block = models.BigIntegerField()
    last_block = models.BigIntegerField()
    rows = models.IntegerField()
    size = models.IntegerField(help_text="bytes of `body`")
    body = models.BinaryField()
    built_at = models.DateTimeField(db_default=Now())
    superseded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "proof_csv_part"
        constraints = [
            models.UniqueConstraint(
                fields=["chain", "first_block"],
                condition=models.Q(superseded_at__isnull=True),
                name="proof_csv_part_current_key",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.chain} blocks {self.first_block}..{self.last_block}: {self.rows} rows"


class ProofCsvChange(models.Model):
    """A confirmed donation appeared in, or left, this block (written in the transaction that did it): the
    part holding the block is built again."""

    chain = models.CharField(max_length=16)
    block_number = models.BigIntegerField()
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "proof_csv_change"

    def __str__(self) -> str:
        return f"{self.chain} block {self.block_number}"
