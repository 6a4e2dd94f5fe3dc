"""The public list of confirmed donations (/proof/donations.csv): only what the chain shows anyway, plus how
each was priced, so anyone can add them up against the published proof ranges and re-derive every token
count with the crediting rule.

The file is built once per change, never for a request: a task (`proof_csv_refresh`, every few seconds)
renders it in parts (donations/export_models.py), each one chain's confirmed donations in a span of blocks
of about PART_ROWS rows, and stores them in PostgreSQL, where every web process serves them as they are
(with an ETag, Last-Modified and byte ranges). Every change to what the file lists is noted by
`proof_csv_changed` in the transaction that makes it (a donation confirmed, or a confirmed one failed), so
the task rebuilds exactly the parts holding those blocks; donations confirmed past a chain's last part
start new ones. Each run also compares every stored part's row count with the confirmed donations in its
blocks and rebuilds one that differs (a confirmation that noted nothing is in the file by the next run).
Rows leave in (chain, block_number, id) order; PostgreSQL renders the amounts (NUMERIC::text keeps the
column's scale, never an exponent) and the times.
"""

from __future__ import annotations

import csv
import hashlib
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from donations.export_models import ProofCsvChange, ProofCsvPart

logger = logging.getLogger("dws.proof")

CHUNK = 2000  # rows per query while rendering
PART_ROWS = 2000  # rows a part gathers before the next starts (a part ends at a block's last row)
SUPERSEDED_KEEP = timedelta(hours=1)  # how long a replaced part stays readable for downloads under way
LAST_BLOCK = 2**63 - 1

HEADER = (
    "chain",
    "tx_hash",
    "log_index",
    "trace_address",
    "block_number",
    "block_hash",
    "donor",
    "asset",
    "amount",
    "usd_amount",
    "tokens",
    "token_price",
    "eth_price",
    "confirmed_at",
)

# `confirmed_at` is the confirmation time (the migration gave older confirmed rows their `modified_at`: a
# confirmed row is never written again, DESIGN.md invariant 4).
_CHUNK_SQL = """
    SELECT chain, id, block_number, tx_hash, COALESCE(log_index::text, ''), COALESCE(trace_address, ''), block_hash,
           address, asset, amount::text, usd_amount::text, tokens::text, price::text, COALESCE(eth_price::text, ''),
           to_char(COALESCE(confirmed_at, modified_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
    FROM donation
    WHERE status = 'confirmed' AND (chain, block_number, id) > (%s, %s, %s)
      AND chain >= %s AND chain <= %s AND block_number <= %s
    ORDER BY chain, block_number, id
    LIMIT %s
"""


class _Line:
    """csv.writer's file: hands back the line it was given instead of keeping it."""

    def write(self, line: str) -> str:
        return line


_WRITER = csv.writer(_Line(), lineterminator="\n")
HEADER_LINE: str = _WRITER.writerow(HEADER)


def _rendered(
    chain: str | None = None, first_block: int = 0, last_block: int = LAST_BLOCK, chunk: int = CHUNK
) -> Iterator[tuple[str, int, str]]:
    """(chain, block, CSV line) of every confirmed donation (of `chain` in first_block..last_block when given),
    in (chain, block_number, id) order, a chunk at a time (keyset pagination on donation_chain_block_idx)."""
    low, high = (chain, chain) if chain is not None else ("", "\uffff")
    after: tuple[str, int, int] = (low, first_block - 1, 2**63 - 1) if chain is not None else ("", -1, 0)
    while True:
        with connection.cursor() as cursor:
            cursor.execute(_CHUNK_SQL, [*after, low, high, last_block, chunk])
            rows = cursor.fetchall()
        for row in rows:
            yield row[0], row[2], _WRITER.writerow((row[0], row[3], row[4], row[5], row[2], *row[6:]))
        if len(rows) < chunk:
            return
        after = (rows[-1][0], rows[-1][2], rows[-1][1])


def confirmed_donation_lines(chunk: int = CHUNK) -> Iterator[str]:
    """The CSV as the records say it now, line by line: the header, then every confirmed donation, chain by
    chain in block order (what the stored parts add up to once built)."""
    yield HEADER_LINE
    for _, _, line in _rendered(chunk=chunk):
        yield line


# --- the writers' side: a change to what the file lists ---------------------------------------------------


def proof_csv_changed(blocks: Iterable[tuple[str, int]]) -> None:
    """A confirmed donation appeared in, or left, each of these (chain, block): call inside the transaction
    that does it (donations/totals.py's Deltas, which every confirmation and revert goes through), so the
    parts holding them are built again, and never for a change rolled back."""
    ProofCsvChange.objects.bulk_create(ProofCsvChange(chain=chain, block_number=block) for chain, block in blocks)


# --- the task's side: building the parts that changed -----------------------------------------------------


def proof_csv_refresh(*, now: datetime | None = None, part_rows: int = PART_ROWS) -> int:
    """Build the parts the recorded changes touch, and new ones for donations confirmed past each chain's
    last part; forget the replaced parts no download can still be reading. Returns the parts built."""
    now = now or timezone.now()
    built = sum(_refresh_chain(chain, part_rows) for chain in _chains())
    ProofCsvPart.objects.filter(superseded_at__lt=now - SUPERSEDED_KEEP).delete()
    return built


# Every chain with a donation row, one index probe per chain (a skip scan of donation_chain_block_idx).
_DONATION_CHAINS_SQL = """
    WITH RECURSIVE chains AS (
        (SELECT chain FROM donation ORDER BY chain LIMIT 1)
        UNION ALL
        SELECT (SELECT d.chain FROM donation AS d WHERE d.chain > chains.chain ORDER BY d.chain LIMIT 1)
        FROM chains WHERE chains.chain IS NOT NULL
    )
    SELECT chain FROM chains WHERE chain IS NOT NULL
"""


def _chains() -> list[str]:
    """Every chain the file has parts of, changes recorded for, or donations of. Each chain on its own: a
    first build that stopped after some chains (each is its own transaction) leaves the others without
    parts and without changes (their rows predate the stored file), and they are built on the next run."""
    known = set(ProofCsvPart.objects.values_list("chain", flat=True).distinct())
    known |= set(ProofCsvChange.objects.values_list("chain", flat=True).distinct())
    with connection.cursor() as cursor:
        cursor.execute(_DONATION_CHAINS_SQL)
        known |= {row[0] for row in cursor.fetchall()}
    return sorted(known)


def _refresh_chain(chain: str, part_rows: int) -> int:
    with transaction.atomic():
        changes = list(
            ProofCsvChange.objects.select_for_update(skip_locked=True)
            .filter(chain=chain)
            .values_list("id", "block_number")
        )
        parts = list(_current(chain).select_for_update().order_by("first_block"))
        # A part that does not hold what the database confirms in its blocks is built again, whatever was
        # noted: a confirmation that noted no change (a worker on older code, an operator's SQL) is in the
        # file by the next run, not only once another change touches its part.
        blocks = sorted({block for _, block in changes} | {part.first_block for part in _disagreeing(chain)})
        last = parts[-1] if parts else None
        # The tail: from the last part when it can take more rows, else from the block after it.
        if last is not None and last.rows < part_rows:
            tail_from, settled = last.first_block, parts[:-1]
        else:
            tail_from, settled = (last.last_block + 1 if last is not None else 0), parts
        built = 0
        for part in settled:
            if any(part.first_block <= block <= part.last_block for block in blocks):
                _supersede(part)
                lines = [line for _, _, line in _rendered(chain, part.first_block, part.last_block)]
                _store(chain, part.first_block, part.last_block, lines)
                built += 1
        if any(block >= tail_from for block in blocks) or _confirmed_after(chain, tail_from, last):
            if last is not None and tail_from == last.first_block:
                _supersede(last)
            built += _build_tail(chain, tail_from, part_rows)
        ProofCsvChange.objects.filter(id__in=[change for change, _ in changes]).delete()
    if built:
        logger.info("proof CSV: %d part(s) of %s built", built, chain)
    return built


# Each current part of a chain whose row count is not the count of confirmed donations in its blocks (a
# confirmed row never changes, so a count that matches is the same rows); one index range per part.
_DISAGREEING_SQL = """
    SELECT p.id FROM proof_csv_part AS p
    WHERE p.chain = %s AND p.superseded_at IS NULL AND p.rows <> (
        SELECT count(*) FROM donation AS d
        WHERE d.chain = p.chain AND d.status = 'confirmed' AND d.block_number BETWEEN p.first_block AND p.last_block
    )
"""


def _disagreeing(chain: str) -> QuerySet[ProofCsvPart]:
    with connection.cursor() as cursor:
        cursor.execute(_DISAGREEING_SQL, [chain])
        ids = [row[0] for row in cursor.fetchall()]
    return ProofCsvPart.objects.filter(id__in=ids)


def _current(chain: str) -> QuerySet[ProofCsvPart]:
    return ProofCsvPart.objects.filter(chain=chain, superseded_at__isnull=True)


def _confirmed_after(chain: str, tail_from: int, last: ProofCsvPart | None) -> bool:
    """Whether a confirmed donation sits beyond the parts (a change not recorded: rows from before the file
    was stored)."""
    beyond = max(tail_from, last.last_block + 1) if last is not None else tail_from
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT EXISTS (SELECT 1 FROM donation WHERE chain = %s AND block_number >= %s AND status = 'confirmed')",
            [chain, beyond],
        )
        return bool(cursor.fetchone()[0])


def _build_tail(chain: str, first_block: int, part_rows: int) -> int:
    """Parts for every confirmed donation of `chain` from `first_block` on, each ending at a block's last row
    once it holds `part_rows` rows."""
    built, start, block = 0, first_block, first_block
    lines: list[str] = []
    for _, row_block, line in _rendered(chain, first_block):
        if len(lines) >= part_rows and row_block != block:
            _store(chain, start, block, lines)
            built, start, lines = built + 1, block + 1, []
        lines.append(line)
        block = row_block
    if lines:
        _store(chain, start, block, lines)
        built += 1
    return built


def _supersede(part: ProofCsvPart) -> None:
    ProofCsvPart.objects.filter(pk=part.pk).update(superseded_at=timezone.now())


def _store(chain: str, first_block: int, last_block: int, lines: list[str]) -> None:
    body = "".join(lines).encode()
    ProofCsvPart.objects.create(
        chain=chain, first_block=first_block, last_block=last_block, rows=len(lines), size=len(body), body=body
    )


# --- the readers' side: what a download is made of --------------------------------------------------------


@dataclass(frozen=True)
class StoredCsv:
    """The file as stored now: its parts (id, size) in order, its version and when it last changed."""

    parts: tuple[tuple[int, int], ...]
    etag: str
    last_modified: datetime | None

    @property
    def size(self) -> int:
        return len(HEADER_LINE.encode()) + sum(size for _, size in self.parts)


def stored_csv() -> StoredCsv:
    """The current parts, without their bodies (one small query)."""
    parts = list(
        ProofCsvPart.objects.filter(superseded_at__isnull=True)
        .order_by("chain", "first_block")
        .values_list("id", "size", "built_at")
    )
    digest = hashlib.sha256(",".join(f"{pid}:{size}" for pid, size, _ in parts).encode()).hexdigest()[:32]
    return StoredCsv(
        parts=tuple((pid, size) for pid, size, _ in parts),
        etag=f'"{digest}"',
        last_modified=max((built for _, _, built in parts), default=None),
    )


def stored_csv_bytes(stored: StoredCsv, start: int = 0, end: int | None = None) -> Iterator[bytes]:
    """Bytes `start`..`end` (inclusive; None: to the end) of the file `stored` describes, a part at a time
    (a part replaced meanwhile is still readable for SUPERSEDED_KEEP)."""
    end = stored.size - 1 if end is None else end
    offset = 0
    header = HEADER_LINE.encode()
    pieces: list[tuple[int | None, int]] = [(None, len(header)), *stored.parts]
    for pid, size in pieces:
        if offset + size > start and offset <= end:
            body = header if pid is None else bytes(ProofCsvPart.objects.values_list("body", flat=True).get(pk=pid))
            yield body[max(0, start - offset) : end - offset + 1]
        offset += size
        if offset > end:
            return
