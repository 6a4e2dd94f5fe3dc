"""The old-unconfirmed crawler: the judge of donations that stayed unconfirmed for over 30 minutes.

Each run takes at most 500 of them, oldest first, and looks them up in batches: the transactions by
hash, then the finalized blocks they sit in (through DWS_BLOCK_CACHE when set) and their receipts.

* In a finalized block that carries it, with a receipt saying it succeeded: confirmed through
  `donations_confirm`, the crediting path the finalized crawler uses (so a pause holds it there).
  If it now sits in another block than the one recorded (re-mined after a re-org), that block is
  re-crawled by the finalized crawler's own single-block path, which records it where it is -- unless
  that block proves the transfer gone (crawlers/runs/evidence.py): its receipt there reports a revert,
  or succeeded without the row's Transfer, or the trace shows no such frame any more: failed, reason
  on the row.
* A finalized block that was fetched and does not carry it, or a receipt reporting a revert: failed.
* Absent from both chain and mempool (the provider answered null): `absent_count` + 1. Failed only
  once the count reaches 3 consecutive runs AND the block it was seen in is over 24 hours old; any
  sighting resets the count. A single null from a lagging node therefore never fails a donation.
* ETH from an internal call (a row with a trace address): its receipt says status 1 AND a trace of the
  transaction (debug_traceTransaction or trace_transaction, per DWS_TRACE) shows the frame moving that
  amount from that donor to us. A trace the provider cannot or will not give proves nothing either
  way: the row is left untouched, never failed for it.
* Everything else is left untouched: in the mempool, in a block not yet finalized, a block or receipt
  the provider would not give, an error object, a 429, a time-out.

Which rows a run takes: the unconfirmed ones older than 30 minutes whose next-look time has come (NULL:
now), the ones never looked at or due longest first, at most 500. A row left unresolved is given a
next-look time further out the older it is (an eighth of its age, 5 minutes to 6 hours), so rows that
cannot resolve never keep a resolvable one out of the batch; a row absent from the chain is looked at
again no later than the end of its 24 h grace, and after it at every run, so sustained absence fails it
within about 45 minutes of the grace. A row proven but held by a pause (`held_at`) is left out while
paused and taken first, whatever its age, once the campaign is not paused.

Rows are never deleted; a failure recomputes the statistics.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from crawlers.chain.block_store import fetch_blocks
from crawlers.chain.calls import receipt_calls, transaction_calls
from crawlers.chain.clients import make_check_client, make_client
from crawlers.chain.files import debug_dump
from crawlers.chain.outcomes import Answer, NoEvidence, NoEvidenceError
from crawlers.chain.rpc import RpcClient
from crawlers.chain.tips import ChainMismatchError, tip_block
from crawlers.decode.blocks import block_carries
from crawlers.models import FINALIZED
from crawlers.runs.coin_scales import require_coin_scales
from crawlers.runs.crawl import crawl_single_block
from crawlers.runs.evidence import NO_LONGER_FRAMED, absent_from_new_block, internal_frame_shown, receipt_proves
from crawlers.runs.fail_agreement import ProposedFailure, answered, block_hash_of, failures_agreed
from donations.judging import (
    donations_absence_record,
    donations_confirm,
    donations_fail_unconfirmed,
    donations_look_later,
)
from donations.models import CampaignStatus, Donation, DonationStats, DonationStatus
from donations.services import DonationOutcome
from dws_project.chain_settings import ChainSettings
from dws_project.config import Config
from dws_project.locks import chain_writer

logger = logging.getLogger("dws.crawlers")

OLD_UNCONFIRMED = "old-unconfirmed"
MIN_AGE = timedelta(minutes=30)  # younger donations are still the latest/finalized crawlers' business
ABSENCE_GRACE = timedelta(hours=24)  # a vanished transaction is failed only once its block is this old
SUSTAINED_ABSENCE_RUNS = 3  # ... and it was absent on this many consecutive runs (~45 minutes)
BATCH_LIMIT = 500  # donations per run: a provider batch never grows unbounded, a backlog drains oldest first
LOOK_AGAIN_MIN = timedelta(minutes=5)  # an unresolved row is looked at again after 1/8 of its age, within these
LOOK_AGAIN_MAX = timedelta(hours=6)
_NOT_CARRIED = "its finalized block was fetched and does not carry it"


@dataclass
class JudgeResult:
    chain: str
    examined: int = 0
    confirmed: int = 0
    held_paused: int = 0
    failed: int = 0
    recrawled_blocks: int = 0
    untouched: Counter = field(default_factory=Counter)  # why -> how many
    # Proven but held by a pause in this run: marked `held_at`, judged first once the campaign is not paused.
    paused_ids: list[int] = field(default_factory=list)
    # Left only because the check provider (DWS_RPC_CHECK_URL) gave no evidence: judged again at the next
    # run, not pushed out (a check provider down for a while costs those rows only that while).
    waiting_ids: set[int] = field(default_factory=set)
    held: str | None = None  # the whole run could not judge anything

    def summary(self) -> str:
        text = (
            f"crawl {OLD_UNCONFIRMED} on {self.chain}: {self.examined} examined, {self.confirmed} confirmed, "
            f"{self.held_paused} held (paused), {self.failed} failed, {self.recrawled_blocks} block(s) re-crawled"
        )
        if self.untouched:
            text += "; untouched: " + ", ".join(f"{n} {why}" for why, n in sorted(self.untouched.items()))
        return text + (f"; held: {self.held}" if self.held else "")


def crawl_old_unconfirmed(
    *,
    chain: str | None = None,
    config: Config | None = None,
    client: RpcClient | None = None,
    now: datetime | None = None,
) -> JudgeResult:
    """One run of the judge over the oldest unconfirmed donations of `chain` (the first chain when None)."""
    config = config or settings.CONFIG
    chain_ = config.chain(chain) if chain else config.first_chain
    with chain_writer(chain_.name, OLD_UNCONFIRMED) as mine:  # exclusive in PostgreSQL too
        if not mine:
            result = JudgeResult(chain_.name)
            result.held = f"another run of the judge of {chain_.name} holds its PostgreSQL lock; skipped"
            return result
        return _run(config, chain_, client or make_client(chain_), now or timezone.now())


def _run(config: Config, chain: ChainSettings, client: RpcClient, now: datetime) -> JudgeResult:
    result = JudgeResult(chain.name)
    rows = _batch(chain.name, now)
    result.examined = len(rows)
    if not rows:
        return result
    _judge(rows, config, chain, client, now, result)
    if result.held is None:
        # Whatever is still unconfirmed could not be resolved this run: look again later, further out
        # the older it is, so it does not keep the rows behind it out of the next batch (a row absent
        # from the chain is looked at again by the time its grace ends, then at every run: sustained
        # absence fails it within SUSTAINED_ABSENCE_RUNS runs of the grace, whatever its age).
        # A row held by the pause in this very run stays due: crediting resumes with it.
        held = set(result.paused_ids) | result.waiting_ids
        donations_look_later(
            donation_ids=[row.id for row in rows if row.id not in held],
            now=now,
            min_delay=LOOK_AGAIN_MIN,
            max_delay=LOOK_AGAIN_MAX,
            absence_grace=ABSENCE_GRACE,
        )
    return result


def _batch(chain: str, now: datetime) -> list[Donation]:
    """The rows of `chain` this run judges. The pause's backlog (rows proven but held by a pause, `held_at`) is
    left alone while paused -- nothing is to be judged until crediting resumes, and 500 of them must not
    fill every batch while sustained absence goes on failing rows -- and comes first, whatever its age,
    as soon as the campaign is not paused, however the pause was lifted (the admin's Resume or the
    README's SQL). Holding a row cleared its next-look time; a held row this crawler then looks at and
    cannot resolve backs off like any other."""
    unconfirmed = Donation.objects.filter(chain=chain, status=DonationStatus.UNCONFIRMED)
    due = Q(block_time__lt=now - MIN_AGE) & (Q(next_look_at__isnull=True) | Q(next_look_at__lte=now))
    if DonationStats.objects.get().status == CampaignStatus.PAUSED:
        chosen = unconfirmed.filter(due, held_at__isnull=True)
    else:
        chosen = unconfirmed.filter(due | Q(held_at__isnull=False, next_look_at__isnull=True))
    ordered = chosen.order_by(
        F("held_at").asc(nulls_last=True), F("next_look_at").asc(nulls_first=True), "block_time", "id"
    )
    return list(ordered[:BATCH_LIMIT])


def _judge(
    rows: list[Donation], config: Config, chain: ChainSettings, client: RpcClient, now: datetime, result: JudgeResult
) -> None:
    try:
        finalized = tip_block(client, finalized=True, chain=chain)
        require_coin_scales(chain)
    except NoEvidenceError as exc:
        result.held = f"provider gave no evidence: {exc}"
        result.untouched["no finalized block from the provider"] += len(rows)
        return
    except ChainMismatchError as exc:
        result.held = exc.hold_reason()
        result.untouched["the provider serves another chain"] += len(rows)
        logger.critical("crawl %s on %s: %s", OLD_UNCONFIRMED, chain.name, result.held)
        return

    hashes = sorted({row.tx_hash for row in rows})
    # null means "this node knows no such transaction": an observation of absence, counted, never final.
    lookups = dict(
        zip(
            hashes,
            client.batch(transaction_calls(hashes), null_is_answer=True),
            strict=True,
        )
    )
    absent: list[Donation] = []
    seen: list[int] = []
    placed: dict[int, int] = {}  # donation id -> the finalized block the provider places it in
    for row in rows:
        outcome = lookups[row.tx_hash]
        if isinstance(outcome, NoEvidence):
            result.untouched[f"no answer for the transaction ({outcome.kind})"] += 1
            continue
        debug_dump(chain, f"txs-{row.tx_hash}.json", outcome.value)
        tx = outcome.value
        if tx is None:
            absent.append(row)
            continue
        if not isinstance(tx, dict):
            result.untouched["malformed transaction object"] += 1
            continue
        seen.append(row.id)
        if tx.get("blockNumber") is None or tx.get("blockHash") is None:
            result.untouched["in the mempool"] += 1
        elif int(tx["blockNumber"], 16) > finalized:
            result.untouched["block not finalized yet"] += 1
        else:
            placed[row.id] = int(tx["blockNumber"], 16)
    donations_absence_record(absent_ids=[r.id for r in absent], seen_ids=seen)

    vanished = []
    for row in absent:
        runs = row.absent_count + 1
        if runs >= SUSTAINED_ABSENCE_RUNS and row.block_time < now - ABSENCE_GRACE:
            vanished.append(row.id)
        elif row.block_time >= now - ABSENCE_GRACE:
            result.untouched["absent, block younger than 24 h"] += 1
        else:
            result.untouched["absent, not yet on 3 consecutive runs"] += 1

    numbers = sorted(set(placed.values()))
    blocks = dict(zip(numbers, fetch_blocks(client, chain, numbers, through_cache=True), strict=True))
    for number, outcome in blocks.items():
        if isinstance(outcome, Answer):
            debug_dump(chain, f"{OLD_UNCONFIRMED}-{number}.json", outcome.value)
    in_place = [row for row in rows if row.id in placed]
    receipt_hashes = sorted({row.tx_hash for row in in_place})
    receipts = dict(
        zip(
            receipt_hashes,
            client.batch(receipt_calls(receipt_hashes)) if receipt_hashes else [],
            strict=True,
        )
    )

    to_confirm: list[int] = []
    not_carried: list[Donation] = []
    reverted: list[Donation] = []
    recrawl: set[int] = set()
    moved_away: dict[str, list[Donation]] = {}  # reason -> donations
    for row in in_place:
        number = placed[row.id]
        block_outcome = blocks[number]
        if isinstance(block_outcome, NoEvidence):
            result.untouched[f"finalized block not fetchable ({block_outcome.kind})"] += 1
            continue
        block = block_outcome.value
        if not block_carries(block, row.tx_hash):
            not_carried.append(row)
            continue
        block_hash = (block.get("hash") or "").lower()
        receipt_outcome = receipts[row.tx_hash]
        if isinstance(receipt_outcome, Answer):
            debug_dump(chain, f"txr-{row.tx_hash}.json", receipt_outcome.value)
        receipt = receipt_outcome.value if isinstance(receipt_outcome, Answer) else None
        if (number, block_hash) != (row.block_number, row.block_hash):
            # Re-mined elsewhere: the finalized path records and confirms it there, unless that block
            # proves the transfer is gone from it (reverted there, no longer paying us).
            recrawl.add(number)
            gone = absent_from_new_block(row, receipt, number, block_hash, client, chain)
            if gone is not None:
                moved_away.setdefault(gone, []).append(row)
            continue
        proof = receipt_proves(row, receipt, block_hash, chain) if receipt is not None else None
        if proof is True and row.trace_address is not None:
            if internal_frame_shown(row, client, chain, result.untouched):
                to_confirm.append(row.id)
        elif proof is True:
            to_confirm.append(row.id)
        elif proof is False:
            reverted.append(row)
        else:
            result.untouched["no usable receipt"] += 1

    absent_reason = f"absent from chain and mempool on {SUSTAINED_ABSENCE_RUNS} consecutive runs, block over 24 h old"
    failures = [ProposedFailure(row, absent_reason) for row in absent if row.id in vanished]
    failures += [
        ProposedFailure(r, _NOT_CARRIED, placed[r.id], block_hash_of(blocks[placed[r.id]])) for r in not_carried
    ]
    failures += [
        ProposedFailure(
            r, "its finalized receipt reports a revert", r.block_number, r.block_hash, answered(receipts[r.tx_hash])
        )
        for r in reverted
    ]
    failures += [
        ProposedFailure(
            r,
            reason,
            placed[r.id],
            block_hash_of(blocks[placed[r.id]]),
            answered(receipts[r.tx_hash]),
            by_trace=reason.endswith(NO_LONGER_FRAMED),
        )
        for reason, gone in sorted(moved_away.items())
        for r in gone
    ]
    check = make_check_client(chain)
    if check is not None:  # failing moves money too: only on the same evidence from both
        failures = failures_agreed(
            check, client, chain, failures, result.untouched, label=OLD_UNCONFIRMED, waited=result.waiting_ids
        )
    tiers = config.sale_tiers
    for reason in dict.fromkeys(f.reason for f in failures):
        ids = [f.row.id for f in failures if f.reason == reason]
        result.failed += len(donations_fail_unconfirmed(donation_ids=ids, reason=reason, tiers=tiers))
    if to_confirm and chain.rpc_check_url is not None:
        # Confirmation needs the second provider's agreement: the finalized path's re-crawl asks it.
        recrawl.update(placed[i] for i in to_confirm)
        to_confirm = []
    if to_confirm:
        outcomes = donations_confirm(donation_ids=to_confirm, tiers=tiers)
        result.confirmed += sum(o == DonationOutcome.CONFIRMED for o in outcomes.values())
        result.paused_ids = [i for i, o in outcomes.items() if o == DonationOutcome.HELD_PAUSED]
        result.held_paused += len(result.paused_ids)
    for number in sorted(recrawl):
        recrawled = crawl_single_block(FINALIZED, number, chain=chain.name, config=config, client=client)
        result.recrawled_blocks += 1
        result.confirmed += recrawled.confirmed
        if recrawled.held:
            result.untouched[f"re-crawl of block {number} held"] += 1
            if recrawled.waiting_for_check:
                result.waiting_ids.update(row.id for row in in_place if placed[row.id] == number)
    return
