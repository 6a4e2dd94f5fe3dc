"""Crawler cursors: the last block each crawler has fully processed."""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Now

from dws_project.chain_settings import FIRST_CHAIN
from dws_project.touch import TouchingManager

CHAIN = FIRST_CHAIN  # the default of `last_block.chain` (the rows of the one chain configured today)
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

    objects = TouchingManager()  # update() moves modified_at too

    class Meta:
        db_table = "last_block"
        constraints = [
            models.UniqueConstraint(fields=["chain", "label"], name="last_block_chain_label_key"),
            models.CheckConstraint(condition=models.Q(value__gte=0), name="last_block_value_nonnegative"),
        ]

    def __str__(self) -> str:
        return f"{self.chain}/{self.label} at {self.value}"


class CrawlerRun(models.Model):
    """When each crawler job of a chain last finished a run (crawlers/runs/cadence.py): a job that has not
    run for several of its cadences is overdue, whatever the worker's heartbeat says (a worker that does
    not consume the crawlers' queue is alive and crawls nothing)."""

    chain = models.CharField(max_length=16, default=CHAIN, db_default=CHAIN)
    job = models.CharField(max_length=32)  # latest | finalized | old-unconfirmed
    # When a worker or beat first expected this job to run (it is overdue from here when it never ran).
    expected_since = models.DateTimeField(db_default=Now())
    last_finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "crawler_run"
        constraints = [models.UniqueConstraint(fields=["chain", "job"], name="crawler_run_chain_job_key")]

    def __str__(self) -> str:
        return f"{self.chain}/{self.job} last finished {self.last_finished_at}"


class ReconcileRun(models.Model):
    """One `reconcile` over a block range of one chain: what it checked and every discrepancy it found (for
    the admin and /health; the newest row of a chain is its last result)."""

    chain = models.CharField(max_length=16, default=CHAIN, db_default=CHAIN)
    trigger = models.CharField(max_length=16)  # "command", "daily", "start" or "checkpoint"
    from_block = models.BigIntegerField()
    to_block = models.BigIntegerField(help_text="the last block actually checked")
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(auto_now_add=True, db_default=Now())
    ok = models.BooleanField()
    transfers = models.IntegerField(help_text="transfers to the donation address found on chain")
    discrepancies = models.JSONField(default=list, blank=True)
    summary = models.TextField()
    # A daily run: the chain's day it is covering (its blocks of the last 24 hours, by their timestamps;
    # crawlers/runs/reconcile_day.py), which may take several runs; null for the other triggers.
    day_first_block = models.BigIntegerField(null=True, blank=True)
    day_last_block = models.BigIntegerField(null=True, blank=True)

    class Meta:
        db_table = "reconcile_run"
        indexes = [
            models.Index(fields=["-finished_at"], name="reconcile_run_finished_idx"),
            models.Index(fields=["chain", "-finished_at"], name="reconcile_run_chain_idx"),
        ]

    def __str__(self) -> str:
        return self.summary


class InflowStatus(models.TextChoices):
    OPEN = "open"
    CREDITED = "credited"
    DISMISSED = "dismissed"


class UnexplainedInflow(models.Model):
    """Value that reached the donation address in a finalized block and that no transfer we can see explains
    (a withdrawal, a self-destruct, a block reward, internal ETH from a provider without traces).

    Recorded with a finalized block the balance proof (crawlers/scan/proof.py) could not close, and closed
    by an operator in the admin: "credit this transaction" (re-examined through the detection and
    crediting path) or "not a donation".
    """

    chain = models.CharField(max_length=16, default=CHAIN, db_default=CHAIN)
    block_number = models.BigIntegerField()
    block_hash = models.CharField(max_length=66)
    asset = models.CharField(max_length=8)
    amount_raw = models.DecimalField(max_digits=78, decimal_places=0, help_text="wei, or the coin's base units")
    # Wide enough for any uint256 in whole units (a coin's transfer of 2^255 units set aside for the operator).
    amount = models.DecimalField(max_digits=96, decimal_places=18, help_text="in the asset's own units")
    status = models.CharField(max_length=16, choices=InflowStatus.choices, default=InflowStatus.OPEN)
    tx_hash = models.CharField(max_length=66, blank=True, default="")
    reason = models.TextField(blank=True, default="")
    operator = models.CharField(max_length=150, blank=True, default="")
    resolved_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_default=Now())

    class Meta:
        db_table = "unexplained_inflow"
        constraints = [
            models.UniqueConstraint(
                fields=["chain", "block_hash", "asset"], name="unexplained_inflow_chain_block_asset_key"
            ),
        ]
        indexes = [models.Index(fields=["status", "created_at"], name="unexplained_inflow_status_idx")]

    def __str__(self) -> str:
        return f"{self.amount} {self.asset} in block {self.block_number} of {self.chain} ({self.status})"


class InternalMovement(models.Model):
    """Value that reached the donation address by its own doing, in a finalized block: a self-transfer, or
    what came back in a transaction the address signed or (with code) called out in (a refund, a swap, a
    WETH withdrawal). Never a donation (DESIGN.md, "Crediting"); it closes the balance identity, and the
    admin lists it so an operator sees where the address's balance moved without a donation."""

    chain = models.CharField(max_length=16, default=CHAIN, db_default=CHAIN)
    block_number = models.BigIntegerField()
    block_hash = models.CharField(max_length=66)
    tx_hash = models.CharField(max_length=66)
    asset = models.CharField(max_length=8)
    kind = models.CharField(max_length=32, help_text="self-transfer, or returned to the address")
    amount_raw = models.DecimalField(max_digits=78, decimal_places=0, help_text="wei, or the coin's base units")
    amount = models.DecimalField(max_digits=60, decimal_places=18, help_text="in the asset's own units")
    created_at = models.DateTimeField(auto_now_add=True, db_default=Now())

    class Meta:
        db_table = "internal_movement"
        constraints = [
            models.UniqueConstraint(
                fields=["chain", "block_hash", "tx_hash", "asset", "kind"],
                name="internal_movement_chain_block_tx_asset_key",
            ),
        ]
        indexes = [models.Index(fields=["chain", "block_number"], name="internal_movement_chain_idx")]

    def __str__(self) -> str:
        return f"{self.amount} {self.asset} {self.kind} in tx {self.tx_hash} (not a donation)"


class Completeness(models.Model):
    """How far each crawler's ranges are proven complete by the balances (one row per chain and crawler)."""

    chain = models.CharField(max_length=16, default=CHAIN, db_default=CHAIN)
    label = models.CharField(max_length=32)
    proven_through = models.BigIntegerField(null=True, help_text="the last block of the last proven range")
    # Ranges whose historical balances the provider could not give (a full node far behind the head)
    # were scanned without proof: everything before this block is unproven.
    unproven_before = models.BigIntegerField(null=True)
    modified_at = models.DateTimeField(auto_now=True, db_default=Now())

    objects = TouchingManager()  # update() moves modified_at too

    class Meta:
        db_table = "completeness"
        constraints = [models.UniqueConstraint(fields=["chain", "label"], name="completeness_chain_label_key")]

    def __str__(self) -> str:
        return f"{self.chain}/{self.label}: proven through {self.proven_through}"


class ProofStatus(models.TextChoices):
    PROVEN = "proven"
    UNPROVEN = "unproven"


class ProofRange(models.Model):
    """A span of finalized blocks the balance proof checked, published on /proof and /proof.json.

    Written by the finalized crawler in the same transaction as the cursor move over it
    (crawlers/record/proof_ranges.py). The row keeps what the chain said: the donation address's balances
    before the span and at its last block, its nonce, and what left it (ProofRangeAsset). What arrived
    is read from the records themselves (the confirmed donations and unexplained inflows of its
    blocks), so the published proof, the donation CSV and the admin can never disagree.

    `unproven`: the crawler passed the span without the proof (no historical state, the genesis block);
    its balances may be unknown (NULL) and `reason` says why.
    """

    chain = models.CharField(max_length=16, default=CHAIN, db_default=CHAIN)
    first_block = models.BigIntegerField()
    last_block = models.BigIntegerField()
    last_block_hash = models.CharField(max_length=66)
    status = models.CharField(max_length=16, choices=ProofStatus.choices)
    reason = models.TextField(blank=True, default="", db_default="")
    nonce_opening = models.BigIntegerField(null=True, help_text="the address's nonce at first_block - 1")
    nonce_closing = models.BigIntegerField(null=True, help_text="its nonce at last_block")
    checked_at = models.DateTimeField(help_text="when the proof last wrote this span")
    # Its place among its chain's rows in block order, from 0: rows are only ever added after the last one,
    # so a row's ordinal never changes, and the published pages are cut by it (crawlers/proof_report.py).
    ordinal = models.BigIntegerField(help_text="its place among the chain's ranges, from 0")
    created_at = models.DateTimeField(auto_now_add=True, db_default=Now())

    class Meta:
        db_table = "proof_range"
        constraints = [
            models.UniqueConstraint(fields=["chain", "first_block"], name="proof_range_chain_first_key"),
            models.UniqueConstraint(fields=["chain", "ordinal"], name="proof_range_chain_ordinal_key"),
            models.CheckConstraint(
                condition=models.Q(last_block__gte=models.F("first_block"), first_block__gte=0),
                name="proof_range_span_ordered",
            ),
            models.CheckConstraint(
                condition=models.Q(status__in=[s.value for s in ProofStatus]), name="proof_range_status_known"
            ),
        ]
        indexes = [models.Index(fields=["chain", "last_block"], name="proof_range_chain_last_idx")]

    def __str__(self) -> str:
        return f"{self.chain} blocks {self.first_block}..{self.last_block} ({self.status})"


class ProofRangeAsset(models.Model):
    """One asset's balances over a ProofRange and what left the address, in raw units (wei, a coin's base
    units): numbers, never floats, up to uint256."""

    proof_range = models.ForeignKey(ProofRange, on_delete=models.CASCADE, related_name="assets")
    asset = models.CharField(max_length=8)
    opening = models.DecimalField(max_digits=78, decimal_places=0, null=True, help_text="at first_block - 1")
    closing = models.DecimalField(max_digits=78, decimal_places=0, null=True, help_text="at last_block")
    left = models.DecimalField(
        max_digits=78, decimal_places=0, null=True, help_text="what left the address in the span (fees included)"
    )

    class Meta:
        db_table = "proof_range_asset"
        constraints = [
            models.UniqueConstraint(fields=["proof_range", "asset"], name="proof_range_asset_key"),
            models.CheckConstraint(
                condition=models.Q(opening__gte=0) & models.Q(closing__gte=0) & models.Q(left__gte=0),
                name="proof_range_asset_nonnegative",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.asset}: {self.opening} -> {self.closing}"


class AddressModeKind(models.TextChoices):
    PLAIN = "plain"  # no code: an account with a key
    CONTRACT = "contract"  # a Safe, any other code
    DELEGATED = "delegated"  # an EIP-7702 delegation: still an account with a key


class AddressMode(models.Model):
    """What the donation address is on one chain, as a crawler (or a worker's start) last read its code
    (crawlers/runs/address_code.py). A chain sharing its address with others is offered by the page and
    crawled only while the modes that decide it are known here: this table, never Redis, so a Redis
    flush cannot offer again a chain refused for its address, and an unknown mode holds, never passes."""

    chain = models.CharField(max_length=16, unique=True)
    address = models.CharField(max_length=42, help_text="the donation address whose code was read (lower case)")
    mode = models.CharField(max_length=16, choices=AddressModeKind.choices)
    read_at = models.DateTimeField(help_text="when its code was last read")

    class Meta:
        db_table = "address_mode"
        constraints = [
            models.CheckConstraint(
                condition=models.Q(mode__in=[m.value for m in AddressModeKind]), name="address_mode_known"
            )
        ]

    def __str__(self) -> str:
        return f"{self.chain}: {self.address} is {self.mode}"


class ForeignTransferCount(models.Model):
    """Transfer logs naming the donation address as recipient, of tokens that are neither a donation coin nor
    a well-known stray token (airdrop spam, address-poisoning tokens, zero-value transfers): counted per chain
    and contract by the finalized crawler as its cursor passes their blocks, never recorded one by one (anyone
    can emit such an event). docs/detection.md, "Coins the sale does not take"."""

    chain = models.CharField(max_length=16)
    contract = models.CharField(max_length=42)
    transfers = models.BigIntegerField(default=0)
    first_block = models.BigIntegerField()
    last_block = models.BigIntegerField(help_text="the last block counted: a block is counted once")
    modified_at = models.DateTimeField(auto_now=True, db_default=Now())

    objects = TouchingManager()  # update() moves modified_at too

    class Meta:
        db_table = "foreign_transfer_count"
        constraints = [
            models.UniqueConstraint(fields=["chain", "contract"], name="foreign_transfer_count_chain_contract_key")
        ]

    def __str__(self) -> str:
        return f"{self.transfers} transfer(s) of {self.contract} to the address on {self.chain}"
