"""Reads behind the public delphi endpoints: a donor's history and totals, and the campaign.

Amounts leave here as plain decimal strings at their column's scale (never floats, never exponent
notation). Nothing here writes: reading an address that never donated creates nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.conf import settings
from django.db import connection
from django.db.models import Count, Sum

from donations.models import CampaignStatus, Donation, DonationStats, DonationStatus, StakeStatus
from donations.rules import SaleState, sale_state, tokens_beyond_cap
from donations.wire import DONATION_FIELDS, REFUND_FIELD, campaign_public, donation_public, donation_refund
from dws_project.chain_settings import ChainSettings
from dws_project.wire import decimal_text, utc_text
from prices.models import TOKEN

MAX_PAGE = 100
DEFAULT_PAGE = 50


# The hottest read of the API (the page polls it per connected wallet). PostgreSQL renders the amounts
# (NUMERIC::text keeps the column's scale, never an exponent) and the block time, which is three times
# cheaper than building Decimals and datetimes in Python; served by donation_address_idx. The columns are
# donations.wire.DONATION_FIELDS in order (donation_values renders an in-memory row the same way).
# Each donation's refund, when the register owes or paid one for it (donations/refund_models.py), rides along
# from the same index scan (refund's donation_id is unique): the columns after DONATION_FIELDS.
_DONATIONS_PAGE_SQL = """
    SELECT d.tx_hash, d.asset, d.amount::text, d.usd_amount::text, d.price::text, d.tokens::text, d.status::text,
           to_char(d.block_time AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
           d.chain, d.block_number, d.eth_price::text,
           to_char(d.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
           to_char(d.confirmed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
           d.block_replaced_at IS NOT NULL,
           r.status, r.amount::text, r.paid_tx_hash
    FROM donation d
    LEFT JOIN refund r ON r.donation_id = d.id
    WHERE d.address = %s
    ORDER BY d.block_time, d.id
    LIMIT %s OFFSET %s
"""


def user_donations(*, address: str, limit: int = DEFAULT_PAGE, offset: int = 0) -> list[dict[str, object]]:
    """One page of the address's donations, oldest first, each with its refund (null when none is owed);
    limit is capped at MAX_PAGE."""
    limit = max(1, min(limit, MAX_PAGE))
    shape = len(DONATION_FIELDS)
    with connection.cursor() as cursor:
        cursor.execute(_DONATIONS_PAGE_SQL, [address, limit, offset])
        return [
            {**donation_public(row[:shape]), REFUND_FIELD: donation_refund(*row[shape:])} for row in cursor.fetchall()
        ]


# Polled with the donations page; amounts rendered by PostgreSQL as for the donations.
_USER_SUMMARY_SQL = """
    SELECT total::text, tokens::text, staked::text, reward::text, status::text, unstake_requested_at, modified_at
    FROM user_data
    WHERE address = %s
"""


def user_summary(*, address: str) -> dict[str, str | None]:
    """The donor's totals and staking state; "0" and status "none" for an address with no row."""
    with connection.cursor() as cursor:
        cursor.execute(_USER_SUMMARY_SQL, [address])
        row = cursor.fetchone()
    if row is None:
        return {
            "total": "0",
            "tokens": "0",
            "staked": "0",
            "reward": "0",
            "status": StakeStatus.NONE.value,
            "unstake_completes_at": None,
            "ts": None,
        }
    total, tokens, staked, reward, status, requested_at, modified_at = row
    # Here, not at the top: staking brings DRF's error classes, which a crawler process never needs.
    from donations.staking import unstake_completes_at

    completes = unstake_completes_at(requested_at) if status == StakeStatus.UNSTAKING and requested_at else None
    return {
        "total": total,
        "tokens": tokens,
        "staked": staked,
        "reward": reward,
        "status": status,
        "unstake_completes_at": utc_text(completes),
        "ts": utc_text(modified_at),
    }


@dataclass(frozen=True)
class Campaign:
    total: Decimal
    tokens: int
    status: str
    state: SaleState
    modified_at: datetime


def campaign() -> Campaign:
    """The campaign row with the sale state its confirmed tokens imply under the configured tiers.

    `paused` is the operator's and is shown as is; otherwise open/closed is derived from the tokens
    and the tiers, because the stored value goes stale the moment the configured cap changes.
    """
    total, tokens, stored_status, modified_at = DonationStats.objects.values_list(
        "total", "tokens", "status", "modified_at"
    ).get()
    state = sale_state(tokens, settings.CONFIG.sale_tiers)
    if stored_status == CampaignStatus.PAUSED:
        status = CampaignStatus.PAUSED.value
    else:
        status = CampaignStatus.CLOSED.value if state.closed else CampaignStatus.OPEN.value
    return Campaign(total=total, tokens=tokens, status=status, state=state, modified_at=modified_at)


def donation_data() -> dict[str, object]:
    """What the donation page needs: campaign figures, tier, and where and how to send a donation."""
    current = campaign()
    config = settings.CONFIG
    return {
        **campaign_public(status=current.status, total=current.total, tokens=current.tokens),
        "token_price": decimal_text(current.state.token_price),
        "tier": current.state.tier_number,
        "tier_limit": decimal_text(current.state.tier_limit),
        "sale_cap": decimal_text(current.state.sale_cap),
        "tokens_beyond_cap": decimal_text(tokens_beyond_cap(current.tokens, config.sale_tiers)),
        # The first chain's, as before several chains; `chains` has every chain's.
        "donation_address": config.first_chain.donation_address,
        "stable_coins": _coins(config.first_chain),
        "chains": [
            {
                "chain": chain.name,
                "chain_id": chain.chain_id,
                "label": chain.display_label,
                "donation_address": chain.donation_address,
                "stable_coins": _coins(chain),
            }
            for chain in config.chains
        ],
        "ts": utc_text(current.modified_at),
        **pending_figures(),
    }


def pending_figures() -> dict[str, str | int]:
    """The donations seen and not yet confirmed (or failed), across chains, without those whose block the
    finalized chain replaced: what the page shows as pending beside the confirmed figures, so the campaign
    moves within a block of a donation instead of at its confirmation. Served by the partial index on
    unconfirmed rows."""
    sums = Donation.objects.filter(status=DonationStatus.UNCONFIRMED, block_replaced_at__isnull=True).aggregate(
        total=Sum("usd_amount"), donations=Count("id")
    )
    return {"pending_total": decimal_text(sums["total"] or Decimal("0.00")), "pending_donations": sums["donations"]}


def _coins(chain: ChainSettings) -> list[dict[str, str | int]]:
    return [{"asset": coin.asset, "contract": coin.contract, "decimals": coin.scale} for coin in chain.stable_coins]


def recorded_block_numbers(chain: str, start: int, end: int) -> set[int]:
    """The blocks in start..end of `chain` that a donation row of ours names (any status)."""
    rows = Donation.objects.filter(chain=chain, block_number__range=(start, end))
    return set(rows.values_list("block_number", flat=True))


def current_token_price() -> dict[str, str | None]:
    """The current tier's price (`GET /price/token`): from the confirmed tokens and DWS_SALE_PARAMS, so it
    exists before any donation; `ts` is when the campaign totals that select the tier were last written."""
    current = campaign()
    return {"asset": TOKEN, "price": decimal_text(current.state.token_price), "ts": utc_text(current.modified_at)}
