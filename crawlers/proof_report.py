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
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, cast

from django.core.cache import cache
from django.db.models import Count, Max, Sum
from redis.exceptions import RedisError

from crawlers.models import InflowStatus, ProofRange, ProofStatus, UnexplainedInflow
from donations.ledger import ledger_snapshot
from donations.models import Donation, DonationStatus
from donations.wire import inflow_public
from dws_project.config import Config
from dws_project.wire import utc_second_text

DEFAULT_RANGES = 100
MAX_RANGES = 500
MAX_INFLOWS = 100  # open inflows listed per chain (the total is given beside them)
ETH_DECIMALS = 18


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
        "chains": [
            _chain_report(found, from_block, limit)
            for found in proof_chains(config)
            if chain is None or found.chain == chain
        ]
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

    def add(self, block: int, asset: str, raw: int, count: int = 1) -> None:
        at = bisect_right(self._firsts, block) - 1
        if at >= 0 and block <= self._page[at].last_block:
            self.sums[(self._page[at].pk, asset)] += raw
            self.counts[(self._page[at].pk, asset)] += count


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
    return [_range(chain, r, credited, unexplained) for r in page]


def _raw(amount: Decimal, decimals: int) -> int:
    """A stored donation amount in the asset's raw units (exact: the column keeps at most 10 decimals)."""
    return int(amount.scaleb(decimals))


def _range(chain: ChainAssets, row: ProofRange, credited: _ByBlock, unexplained: _ByBlock) -> dict[str, Any]:
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
    }


def _text(value: Decimal | int | None) -> str | None:
    return None if value is None else str(int(value))


def cached_proof_report(config: Config, *, seconds: int, **params: Any) -> dict[str, Any]:
    """`proof_report`, computed at most once per `seconds` for the same parameters across every web process
    (the figures change at most once a finalized block). Redis down: computed for each caller."""
    if seconds <= 0:
        return proof_report(config, **params)
    key = "proof-report:" + ":".join(f"{k}={params[k]}" for k in sorted(params))
    try:
        # The key holds only what proof_report returned (the cache's stubs type every value as Any | None).
        return cast(dict[str, Any], cache.get_or_set(key, lambda: proof_report(config, **params), seconds))
    except RedisError:
        return proof_report(config, **params)
