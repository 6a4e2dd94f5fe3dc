"""Operator actions on the crawlers (the admin's forms and `manage.py set_cursor` call these): moving a
crawler's cursor by hand, and crediting an unexplained inflow once the crawler's own detection finds it.
Each is refused with a reason the operator can act on, and logged with the operator's name."""

from __future__ import annotations

import logging
from decimal import Decimal

from django.conf import settings

from crawlers.chain.clients import make_client
from crawlers.chain.rpc import RpcClient
from crawlers.chain.tips import chain_tips
from crawlers.decode.amounts import ETH_DECIMALS
from crawlers.models import FINALIZED, LATEST, InflowStatus, UnexplainedInflow
from crawlers.record.cursors import cursor_get, cursor_write
from crawlers.record.inflows import InflowRefused, inflow_mark_credited
from crawlers.runs.crawl import crawl_single_block
from donations.models import Donation
from donations.sightings import amount_scale
from dws_project.config import Config
from dws_project.locks import chain_writer

logger = logging.getLogger("dws.crawlers")

LABELS = (LATEST, FINALIZED)


def job_name(label: str, chain: str) -> str:
    """The non-overlap lock name of a chain's crawler (its Celery task, its command and `set_cursor` share it)."""
    return f"crawl-{chain}-{label}"


class CursorRefused(Exception):
    """`set_cursor` would not move the cursor; the message says why, for the operator."""


def set_cursor(
    label: str,
    value: int,
    *,
    operator: str,
    chain: str | None = None,
    client: RpcClient | None = None,
    config: Config | None = None,
) -> int | None:
    """Move a crawler's cursor of `chain` (the first chain when None; the last block it has processed) by
    hand; returns the previous value.

    Refused beyond the chain head (or when the provider will not say where the head is), and while a
    run of that crawler holds its lock, so the run cannot write the old position back afterwards.
    """
    if label not in LABELS:
        raise CursorRefused(f"unknown crawler {label!r}")
    if value < 0:
        raise CursorRefused("the block number must be >= 0")
    config = config or settings.CONFIG
    settings_ = config.chain(chain) if chain else config.first_chain
    tips = chain_tips(client or make_client(settings_))
    if tips.head is None:
        raise CursorRefused("the provider did not say where its head is; try again")
    if value > tips.head:
        raise CursorRefused(f"block {value} is beyond the chain head {tips.head}")
    name = settings_.name
    # The crawler's PostgreSQL lock alone: a run holds it from reading the cursor to its last write, so the
    # cursor never moves under a run. Not its Redis lock: the head follower holds that for minutes, between
    # its runs too (issue 36), and the runbook must still move a stuck latest cursor.
    with chain_writer(name, label) as mine:
        if not mine:
            raise CursorRefused(f"the {label} crawler of {name} is running; try again in a few seconds")
        before = cursor_get(chain=name, label=label)
        cursor_write(chain=name, label=label, value=value)
    previous = before.value if before else None
    logger.warning("cursor %s of %s moved by %s: %s -> %d (head %d)", label, name, operator, previous, value, tips.head)
    return previous


def inflow_credit(
    *, inflow_id: int, tx_hash: str, operator: str, config: Config | None = None, client: RpcClient | None = None
) -> UnexplainedInflow:
    """ "Credit this transaction": the inflow's block is crawled again by the finalized crawler's single-block
    path (top-level transactions, call traces, logs: the same detection and crediting). What that finds
    recorded as new donations of the inflow's asset in that transaction is credited; the inflow closes
    only if that covers it, else it stays open with the rest as its amount (for "not a donation", or
    another transaction). Under the finalized crawler's PostgreSQL lock, from the look at what was
    recorded before to the inflow's marking."""
    chain = UnexplainedInflow.objects.values_list("chain", flat=True).get(pk=inflow_id)
    with chain_writer(chain, FINALIZED) as mine:
        if not mine:
            raise InflowRefused(f"the finalized crawler is writing {chain}'s blocks; try again in a minute")
        return _inflow_credit(inflow_id=inflow_id, tx_hash=tx_hash, operator=operator, config=config, client=client)


def _inflow_credit(
    *, inflow_id: int, tx_hash: str, operator: str, config: Config | None, client: RpcClient | None
) -> UnexplainedInflow:
    tx_hash = tx_hash.strip().lower()
    inflow = UnexplainedInflow.objects.get(pk=inflow_id)
    if inflow.status != InflowStatus.OPEN:
        raise InflowRefused(f"this inflow is already {inflow.status}")
    if inflow.chain not in (config or settings.CONFIG).chain_names:
        raise InflowRefused(f"chain {inflow.chain} is not configured (DWS_CHAINS): its blocks cannot be re-examined")
    if len(tx_hash) != 66 or not tx_hash.startswith("0x"):
        raise InflowRefused("a transaction hash is 0x followed by 64 hex digits")
    rows = Donation.objects.filter(
        chain=inflow.chain, tx_hash=tx_hash, block_hash=inflow.block_hash, asset=inflow.asset
    )
    # A donation recorded before is already in the balance identity: it cannot be what is unexplained.
    known = set(rows.values_list("id", flat=True))
    result = crawl_single_block(FINALIZED, inflow.block_number, chain=inflow.chain, config=config, client=client)
    if result.held:
        raise InflowRefused(f"block {inflow.block_number} could not be re-examined now: {result.held}")
    rows = rows.exclude(id__in=known)
    if not rows.exists():
        why = "was already recorded, so it cannot explain this inflow" if known else "is not seen by the detection"
        raise InflowRefused(
            f"no new {inflow.asset} donation of transaction {tx_hash} found in block {inflow.block_number}: "
            f"it {why} (transactions, call traces, logs)"
        )
    credited = sum((r.amount for r in rows), Decimal(0))
    chain = (config or settings.CONFIG).chain(inflow.chain)
    decimals = (
        ETH_DECIMALS if inflow.asset == "eth" else next(c.scale for c in chain.stable_coins if c.asset == inflow.asset)
    )
    # Each row is rounded down to its column: what it leaves of the inflow below that is rounding, not money.
    rounding = 10 ** max(decimals - amount_scale(inflow.asset), 0) * len(rows)
    locked = inflow_mark_credited(
        chain,
        inflow_id=inflow_id,
        tx_hash=tx_hash,
        operator=operator,
        credited_raw=int(credited.scaleb(decimals)),
        tolerance=rounding,
    )
    # The audit line says what the crediting covered: the amount credited and what of the inflow it leaves.
    logger.warning(
        "unexplained inflow %d (block %d, %s %s) credited by %s as transaction %s: %s %s credited, %s %s left "
        "open (%s)",
        locked.pk,
        locked.block_number,
        inflow.amount,
        locked.asset,
        operator,
        tx_hash,
        credited,
        locked.asset,
        locked.amount if locked.status == InflowStatus.OPEN else inflow.amount - credited,
        locked.asset,
        ", ".join(f"donation id {r.id}: {r.amount} from {r.address}, {r.status}" for r in rows),
    )
    return locked
