"""The campaign's and the donors' totals: moved by deltas under the campaign lock, or summed afresh.

The crawlers' crediting writes (donations/services.py) move `donation_stats` in place and the touched
donors' `user_data` rows by `Deltas`, so a block costs O(its donations) whatever is on record.
`stats_recompute` and `user_data_refresh` sum everything from scratch: the operator's repair, never on
the block path; `reconcile` checks the stored totals independently of both.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from django.db import connection, models
from django.utils import timezone

from donations.export import proof_csv_changed
from donations.models import CampaignStatus, Donation, DonationStats, DonationStatus
from donations.rules import SaleState, round_usd, sale_state
from donations.webhooks import webhook_campaign_status
from dws_project.config_values import SaleTier
from prices.models import TOKEN, Price

logger = logging.getLogger("dws.donations")


def _status_derive(stats: DonationStats, state: SaleState) -> None:
    """open/closed from the confirmed tokens; `paused` is the operator's and is left as it is."""
    if stats.status != CampaignStatus.PAUSED:
        stats.status = CampaignStatus.CLOSED if state.closed else CampaignStatus.OPEN


def stats_save(
    *, stats: DonationStats, tiers: Sequence[SaleTier], before: SaleState | None = None, chain: str | None = None
) -> DonationStats:
    """Write the campaign row as moved under the lock; status re-derived; token price row on a tier change.

    `before`: the sale state when the lock was taken; when the tier has not moved since, the token price
    row is not looked at (the hot path of a block with donations in the same tier). `chain`: the chain whose
    donations moved it (for the webhook), when one did.
    """
    state = sale_state(stats.tokens, tiers)
    was = stats.status
    _status_derive(stats, state)
    stats.save(update_fields=["total", "tokens", "status", "modified_at"])
    if was != stats.status and was != CampaignStatus.PAUSED:
        webhook_campaign_status(stats, stats.status, chain=chain)  # open <-> closed, in the same transaction
    if before is None or (before.tier_index, before.closed) != (state.tier_index, state.closed):
        token_price_record(state=state, confirmed_tokens=stats.tokens)
    return stats


def stats_recompute(*, stats: DonationStats, tiers: Sequence[SaleTier]) -> DonationStats:
    """The operator's repair: campaign totals summed afresh from every confirmed donation (a full scan;
    the crawlers move the row by deltas instead). `reconcile` reports any difference."""
    sums = Donation.objects.filter(status=DonationStatus.CONFIRMED).aggregate(
        total=models.Sum("usd_amount"), tokens=models.Sum("tokens")
    )
    stats.total = round_usd(sums["total"] or Decimal("0"))
    stats.tokens = sums["tokens"] or 0
    return stats_save(stats=stats, tiers=tiers)


def token_price_record(*, state: SaleState, confirmed_tokens: int) -> Price | None:
    """A `price` row for the sale token whenever the tier's price differs from the last one written."""
    last = Price.objects.filter(asset=TOKEN).order_by("-created_at").values_list("price", flat=True).first()
    if last is not None and last == state.token_price:
        return None
    row = Price.objects.create(
        asset=TOKEN,
        price=state.token_price,
        created_at=timezone.now(),
        sources={"tier": state.tier_number, "confirmed_tokens": confirmed_tokens, "closed": state.closed},
    )
    logger.info(
        "token price now %s (tier %d, %d tokens confirmed)", state.token_price, state.tier_number, confirmed_tokens
    )
    return row


_USER_DATA_REFRESH = """
WITH sums AS (
    SELECT COALESCE(SUM(usd_amount), 0) AS total, COALESCE(SUM(tokens), 0) AS tokens, COUNT(*) AS n
    FROM donation WHERE address = %(address)s AND status = 'confirmed'
)
INSERT INTO user_data (address, total, tokens)
SELECT %(address)s, sums.total, sums.tokens FROM sums
WHERE sums.n > 0 OR EXISTS (SELECT 1 FROM user_data WHERE address = %(address)s)
ON CONFLICT (address) DO UPDATE SET total = EXCLUDED.total, tokens = EXCLUDED.tokens,
    staked = LEAST(user_data.staked, EXCLUDED.tokens),
    status = CASE WHEN user_data.status = 'staked' AND LEAST(user_data.staked, EXCLUDED.tokens) = 0
        THEN 'none'::user_data_status_enum ELSE user_data.status END,
    modified_at = now()
WHERE user_data.total IS DISTINCT FROM EXCLUDED.total OR user_data.tokens IS DISTINCT FROM EXCLUDED.tokens
"""


def user_data_refresh(*, addresses: Iterable[str]) -> None:
    """The operator's repair: each address's totals summed afresh from its confirmed donations (seed
    000's update_user_data). The crawlers apply deltas instead (`Deltas.apply`).

    No row is created for an address without a confirmed donation; an existing row is zeroed when its
    donations all leave `confirmed`; nothing is written when nothing changed.
    """
    with connection.cursor() as cursor:
        for address in sorted(set(addresses)):
            cursor.execute(_USER_DATA_REFRESH, {"address": address})


# A confirmation creates the donor's row (seed 000: a row exists once something is confirmed). A revert
# only subtracts from a row its confirmation created, by a plain UPDATE: PostgreSQL checks the proposed
# row of an INSERT ... ON CONFLICT against the constraints before it finds the conflict.
_USER_DATA_ADD = """
INSERT INTO user_data (address, total, tokens) VALUES {values}
ON CONFLICT (address) DO UPDATE
SET total = user_data.total + EXCLUDED.total, tokens = user_data.tokens + EXCLUDED.tokens, modified_at = now()
"""
# Staked tokens are some of the donor's tokens: a revert that takes tokens away takes them out of the stake
# too, down to what is left (every SET reads the row as it was), and a stake left empty is no stake.
_USER_DATA_SUBTRACT = """
UPDATE user_data SET total = total + %(total)s, tokens = tokens + %(tokens)s,
    staked = LEAST(staked, tokens + %(tokens)s),
    status = CASE WHEN status = 'staked' AND LEAST(staked, tokens + %(tokens)s) = 0
        THEN 'none'::user_data_status_enum ELSE status END,
    modified_at = now()
WHERE address = %(address)s
"""


@dataclass
class Deltas:
    """What the confirmations and reverts under one lock change, per donor (the campaign row is moved
    in place as they happen)."""

    by_address: dict[str, tuple[Decimal, int]] = field(default_factory=dict)
    blocks: set[tuple[str, int]] = field(default_factory=set)  # (chain, block) whose confirmed rows changed

    def add(self, donation: Donation, sign: int) -> None:
        total, tokens = self.by_address.get(donation.address, (Decimal("0"), 0))
        self.by_address[donation.address] = (total + sign * donation.usd_amount, tokens + sign * donation.tokens)
        self.blocks.add((donation.chain, donation.block_number))

    def apply(self) -> None:
        """Per-donor rows moved by their deltas, in address order (the fixed lock order); the blocks whose
        confirmed donations changed noted for the stored CSV (one statement)."""
        proof_csv_changed(self.blocks)
        moves = sorted(self.by_address.items())
        # even 0/0 adds: a confirmed donation gives its donor a row
        adds = [(address, total, tokens) for address, (total, tokens) in moves if total >= 0 and tokens >= 0]
        with connection.cursor() as cursor:
            if adds:  # one statement for the block's donors, in address order
                values = ", ".join(["(%s, %s, %s)"] * len(adds))
                cursor.execute(_USER_DATA_ADD.format(values=values), [v for row in adds for v in row])
            for address, (total, tokens) in moves:
                if total < 0 or tokens < 0:
                    cursor.execute(_USER_DATA_SUBTRACT, {"total": total, "tokens": tokens, "address": address})
