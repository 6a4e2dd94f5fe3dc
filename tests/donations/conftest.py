"""The donations services' tests share the crawlers' anvil fixtures (a donation is recorded from a block),
and the ledger check after every database test (DESIGN invariants 1 and 2)."""

from __future__ import annotations

from tests.crawlers.conftest import (
    _clean_redis,
    _ledger_invariants_hold_afterwards,
    chain,
    crawl_config,
    eth_prices,
    node,
    proxy,
)

__all__ = [
    "_clean_redis",
    "_ledger_invariants_hold_afterwards",
    "chain",
    "crawl_config",
    "eth_prices",
    "node",
    "proxy",
]
