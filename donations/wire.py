"""The public shapes of a donation and of the campaign, each built in one place: the API, the webhooks and
the schema (donations/apis.py's serializers, held to these names by tests/api/test_openapi.py) all use them.

A donation's shape is `DONATION_FIELDS` in order. The API's hottest read has PostgreSQL render the values
(donations/selectors.py: NUMERIC::text at the column's scale, times to the second with a `Z`), the webhooks
render an in-memory row with `donation_values`; both go through `donation_public`, and a test holds the two
renderings equal for the same row. A webhook event carries the output without our own recording times
(`RECORDING_TIMES`), extended with what integrators need beyond the page (log index, trace path, block hash).
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from donations.refund_values import amount_text
from dws_project.wire import decimal_text, utc_second_text

DONATION_FIELDS = (
    "tx_hash",
    "asset",
    "amount",
    "usd_amount",
    "price",
    "tokens",
    "status",
    "ts",
    "chain",
    "block_number",
    "eth_price",
    "seen_at",
    "confirmed_at",
    "block_replaced",
)

# /user/data adds to each donation its refund (`donation_refund`): what the refund register owes the donor for
# it, and the transaction that paid it. Not in the webhooks' donation events (refund.owed and refund.paid
# carry it when it happens).
REFUND_FIELD = "refund"

# What dws itself observed of the row (when it recorded and confirmed it, whether the finalized crawler found
# its block replaced): shown to the donor, left out of webhook events (whose id, and so whose content, must not
# change when a restored database records the same donation again).
RECORDING_TIMES = ("seen_at", "confirmed_at", "block_replaced")

Value = str | int | None


def donation_public(values: Sequence[Value]) -> dict[str, Value]:
    """A donation as the API shows it, from its values in `DONATION_FIELDS` order, already rendered."""
    return dict(zip(DONATION_FIELDS, values, strict=True))


def _stored(donation: Any, field: str) -> str | None:
    """A decimal field as the database writes it: at the column's scale, whether read back or just built."""
    value: Decimal | None = getattr(donation, field)
    if value is None:
        return None
    places = type(donation)._meta.get_field(field).decimal_places
    return decimal_text(value.quantize(Decimal(1).scaleb(-places)))


def donation_values(donation: Any) -> tuple[Value, ...]:
    """A donation row's values in `DONATION_FIELDS` order, rendered as the API's SQL renders them."""
    return (
        donation.tx_hash,
        donation.asset,
        _stored(donation, "amount"),
        _stored(donation, "usd_amount"),
        _stored(donation, "price"),
        str(donation.tokens),
        str(donation.status),
        utc_second_text(donation.block_time),
        donation.chain,
        donation.block_number,
        _stored(donation, "eth_price"),
        utc_second_text(donation.created_at),
        utc_second_text(donation.confirmed_at),
        donation.block_replaced_at is not None,
    )


def campaign_public(*, status: str, total: Decimal, tokens: int) -> dict[str, str]:
    """The campaign's figures as the API and the `campaign.status` webhook both show them."""
    return {"status": status, "total": decimal_text(total), "tokens": decimal_text(tokens)}


def inflow_public(inflow: Any) -> dict[str, Any]:
    """An unexplained inflow as /proof.json lists it and the `inflow.unexplained` webhook carries it (with
    the webhook leaving out `recorded_at`, our own recording time, as for a donation). `amount` in the asset's
    units without trailing zeros, never an exponent; `amount_raw` in wei or base units (negative: a coin left
    without a Transfer log)."""
    return {
        "block_number": inflow.block_number,
        "block_hash": inflow.block_hash,
        "asset": inflow.asset,
        "amount_raw": str(int(inflow.amount_raw)),
        "amount": decimal_text(Decimal(inflow.amount).normalize()),
        "recorded_at": utc_second_text(inflow.created_at),
    }


def refund_public(refund: Any) -> dict[str, Any]:
    """A refund register row as the `refund.owed` / `refund.paid` webhooks carry it: who is owed what on which
    chain, why, what brought the money, and (paid) the transfer that paid it. `amount` in the asset's units
    without trailing zeros, `amount_raw` in wei or the token's base units."""
    paid = None
    if refund.status == "paid":
        paid = {
            "tx_hash": refund.paid_tx_hash,
            "log_index": refund.paid_log_index,
            "trace_address": refund.paid_trace_address or None,
            "block_number": refund.paid_block_number,
        }
    return {
        "id": refund.pk,
        "chain": refund.chain,
        "donor": refund.donor,
        "asset": refund.asset,
        "contract": refund.contract or None,
        "decimals": refund.decimals,
        "amount": amount_text(Decimal(refund.amount)),
        "amount_raw": str(refund.amount_raw),
        "reason": refund.reason,
        "status": refund.status,
        "source_tx_hash": refund.source_tx_hash or None,
        "source_log_index": refund.source_log_index,
        "paid": paid,
    }


def donation_refund(status: str | None, amount: str | None, paid_tx_hash: str | None) -> dict[str, str | None] | None:
    """A donation's refund as /user/data shows it (the page's receipt: "refund owed", "refunded"), from the
    refund row's status, amount (NUMERIC text) and paying transaction; None when the donation has none."""
    if status is None or amount is None:
        return None
    return {
        "status": status,
        "amount": amount_text(Decimal(amount)),
        "tx_hash": paid_tx_hash or None,
    }


def refund_paid_public(refund: Any) -> dict[str, Any]:
    """A paid refund as /proof.json lists it in the range holding its payment: everything a verifier needs to
    find the transfer on chain (the transaction, the Transfer log or call frame, who received what token) and
    where the money came from (the source transaction)."""
    return {
        "tx_hash": refund.paid_tx_hash,
        "log_index": refund.paid_log_index,
        "trace_address": refund.paid_trace_address or None,
        "block_number": refund.paid_block_number,
        "recipient": refund.donor,
        "asset": refund.asset,
        "contract": refund.contract or None,
        "decimals": refund.decimals,
        "amount_raw": str(refund.amount_raw),
        "reason": refund.reason,
        "source_tx_hash": refund.source_tx_hash or None,
    }
