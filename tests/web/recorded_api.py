"""delphi's answers, recorded in the exact shapes of the API (donations/apis.py, prices/apis.py), served
to the page at the browser's network boundary (Playwright routes) until the real API is merged.

The end-to-end tests of part B run the page against the real API and crawlers instead; these keep the
page's own behaviour (rendering, refresh rules, the wallet flows, signing) testable on its own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

from playwright.sync_api import Page, Route

API_PREFIXES = ("/donation/", "/price/", "/user/", "/affiliate/", "/wallet/")


def is_api_url(url: str) -> bool:
    return urlsplit(url).path.startswith(API_PREFIXES)


def refuse_api(page: Page) -> None:
    """The API is down: every API request fails at the connection, as with the API process stopped."""
    page.route(is_api_url, lambda route: route.abort("connectionrefused"))


@dataclass
class RecordedDelphi:
    donation_address: str
    campaign: dict[str, Any] = field(default_factory=dict)
    eth_price: str | None = "2000.12"
    # tx hash -> the donation row delphi returns for it (set by a test as "the crawler" records it)
    donations: dict[str, dict[str, str]] = field(default_factory=dict)
    user_data: dict[str, Any] = field(default_factory=dict)
    posts: list[dict[str, Any]] = field(default_factory=list)
    gets: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.campaign = {
            "total": "123456.78",
            "tokens": "123456789",
            "status": "open",
            "token_price": "0.0015",
            "tier": 2,
            "tier_limit": "250000000",
            "sale_cap": "500000000",
            "donation_address": self.donation_address.lower(),
            "stable_coins": [
                {"asset": "usdt", "contract": "0x5fbdb2315678afecb367f032d93f642f64180aa3", "decimals": 6},
                {"asset": "usdc", "contract": "0xe7f1725e7734ce288f8367e1bb143e90bb3f0512", "decimals": 6},
            ],
            "ts": "2026-11-30T04:00:00.000000Z",
            **self.campaign,
        }
        self.user_data = {
            "total": "0",
            "tokens": "0",
            "staked": "0",
            "reward": "0",
            "status": "none",
            "unstake_completes_at": None,
            "ts": None,
            **self.user_data,
        }

    def install(self, page: Page) -> RecordedDelphi:
        page.route(is_api_url, self._answer)
        return self

    def _json(self, route: Route, body: dict[str, Any], status: int = 200) -> None:
        route.fulfill(status=status, content_type="application/json", body=json.dumps(body))

    def _answer(self, route: Route) -> None:
        request = route.request
        parts = urlsplit(request.url)
        path = parts.path
        if request.method == "POST":
            self.posts.append({"path": path, "headers": request.headers, "body": json.loads(request.post_data or "{}")})
            body = self.posts[-1]["body"]
            if path == "/affiliate/donation":
                return self._json(route, {"tx_hash": body["tx_hash"], "code": body["code"], "status": "pending"})
            if path == "/user/stake":
                staked = int(self.user_data["staked"]) + int(body["amount"])
                self.user_data.update(staked=str(staked), status="staked")
                return self._json(route, {"user_data": self.user_data})
            if path == "/user/unstake":
                completes = datetime.now(UTC) + timedelta(days=7)
                self.user_data.update(
                    status="unstaking", unstake_completes_at=completes.isoformat().replace("+00:00", "Z")
                )
                return self._json(route, {"user_data": self.user_data})
            return self._json(route, {"code": 1003, "message": "not found"}, status=404)
        self.gets.append(path)
        if path == "/donation/data":
            return self._json(route, self.campaign)
        if path == "/price/token":
            return self._json(route, {"asset": "dws", "price": self.campaign["token_price"], "ts": self.campaign["ts"]})
        if path == "/price/eth":
            if self.eth_price is None:
                return self._json(route, {"code": 1008, "message": "price not available yet"}, status=503)
            return self._json(route, {"asset": "eth", "price": self.eth_price, "ts": "2026-11-30T04:31:00Z"})
        if path.startswith("/user/data/"):
            query = parse_qs(parts.query)
            offset, limit = int(query["offset"][0]), int(query["limit"][0])
            rows = list(self.donations.values())[offset : offset + limit]
            return self._json(route, {"donations": rows, "user_data": self.user_data})
        return self._json(route, {"code": 1003, "message": "not found"}, status=404)
