"""The operator's repair of the ledger: `manage.py repair_totals` and the admin's "Repair totals".

The crawlers move `donation_stats` and `user_data` by deltas, so a total drifted by hand-written SQL
stays wrong until it is summed afresh. This sums the campaign row and every donor's row (every address
with a confirmed donation or a `user_data` row) from the confirmed donations, under the campaign lock
(the lock every crediting write takes, so no confirmation interleaves), and logs what moved with the
operator's name. Rows are never deleted: a donor row without a confirmed donation is zeroed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from django.db import transaction

from donations.models import Donation, DonationStatus, UserData
from donations.services import stats_lock
from donations.totals import stats_recompute, user_data_refresh
from dws_project.config_values import SaleTier

logger = logging.getLogger("dws.donations")

Totals = tuple[Decimal, int]


@dataclass
class TotalsRepair:
    operator: str
    campaign_before: Totals
    campaign_after: Totals
    donors: dict[str, tuple[Totals | None, Totals]] = field(default_factory=dict)  # changed: address -> (was, now)

    @property
    def changed(self) -> bool:
        return self.campaign_before != self.campaign_after or bool(self.donors)

    def lines(self) -> list[str]:
        if not self.changed:
            return ["totals equal the confirmed donations: nothing to repair"]
        (was_usd, was_tokens), (usd, tokens) = self.campaign_before, self.campaign_after
        out = []
        if self.campaign_before != self.campaign_after:
            out.append(f"campaign: {was_usd} USD / {was_tokens} tokens -> {usd} USD / {tokens} tokens")
        for address, (was, now) in sorted(self.donors.items()):
            before = "no row" if was is None else f"{was[0]} USD / {was[1]} tokens"
            out.append(f"donor {address}: {before} -> {now[0]} USD / {now[1]} tokens")
        out.append(f"{len(self.donors)} donor row(s) changed")
        return out


def _donor_totals() -> dict[str, Totals]:
    return {
        address: (total, tokens)
        for address, total, tokens in UserData.objects.values_list("address", "total", "tokens")
    }


@transaction.atomic
def totals_repair(*, operator: str, tiers: Sequence[SaleTier]) -> TotalsRepair:
    """Recompute the campaign row and every donor's totals from the confirmed donations (a full scan:
    an operator's action, never on the crediting path); logged with `operator`."""
    stats = stats_lock()
    repair = TotalsRepair(operator, (stats.total, stats.tokens), (stats.total, stats.tokens))
    stats_recompute(stats=stats, tiers=tiers)
    repair.campaign_after = (stats.total, stats.tokens)
    before = _donor_totals()
    confirmed = Donation.objects.filter(status=DonationStatus.CONFIRMED).values_list("address", flat=True).distinct()
    user_data_refresh(addresses={*before, *confirmed})
    for address, now in _donor_totals().items():
        if before.get(address) != now:
            repair.donors[address] = (before.get(address), now)
    if repair.changed:
        logger.warning("totals repaired by %s: %s", operator, "; ".join(repair.lines()))
    else:
        logger.warning("totals checked by %s: nothing to repair", operator)
    return repair
