"""What /proof.json and /proof publish: per chain, the stored proof ranges (crawlers/record/proof_ranges.py) with
what our records say arrived in each, the open unexplained inflows and the time of the last check.

For every asset of a proven range the published figures close exactly, in raw units:

    closing - opening = credited + unexplained + uncredited - left

`opening`, `closing` and `left` are what the proof read from the chain and stored; `credited` is the sum of
the range's confirmed donations (exactly the rows of /proof/donations.csv), `unexplained` the inflows
recorded in its blocks that are not credited (open, or closed as not a donation), and `uncredited` the
rest: value that arrived and is not a donation row (dust below the column's scale, what the 8-decimal ETH
column rounds off, a paused sale's donations not confirmed yet). Reading them from the records rather than
storing them means an operator's later "credit this transaction" moves the value from `unexplained` to
`credited` without the published proof and the CSV ever disagreeing.

Each range also lists the refunds paid by transfers in its blocks (the refund register, donations/refunds.py):
for ETH and the coins they are part of its `left`; each names its transaction, its Transfer log or call frame,
the recipient, the token and the raw amount, so a verifier can find the transfer on its own node.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from bisect import bisect_right
from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, cast

from django.conf import settings
from django.db import connection
from django.db.models import Count, Max, Sum

from crawlers.models import InflowStatus, ProofRange, ProofStatus, UnexplainedInflow
from donations.ledger import ledger_snapshot
from donations.models import Donation, DonationStatus
from donations.refund_models import Refund, RefundStatus
from donations.wire import inflow_public, refund_paid_public
from dws_project.cache import CacheOrLocal
from dws_project.config import Config
from dws_project.wire import utc_second_text

DEFAULT_RANGES = 100
MAX_RANGES = 500
MAX_INFLOWS = 100  # open inflows listed per chain (the total is given beside them)
ETH_DECIMALS = 18


VERIFIER = Path(settings.BASE_DIR) / "deploy" / "verify_proof.py"  # served as /proof/verify.py


@functools.cache
def verifier_fingerprint() -> dict[str, str]:
    """The verifier's version (its `__version__`) and the SHA-256 of the file served, so a donor can tell
    the copy they run is the one the project publishes (README.md gives the same two)."""
    body = VERIFIER.read_bytes()
    named = re.search(rb'^__version__ = "([^"]+)"$', body, re.MULTILINE)
    return {
        "path": "/proof/verify.py",
        "version": named.group(1).decode() if named else "unknown",
        "sha256": hashlib.sha256(body).hexdigest(),
    }


@dataclass(frozen=True)
class ChainAssets:
    """A chain as the proof describes it: where donations go and which assets it accounts for."""

    chain: str
    chain_id: int | None
    donation_address: str
    assets: tuple[tuple[str, str | None, int], ...]  # (asset, contract or None for ETH, decimals)

    def decimals(self, asset: str) -> int:
        return next(d for a, _, d in self.assets if a == asset)


def proof_chains(config: Config) -> list[ChainAssets]:
    """The configured chains, in DWS_CHAINS order."""
    return [
        ChainAssets(
            chain.name,
            chain.chain_id,
            chain.donation_address,
            (("eth", None, ETH_DECIMALS), *((c.asset, c.contract, c.scale) for c in chain.stable_coins)),
        )
        for chain in config.chains
    ]


@ledger_snapshot()  # ranges, donations and inflows as of one moment: a block committed meanwhile is all in or out
def proof_report(
    config: Config,
    *,
    chain: str | None = None,
    from_block: int | None = 0,
    limit: int = DEFAULT_RANGES,
) -> dict[str, Any]:
    """The /proof.json answer: every configured chain (or only `chain`), with up to `limit` ranges each
    from the one holding `from_block` on, and `next_from_block` to ask for the following page
    (`from_block` None: the newest `limit` ranges, for the page)."""
    limit = max(1, min(limit, MAX_RANGES))
    return {
        "verifier": verifier_fingerprint(),
        "chains": [
            _chain_report(found, from_block, limit)
            for found in proof_chains(config)
            if chain is None or found.chain == chain
        ],
    }


def _page(rows: Any, from_block: int | None, limit: int) -> tuple[list[ProofRange], int | None]:
    """A page of ranges in block order, and the block the next page starts from (None: no more)."""
    with_assets = rows.prefetch_related("assets")
    if from_block is None:
        return list(with_assets.order_by("-first_block")[:limit])[::-1], None
    page = list(with_assets.filter(last_block__gte=from_block).order_by("first_block")[: limit + 1])
    if len(page) > limit:
        return page[:limit], page[limit - 1].last_block + 1
    return page, None


def _chain_report(chain: ChainAssets, from_block: int | None, limit: int) -> dict[str, Any]:
    rows = ProofRange.objects.filter(chain=chain.chain)
    page, next_from = _page(rows, from_block, limit)
    checked = rows.aggregate(last=Max("checked_at"))["last"]
    proven_through = rows.filter(status=ProofStatus.PROVEN).aggregate(last=Max("last_block"))["last"]
    covered = rows.order_by("first_block").values_list("first_block", flat=True).first()
    inflows = UnexplainedInflow.objects.filter(chain=chain.chain, status=InflowStatus.OPEN).order_by(
        "block_number", "id"
    )
    return {
        "chain": chain.chain,
        "chain_id": chain.chain_id,
        "donation_address": chain.donation_address,
        "assets": [{"asset": a, "contract": c, "decimals": d} for a, c, d in chain.assets],
        "last_checked_at": utc_second_text(checked),
        "first_block": covered,
        "proven_through": proven_through,
        "unproven": [
            {"first_block": r.first_block, "last_block": r.last_block, "reason": r.reason}
            for r in rows.filter(status=ProofStatus.UNPROVEN).order_by("first_block")[:MAX_RANGES]
        ],
        "open_inflows_total": inflows.count(),
        "open_inflows": [inflow_public(i) for i in inflows[:MAX_INFLOWS]],
        "ranges": _ranges(chain, page),
        "next_from_block": next_from,
    }


class _ByBlock:
    """Sums per (range, asset) of rows keyed by block number, for a page of ranges in block order."""

    def __init__(self, page: list[ProofRange]) -> None:
        self._firsts = [r.first_block for r in page]
        self._page = page
        self.sums: dict[tuple[int, str], int] = defaultdict(int)
        self.counts: dict[tuple[int, str], int] = defaultdict(int)
        self.items: dict[int, list[dict[str, Any]]] = defaultdict(list)  # range -> what it itemises

    def _range_of(self, block: int) -> int | None:
        at = bisect_right(self._firsts, block) - 1
        return self._page[at].pk if at >= 0 and block <= self._page[at].last_block else None

    def add(self, block: int, asset: str, raw: int, count: int = 1, item: dict[str, Any] | None = None) -> None:
        pk = self._range_of(block)
        if pk is not None:
            self.sums[(pk, asset)] += raw
            self.counts[(pk, asset)] += count
            if item is not None:
                self.items[pk].append(item)


def _ranges(chain: ChainAssets, page: list[ProofRange]) -> list[dict[str, Any]]:
    if not page:
        return []
    low, high = page[0].first_block, page[-1].last_block
    credited, unexplained = _ByBlock(page), _ByBlock(page)
    confirmed = (
        Donation.objects.filter(
            chain=chain.chain, status=DonationStatus.CONFIRMED, block_number__gte=low, block_number__lte=high
        )
        .values("block_number", "asset")
        .annotate(total=Sum("amount"), rows=Count("id"))
    )
    for row in confirmed:
        credited.add(row["block_number"], row["asset"], _raw(row["total"], chain.decimals(row["asset"])), row["rows"])
    inflows = (
        UnexplainedInflow.objects.filter(chain=chain.chain, block_number__gte=low, block_number__lte=high)
        .exclude(status=InflowStatus.CREDITED)
        .values("block_number", "asset")
        .annotate(total=Sum("amount_raw"))
    )
    for inflow in inflows:
        unexplained.add(inflow["block_number"], inflow["asset"], int(inflow["total"]))
    itemised = _itemised(chain, page, low, high)
    paid = _refunds_paid(chain, page)
    return [{**_range(chain, r, credited, unexplained, itemised), "refunds": paid.get(r.pk, [])} for r in page]


def _itemised(chain: ChainAssets, page: list[ProofRange], low: int, high: int) -> _ByBlock:
    """Per range, what its `unexplained` and the paused part of its `uncredited` are made of, one by one, so
    the verifier can check each against the chain: the inflows (open, or closed as not a donation) and the
    donations recorded and not confirmed yet (a paused sale's backlog; a row of a block a re-org replaced
    until the judge fails it). Dust, rounding and the address's own money the verifier finds on chain by
    the crawler's rules."""
    found = _ByBlock(page)
    inflows = (
        UnexplainedInflow.objects.filter(chain=chain.chain, block_number__gte=low, block_number__lte=high)
        .exclude(status=InflowStatus.CREDITED)
        .order_by("block_number", "id")
    )
    for inflow in inflows:
        item = {"kind": "inflow", **inflow_public(inflow), "status": inflow.status, "tx_hash": inflow.tx_hash}
        del item["recorded_at"]
        found.add(inflow.block_number, inflow.asset, 0, 0, item)
    pending = Donation.objects.filter(
        chain=chain.chain, status=DonationStatus.UNCONFIRMED, block_number__gte=low, block_number__lte=high
    ).order_by("block_number", "id")
    for row in pending:
        found.add(
            row.block_number,
            row.asset,
            0,
            0,
            {
                "kind": "pending",
                "block_number": row.block_number,
                "block_hash": row.block_hash,
                "asset": row.asset,
                "tx_hash": row.tx_hash,
                "log_index": "" if row.log_index is None else str(row.log_index),
                "trace_address": row.trace_address or "",
                "donor": row.address,
                "amount": format(row.amount, "f"),
            },
        )
    return found


def _refunds_paid(chain: ChainAssets, page: list[ProofRange]) -> dict[int, list[dict[str, Any]]]:
    """Per range of the page, the refunds paid by transfers in its blocks (part of its `left` for ETH and the
    coins; a stray token's is outside the assets the proof accounts), in block order."""
    firsts = [r.first_block for r in page]
    found: dict[int, list[dict[str, Any]]] = defaultdict(list)
    rows = Refund.objects.filter(
        chain=chain.chain,
        status=RefundStatus.PAID,
        paid_block_number__gte=page[0].first_block,
        paid_block_number__lte=page[-1].last_block,
    ).order_by("paid_block_number", "paid_tx_hash", "paid_log_index", "paid_trace_address", "id")
    for refund in rows:
        block = refund.paid_block_number
        assert block is not None  # a paid row names its payment's block (refund_paid_names_its_payment)
        at = bisect_right(firsts, block) - 1
        if at >= 0 and block <= page[at].last_block:
            found[page[at].pk].append(refund_paid_public(refund))
    return found


def _raw(amount: Decimal, decimals: int) -> int:
    """A stored donation amount in the asset's raw units (exact: the column keeps at most 10 decimals)."""
    return int(amount.scaleb(decimals))


def _range(
    chain: ChainAssets, row: ProofRange, credited: _ByBlock, unexplained: _ByBlock, itemised: _ByBlock
) -> dict[str, Any]:
    stored = {a.asset: a for a in row.assets.all()}
    assets = []
    for asset, _, _ in chain.assets:
        key = (row.pk, asset)
        figures = stored.get(asset)
        opening, closing, left = (
            (figures.opening, figures.closing, figures.left) if figures is not None else (None, None, None)
        )
        uncredited = (
            int(closing) - int(opening) + int(left) - credited.sums[key] - unexplained.sums[key]
            if opening is not None and closing is not None and left is not None
            else None
        )
        assets.append(
            {
                "asset": asset,
                "opening": _text(opening),
                "closing": _text(closing),
                "credited": str(credited.sums[key]),
                "donations": credited.counts[key],
                "unexplained": str(unexplained.sums[key]),
                "uncredited": _text(uncredited),
                "left": _text(left),
            }
        )
    return {
        "first_block": row.first_block,
        "last_block": row.last_block,
        "last_block_hash": row.last_block_hash,
        "status": row.status,
        "reason": row.reason,
        "checked_at": utc_second_text(row.checked_at),
        "nonce": {"opening": _text(row.nonce_opening), "closing": _text(row.nonce_closing)},
        "assets": assets,
        "inflows": [i for i in itemised.items[row.pk] if i["kind"] == "inflow"],
        "pending": [i for i in itemised.items[row.pk] if i["kind"] == "pending"],
    }


def _text(value: Decimal | int | None) -> str | None:
    return None if value is None else str(int(value))


# --- the shared cache: one entry per chain and page of ranges, rebuilt only when what it shows changed ---
#
# A caller's `from_block` and `limit` never make a cache entry: the answer is cut from fixed pages of
# PAGE_RANGES ranges (by `ProofRange.ordinal`, which never changes once written), each cached once per chain
# with the version of what it shows (its ranges, and the confirmed donations and inflows of its blocks),
# beside one summary per chain (everything else the chain's entry shows). A request checks those versions
# (a few indexed aggregates over the page's own rows) and rebuilds only a page whose version moved, so a
# client spreading `from_block` over every value costs what one walk through the pages costs, once per
# change, and Redis holds one copy of the proof whatever the callers ask.

PAGE_RANGES = 100
CACHE_FORMAT = 4  # bump when what a cached page or summary holds changes shape: every entry is rebuilt

_SUMMARY_VERSION_SQL = """
SELECT (SELECT concat_ws('/', ordinal, last_block, checked_at) FROM proof_range WHERE chain = %(chain)s
        ORDER BY ordinal DESC LIMIT 1),
       (SELECT concat_ws('/', count(*), count(*) FILTER (WHERE status = 'open'), max(created_at),
                         max(resolved_at), sum(amount_raw) FILTER (WHERE status = 'open'))
        FROM unexplained_inflow WHERE chain = %(chain)s)
"""

# The page's ranges (written after the page's last ordinal or extended, its checked_at moves), and what the
# records hold in its blocks: the donations, confirmed (summed) or not yet (itemised as `pending`), whose
# status changes move a count and whose re-recording in another block moves the sum of their blocks; and the
# inflows (itemised, with their status and the transaction an operator named when resolving one; a partial
# credit lowers the amount of one still open, so their sum is in it too); and the refunds paid in them.
_PAGE_VERSION_SQL = """
WITH page AS (
    SELECT count(*) AS ranges, min(first_block) AS low, max(last_block) AS high, max(checked_at) AS checked
    FROM proof_range WHERE chain = %(chain)s AND ordinal >= %(first)s AND ordinal < %(end)s
)
SELECT concat_ws('/', page.ranges, page.low, page.high, page.checked,
       (SELECT concat_ws(':', count(*) FILTER (WHERE status = 'confirmed'),
                         count(*) FILTER (WHERE status = 'unconfirmed'), max(id), max(modified_at),
                         sum(block_number))
        FROM donation WHERE chain = %(chain)s AND block_number BETWEEN page.low AND page.high),
       (SELECT concat_ws(':', count(*), count(*) FILTER (WHERE status = 'open'),
                         count(*) FILTER (WHERE status = 'credited'), max(created_at), max(resolved_at),
                         sum(amount_raw) FILTER (WHERE status <> 'credited'))
        FROM unexplained_inflow WHERE chain = %(chain)s AND block_number BETWEEN page.low AND page.high),
       (SELECT concat_ws(':', count(*), max(modified_at)) FROM refund
        WHERE chain = %(chain)s AND status = 'paid' AND paid_block_number BETWEEN page.low AND page.high))
FROM page
"""


def cached_proof_json(
    config: Config,
    *,
    seconds: int,
    chain: str | None = None,
    from_block: int | None = 0,
    limit: int = DEFAULT_RANGES,
) -> str:
    """`proof_report` as the /proof.json body, its pages and summaries kept in the shared cache (Redis, every
    web process) as JSON text until what they show changes, each for at most `seconds` unread (0: computed
    for each caller): a window is spliced from the pages' text, never rendered again. Redis down: each process
    keeps the pages itself meanwhile (`CacheOrLocal`)."""
    if seconds <= 0:
        return _json(proof_report(config, chain=chain, from_block=from_block, limit=limit))
    limit = max(1, min(limit, MAX_RANGES))
    chains = []
    for found in proof_chains(config):
        if chain is not None and found.chain != chain:
            continue
        chains.append(_cached_chain_json(found, from_block, limit, seconds))
    return '{"verifier":' + _json(verifier_fingerprint()) + ',"chains":[' + ",".join(chains) + "]}"


def cached_proof_report(config: Config, *, seconds: int, **params: Any) -> dict[str, Any]:
    """`cached_proof_json`, read back (for the /proof page)."""
    return cast(dict[str, Any], json.loads(cached_proof_json(config, seconds=seconds, **params)))


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _cached_chain_json(chain: ChainAssets, from_block: int | None, limit: int, seconds: int) -> str:
    summary_version = _version(_SUMMARY_VERSION_SQL, chain=chain.chain)
    # Everything but the ranges: what `_chain_report` says of the chain with an empty page, as an object's text.
    summary = _cached(f"{chain.chain}:summary", summary_version, seconds, lambda: _summary_json(chain))
    total = _range_count(chain.chain)
    # from_block None: the newest `limit` ranges (the page's view)
    start = max(0, total - limit) if from_block is None else _ordinal_holding(chain.chain, from_block, total)
    end = min(total, start + limit)
    texts: list[str] = []
    last_blocks: list[int] = []
    for number in range(start // PAGE_RANGES, (end - 1) // PAGE_RANGES + 1) if end > start else ():
        page = _cached_page(chain, number, seconds)
        texts += page["ranges"]
        last_blocks += page["last_blocks"]
    offset = start - (start // PAGE_RANGES) * PAGE_RANGES
    texts, last_blocks = texts[offset : offset + end - start], last_blocks[offset : offset + end - start]
    more = from_block is not None and end < total and bool(last_blocks)
    next_from = last_blocks[-1] + 1 if more else None
    return f'{summary[:-1]},"ranges":[{",".join(texts)}],"next_from_block":{_json(next_from)}}}'


def _summary_json(chain: ChainAssets) -> str:
    report = _chain_report(chain, None, 0)
    return _json({k: v for k, v in report.items() if k not in ("ranges", "next_from_block")})


def _cached_page(chain: ChainAssets, number: int, seconds: int) -> dict[str, Any]:
    """Page `number` of the chain's ranges (ordinals number*PAGE_RANGES onwards): each range's JSON text
    and last block, from the cache when the page's version has not moved."""
    first, end = number * PAGE_RANGES, (number + 1) * PAGE_RANGES
    version = _version(_PAGE_VERSION_SQL, chain=chain.chain, first=first, end=end)

    def build() -> dict[str, Any]:
        rows = ProofRange.objects.filter(chain=chain.chain, ordinal__gte=first, ordinal__lt=end)
        ranges = _ranges(chain, list(rows.prefetch_related("assets").order_by("first_block")))
        return {"ranges": [_json(r) for r in ranges], "last_blocks": [r["last_block"] for r in ranges]}

    return cast(dict[str, Any], _cached(f"{chain.chain}:page:{number}", version, seconds, build))


# Redis away: each process keeps up to this many pages itself (about 100 KB each) until it answers again.
LOCAL_MAX_PAGES = 256
_pages = CacheOrLocal(max_entries=LOCAL_MAX_PAGES)


def _cached(name: str, version: str, seconds: int, build: Any) -> Any:
    """The value cached under `name` when it was built at `version`, else `build()` cached so (the version is
    read before building: a write meanwhile leaves an older version beside it, rebuilt on the next read)."""
    key = f"proof-report:{CACHE_FORMAT}:{name}"
    entry = _pages.get(key)
    if isinstance(entry, dict) and entry.get("version") == version and "value" in entry:
        return entry["value"]
    value = build()
    _pages.set(key, {"version": version, "value": value}, seconds)
    return value


def _version(sql: str, **params: Any) -> str:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return "|".join("" if v is None else str(v) for v in row) if row else ""


def _range_count(chain: str) -> int:
    last = ProofRange.objects.filter(chain=chain).order_by("-ordinal").values_list("ordinal", flat=True).first()
    return 0 if last is None else last + 1


def _ordinal_holding(chain: str, from_block: int, total: int) -> int:
    """The ordinal of the first range that ends at or after `from_block` (`total` when none does)."""
    found = (
        ProofRange.objects.filter(chain=chain, last_block__gte=from_block)
        .order_by("last_block")
        .values_list("ordinal", flat=True)
        .first()
    )
    return total if found is None else found
