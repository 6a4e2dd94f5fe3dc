"""What the crawlers need to know about one chain, as one frozen value.

The crawler rooms below `crawlers/runs` take a `ChainSettings` instead of reaching for the whole
configuration, so a second chain (DESIGN "Chains") is one more value, not a rewrite. Today there is
one chain, `eth`, configured by the single-chain variables; `chain_settings` builds it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dws_project.config import DEFAULT_RPC_MAX_ANSWER_MB, Config, StableCoin
from dws_project.redaction import redact_url

# The name of the chain today's single-chain variables describe (`last_block.chain`, DESIGN "Chains").
FIRST_CHAIN = "eth"


@dataclass(frozen=True)
class ChainSettings:
    name: str
    chain_id: int  # DWS_CHAIN_ID: what the provider must report (crawlers/chain/tips.py checks it)
    rpc_url: str = field(repr=False)  # the provider's key may be in it: only `rpc_origin` is ever shown
    donation_address: str  # lower case
    stable_coins: tuple[StableCoin, ...]
    trace_mode: str  # auto | debug | trace | off
    start_block: int | None
    block_cache: str | None  # a directory for finalized blocks, or None
    debug_data_store: str | None  # a directory for raw provider answers, or None
    # DWS_RPC_CHECK_URL: the second provider that must agree before a donation is confirmed, or None
    rpc_check_url: str | None = field(default=None, repr=False)
    # DWS_RPC_MAX_ANSWER_MB: a longer answer is no evidence
    rpc_max_answer_bytes: int = DEFAULT_RPC_MAX_ANSWER_MB * 2**20

    @property
    def rpc_origin(self) -> str:
        return redact_url(self.rpc_url)

    @property
    def rpc_check_origin(self) -> str | None:
        return redact_url(self.rpc_check_url) if self.rpc_check_url else None

    def stable_coin(self, asset: str) -> StableCoin | None:
        return next((c for c in self.stable_coins if c.asset == asset), None)


def chain_settings(config: Config) -> ChainSettings:
    """The one chain of today's configuration."""
    return ChainSettings(
        name=FIRST_CHAIN,
        chain_id=config.chain_id,
        rpc_url=config.eth_rpc_url,
        donation_address=config.donation_address,
        stable_coins=config.stable_coins,
        trace_mode=config.trace_mode,
        start_block=config.start_block,
        block_cache=config.block_cache,
        debug_data_store=config.debug_data_store,
        rpc_max_answer_bytes=config.rpc_max_answer_bytes,
        rpc_check_url=config.rpc_check_url,
    )
