"""Price reads for the page: the latest ETH price (the token price is the campaign's: donations.selectors)."""

from __future__ import annotations

from dws_project.api_errors import PRICE_UNAVAILABLE, ApiException
from dws_project.wire import decimal_text, utc_text
from prices.models import ETH, Price


def latest_eth_price() -> dict[str, str | None]:
    """The newest ETH price row that may value a donation (served from the (asset, created_at) index)."""
    row = (
        Price.objects.corroborated()
        .filter(asset=ETH)
        .order_by("-created_at")
        .values_list("price", "created_at")
        .first()
    )
    if row is None:
        raise ApiException(PRICE_UNAVAILABLE)
    price, created_at = row
    return {"asset": ETH, "price": decimal_text(price), "ts": utc_text(created_at)}
