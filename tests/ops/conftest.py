"""Operator tools' tests: the crawlers' anvil fixtures, without the automatic ledger check (these tests
tamper with the records on purpose, to see that `reconcile` and the admin report it)."""

from __future__ import annotations

from tests.crawlers.conftest import _clean_redis, chain, crawl_config, eth_prices, node, proxy

__all__ = ["_clean_redis", "chain", "crawl_config", "eth_prices", "node", "proxy"]
