"""The crawlers' clients of one chain's provider: one for the crawl (bounded but patient time-outs), one
for quick looks from /health and the admin forms (a hanging provider costs them a few seconds at most)."""

from __future__ import annotations

from django.conf import settings

from crawlers.chain.rpc import READ_TIMEOUT, WEB_BACKOFF_SCOPE, RpcClient
from dws_project.chain_settings import ChainSettings

PROBE_TIMEOUT = 2.0  # seconds: /health and the admin ask the provider, and must answer even if it hangs


def make_client(chain: ChainSettings) -> RpcClient:
    # The read time-out can be lowered (tests) by a Django setting; it is never unbounded.
    return RpcClient(
        chain.rpc_url,
        read_timeout=getattr(settings, "CRAWLER_RPC_READ_TIMEOUT", READ_TIMEOUT),
        max_answer_bytes=chain.rpc_max_answer_bytes,
        max_in_flight=chain.rpc_max_in_flight,
    )


def make_check_client(chain: ChainSettings) -> RpcClient | None:
    """The second provider's client (DWS_RPC_CHECK_URL), or None when there is none."""
    if chain.rpc_check_url is None:
        return None
    return RpcClient(
        chain.rpc_check_url,
        read_timeout=getattr(settings, "CRAWLER_RPC_READ_TIMEOUT", READ_TIMEOUT),
        max_answer_bytes=chain.rpc_max_answer_bytes,
        max_in_flight=chain.rpc_max_in_flight,
    )


def make_reconcile_client(chain: ChainSettings) -> RpcClient:
    """`reconcile` asks the second provider when there is one: the check is then independent of the
    provider the crawlers believed."""
    return make_check_client(chain) or make_client(chain)


def make_probe_client(chain: ChainSettings) -> RpcClient:
    """A client for quick looks (health, admin forms): a 429 met here backs off the web tier only, never
    the crawlers."""
    return RpcClient(
        chain.rpc_url,
        connect_timeout=PROBE_TIMEOUT / 2,
        read_timeout=PROBE_TIMEOUT,
        backoff_scope=WEB_BACKOFF_SCOPE,
        max_answer_bytes=chain.rpc_max_answer_bytes,
        max_in_flight=chain.rpc_max_in_flight,
    )
