"""Price reads for the page: the latest ETH price, and the token price of the tier in force."""

from __future__ import annotations

from donations.selectors import campaign, decimal_text, utc_text
from dws_project.api_errors import PRICE_UNAVAILABLE, ApiException
from prices.models import ETH, TOKEN, Price


def latest_eth_price() -> dict[str, str | None]:
    """The newest ETH price row (served from the (asset, created_at) unique index)."""
    row = Price.objects.filter(asset=ETH).order_by("-created_at").values_list("price", "created_at").first()
    if row is None:
        raise ApiException(PRICE_UNAVAILABLE)
    price, created_at = row
    return {"asset": ETH, "price": decimal_text(price), "ts": utc_text(created_at)}


def current_token_price() -> dict[str, str | None]:
    """The current tier's price: from the confirmed tokens and DWS_SALE_PARAMS, so it exists before
    any donation; `ts` is when the campaign totals that select the tier were last written."""
    current = campaign()
    return {"asset": TOKEN, "price": decimal_text(current.state.token_price), "ts": utc_text(current.modified_at)}
