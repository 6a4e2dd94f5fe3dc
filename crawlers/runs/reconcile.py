"""`reconcile`: the records checked against the chain over a range of finalized blocks (DESIGN invariants).

1. Every transfer to the donation address in a finalized block of the range -- a successful ETH
   transaction, or a Transfer log of a configured coin -- is recorded exactly once, in that block, with
   the chain's amount and donor, and is confirmed (unconfirmed is legitimate only while paused, or while
   a row held by a pause waits for the old-unconfirmed crawler: "pending", crawlers/runs/verdicts.py).
2. Nothing confirmed in the range is absent from its block, and no reverted transaction is confirmed.
3. donation_stats and every user_data row equal the sums of the confirmed donations.
4. The balance identity closes in every block (crawlers/scan/proof.py): the donation address's ETH, nonce
   and coin balances change by exactly what its transactions and logs explain; a block where they do
   not is drift unless its unexplained inflow was closed by an operator; an open inflow is drift.

The chain is read the way the crawlers read it (`prove_range`: batched blocks, one eth_getLogs per
range, batched receipts of the ETH candidates; finalized blocks through DWS_BLOCK_CACHE when set), so
a day of blocks costs a few hundred round trips. Blocks the provider will not give are reported as not
checked: an incomplete check is never a clean one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.utils import timezone

from crawlers.chain.clients import make_reconcile_client
from crawlers.chain.outcomes import NoEvidenceError
from crawlers.chain.rpc import RpcClient
from crawlers.chain.tips import ChainMismatchError, chain_tips, check_chain_id
from crawlers.models import FINALIZED, InflowStatus, ReconcileRun, UnexplainedInflow
from crawlers.record.cursors import cursor_get
from crawlers.runs.drift import drift_of, freeze_on_drift
from crawlers.runs.earlier_rules import credited_to_the_bridge, set_aside_earlier_rules
from crawlers.runs.verdicts import accounted_for, internal_rows, past_the_cap, traces_unreadable
from crawlers.scan.own import open_mints
from crawlers.scan.proof import prove_range
from crawlers.scan.ranges import RANGE_BLOCKS
from crawlers.scan.results import ReadMode
from donations.ledger import ledger_discrepancies, ledger_snapshot
from donations.models import CampaignStatus, Donation, DonationStats, DonationStatus
from donations.sightings import DonationKey, Transfer, donation_key
from dws_project.chain_settings import ChainSettings
from dws_project.config import Config

logger = logging.getLogger("dws.crawlers")

# Reconcile reads finalized blocks (through DWS_BLOCK_CACHE); its debug-store files are named "reconcile-N".
RECONCILE = ReadMode("reconcile", final=True)


def reconcile_lock(chain: str) -> str:
    """The non-overlap lock of a chain's reconciles (the command, the daily task and a worker's start)."""
    return f"reconcile-{chain}"


class ReconcileError(Exception):
    """The range cannot be checked at all (no finalized block from the provider, an empty range)."""


@dataclass
class ReconcileReport:
    chain: str
    from_block: int
    to_block: int  # the last block checked
    started_at: datetime
    transfers: int = 0
    discrepancies: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)  # the discrepancies that are missing evidence, not drift
    # Open unexplained inflows: reconcile fails (exit 1) until an operator closes them, but they are money
    # nobody can attribute yet, not records disagreeing with the chain, so they never freeze the sale
    # (anyone could otherwise pause it by sending dust through a contract).
    awaiting_operator: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.discrepancies

    def summary(self) -> str:
        verdict = "no drift" if self.ok else f"{len(self.discrepancies)} discrepancy(ies)"
        text = (
            f"reconcile {self.chain} blocks {self.from_block}..{self.to_block}: "
            f"{self.transfers} transfer(s) on chain, {verdict}"
        )
        return text + "".join(f"; {note}" for note in self.notes)


def _describe(t: Transfer) -> str:
    where = "" if t.log_index is None else f" log {t.log_index}"
    where += "" if t.trace_address is None else f" frame {t.trace_address}"
    return f"{t.asset} transfer {t.tx_hash}{where} of {t.amount} from {t.donor}"


def _order(t: Transfer) -> tuple:
    return t.block_number, t.tx_hash, t.log_index if t.log_index is not None else -1, t.trace_address or ""


def reconcile(
    from_block: int,
    to_block: int,
    *,
    chain: str | None = None,
    config: Config | None = None,
    client: RpcClient | None = None,
    trigger: str = "command",
    day: tuple[int, int] | None = None,
) -> ReconcileReport:
    """Check blocks from_block..to_block of `chain` (the first chain when None), clipped to what is finalized
    and crawled; store the result (with `day`, the first and last block of the day a daily run is covering).
    Drift on any chain freezes the one campaign."""
    config = config or settings.CONFIG
    chain_ = config.chain(chain) if chain else config.first_chain
    return _reconcile(chain_, from_block, to_block, client, trigger, day)


def _reconcile(
    chain: ChainSettings,
    from_block: int,
    to_block: int,
    client: RpcClient | None,
    trigger: str,
    day: tuple[int, int] | None = None,
) -> ReconcileReport:
    client = client or make_reconcile_client(chain)
    if from_block < 0 or to_block < from_block:
        raise ReconcileError(f"empty range {from_block}..{to_block}")
    check_chain_served(client, chain)
    tips = chain_tips(client)
    if tips.finalized is None:
        raise ReconcileError("the provider did not say which block is finalized; try again")
    cursor = cursor_get(chain=chain.name, label=FINALIZED)
    crawled = cursor.value if cursor else from_block - 1
    end = min(to_block, tips.finalized, crawled)
    report = ReconcileReport(chain.name, from_block, end, timezone.now())
    if end < to_block:
        report.notes.append(
            f"blocks {end + 1}..{to_block} not checked (finalized block {tips.finalized}, finalized cursor {crawled})"
        )

    on_chain: dict[DonationKey, Transfer] = {}
    reverted: dict[str, int] = {}
    # The balance proof (`prove_range`) judges each range by the address's own balances, whatever
    # the detector saw: a block it cannot close is drift unless an operator closed its inflow.
    inflows = {
        (i.block_hash, i.asset): i
        for i in UnexplainedInflow.objects.filter(chain=chain.name, block_number__range=(from_block, end))
    }
    unchecked: list[range] = []  # blocks without evidence: their rows can be neither confirmed nor refuted
    blind: set[str] = set()  # hashes of blocks whose call traces reconcile cannot read: internal rows unchecked
    own: set[tuple[str, str]] = set()  # (tx, asset) of the internal movements: the address's own money
    position = from_block
    while position <= end:
        stop = min(end, position + RANGE_BLOCKS - 1)
        found = prove_range(client, chain, position, stop, RECONCILE)
        blocks, held = found.blocks, found.held
        for block in blocks:
            unread = past_the_cap(block)  # before open_mints takes the mints it could not read out of `own`
            open_mints(block)  # what the block writer records as inflows, by the same rule
            if unread:
                # Another provider may encode an answer longer than the crawlers' did: what did not fit here is
                # not known here, so its rows can be neither confirmed nor refuted.
                unchecked.append(range(block.header.number, block.header.number + 1))
            for asset, raw in block.unexplained:
                moved = f"{raw} raw units of {asset} arrived" if raw >= 0 else f"{-raw} raw units of {asset} left"
                where = f"block {block.header.number}: {moved} that no transfer explains"
                inflow = inflows.get((block.header.hash, asset))
                status = inflow.status if inflow else None
                blind_why = traces_unreadable(client, chain, block) if asset == "eth" and status is None else None
                rows_here = internal_rows(chain.name, block.header.hash) if blind_why else []
                if blind_why and accounted_for(raw, rows_here):
                    blind.add(block.header.hash)
                    report.discrepancies.append(
                        f"{where}: internal ETH not checked ({blind_why}); {len(rows_here)} internal "
                        "donation(s) recorded for it"
                    )
                    report.unchecked.append(report.discrepancies[-1])
                elif status is None and asset in unread:
                    report.discrepancies.append(f"{where}: not checked, {unread[asset]}")
                    report.unchecked.append(report.discrepancies[-1])
                elif status is None:
                    report.discrepancies.append(f"{where}, and no unexplained inflow is recorded for it")
                elif status == InflowStatus.OPEN:
                    report.discrepancies.append(f"{where} (open unexplained inflow)")
                    report.awaiting_operator.append(report.discrepancies[-1])
                else:
                    report.notes.append(f"{where} ({status} by an operator)")
            own |= {(movement.tx_hash, movement.asset) for movement in block.own}
            for transfer in block.transfers:
                on_chain[donation_key(transfer)] = transfer
            for tx_hash in block.reverted:
                reverted[tx_hash] = block.header.number
        if held is not None:
            why = f"not checked, no evidence from the provider ({held})"
            report.discrepancies.append(f"blocks {held.number}..{stop}: {why}")
            report.unchecked.append(report.discrepancies[-1])
            unchecked.append(range(held.number, stop + 1))
        position = stop + 1
    report.transfers = len(on_chain)

    # The records side is judged on one snapshot: the rows, the pause, the totals and the open inflows as
    # of one moment, whatever the crawlers commit meanwhile (donations/ledger.py `ledger_snapshot`).
    with ledger_snapshot():
        _judge_records(report, chain, from_block, end, on_chain, reverted, own, inflows, unchecked, blind)
    ReconcileRun.objects.create(
        chain=chain.name,
        trigger=trigger,
        from_block=from_block,
        to_block=end,
        started_at=report.started_at,
        ok=report.ok,
        transfers=report.transfers,
        discrepancies=report.discrepancies,
        summary=report.summary(),
        day_first_block=day[0] if day else None,
        day_last_block=day[1] if day else None,
    )
    (logger.info if report.ok else logger.error)("%s", report.summary())
    drift = drift_of(report.discrepancies, not_drift=report.unchecked + report.awaiting_operator)
    freeze_on_drift(chain=chain.name, from_block=report.from_block, to_block=report.to_block, drift=drift)
    return report


def _judge_records(
    report: ReconcileReport,
    chain: ChainSettings,
    from_block: int,
    end: int,
    on_chain: dict[DonationKey, Transfer],
    reverted: dict[str, int],
    own: set[tuple[str, str]],
    inflows: dict[tuple[str, str], UnexplainedInflow],
    unchecked: list[range],
    blind: set[str],
) -> None:
    """What the chain showed against the records, read on the caller's snapshot (report's lists grow)."""
    paused = DonationStats.objects.get().status == CampaignStatus.PAUSED
    tx_hashes = {t.tx_hash for t in on_chain.values()} | set(reverted)
    on_this_chain = Donation.objects.filter(chain=chain.name)
    rows = {
        donation_key(r): r
        for r in on_this_chain.filter(tx_hash__in=tx_hashes)
        | on_this_chain.filter(block_number__range=(from_block, end))
    }
    pending: list[int] = []
    report.notes += set_aside_earlier_rules(rows, on_chain, own, chain.donation_address)
    for key, transfer in sorted(on_chain.items(), key=lambda kv: _order(kv[1])):
        row = rows.get(key)
        at = f"block {transfer.block_number}: {_describe(transfer)}"
        inflow = inflows.get((transfer.block_hash, transfer.asset))
        if row is None and inflow is not None and inflow.status == InflowStatus.OPEN:
            report.discrepancies.append(f"{at} is not recorded (held by open unexplained inflow {inflow.pk})")
            report.awaiting_operator.append(report.discrepancies[-1])
        elif row is None and inflow is not None and transfer.tx_hash in inflow.reason:
            # set aside by the crawler for the operator, who closed it (no column could hold it as a row)
            report.notes.append(f"{at} was set aside as unexplained inflow {inflow.pk}, {inflow.status}")
        elif row is None:
            report.discrepancies.append(f"{at} is not recorded")
        elif row.block_hash != transfer.block_hash:
            report.discrepancies.append(f"{at} is recorded in block {row.block_number} ({row.block_hash}) instead")
        elif (row.asset, row.amount, row.address) != (transfer.asset, transfer.amount, transfer.donor):
            earlier = credited_to_the_bridge(row, transfer)
            if earlier is not None:
                report.notes.append(earlier)
            else:
                report.discrepancies.append(
                    f"{at} is recorded as {row.asset} {row.amount} from {row.address} (donation id {row.id})"
                )
        elif row.status == DonationStatus.CONFIRMED or (row.status == DonationStatus.UNCONFIRMED and paused):
            continue
        elif row.status == DonationStatus.UNCONFIRMED and row.held_at is not None:
            pending.append(row.id)
        elif row.status == DonationStatus.UNCONFIRMED and inflow is not None and inflow.status == InflowStatus.OPEN:
            # The latest crawler saw it (from the check provider, say), the finalized crawler's provider could
            # not (no traces): the block's open inflow holds this money until the operator credits it.
            report.discrepancies.append(
                f"{at} is unconfirmed (donation id {row.id}), held by open unexplained inflow {inflow.pk}"
            )
            report.awaiting_operator.append(report.discrepancies[-1])
        else:
            report.discrepancies.append(f"{at} is {row.status}, not confirmed (donation id {row.id})")
    for key, row in sorted(rows.items(), key=lambda kv: (kv[1].block_number, kv[1].id)):
        if row.status != DonationStatus.CONFIRMED:
            continue
        if row.tx_hash in reverted and row.log_index is None:
            report.discrepancies.append(
                f"block {reverted[row.tx_hash]}: donation id {row.id} ({row.tx_hash}) is confirmed but reverted"
            )
        elif (
            from_block <= row.block_number <= end
            and key not in on_chain
            and not any(row.block_number in blocks for blocks in unchecked)
            and not (row.trace_address is not None and row.block_hash in blind)
        ):
            report.discrepancies.append(
                f"block {row.block_number}: confirmed donation id {row.id} ({row.asset} {row.amount}, "
                f"{row.tx_hash}) is not in its block"
            )
    if pending:
        report.notes.append(
            f"{len(pending)} donation(s) held by the pause pending the old-unconfirmed crawler "
            f"(donation id(s) {', '.join(map(str, pending[:10]))}{' ...' if len(pending) > 10 else ''})"
        )
    report.discrepancies += ledger_discrepancies()
    for inflow in UnexplainedInflow.objects.filter(chain=chain.name, status=InflowStatus.OPEN).order_by("block_number"):
        report.discrepancies.append(
            f"block {inflow.block_number}: unexplained inflow {inflow.pk} of {inflow.amount} {inflow.asset} is open "
            '(see docs/operating.md, "an unexplained inflow")'
        )
        report.awaiting_operator.append(report.discrepancies[-1])


def check_chain_served(client: RpcClient, chain: ChainSettings) -> None:
    """A check of another network's blocks would report drift that is not there (or miss what is)."""
    try:
        check_chain_id(client, chain)
    except NoEvidenceError as exc:
        raise ReconcileError(f"the provider did not say which chain it serves ({exc}); try again") from None
    except ChainMismatchError as exc:
        logger.critical("reconcile %s: %s", chain.name, exc.hold_reason())
        raise ReconcileError(exc.hold_reason()) from None
