"""What the page shows of the configuration: the tiers table and the network the wallet must be on."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from eth_utils import to_checksum_address

from dws_project.config import Config
from dws_project.config_values import SaleTier

MAINNET_CHAIN_ID = 1
# Chains a developer runs locally; shown as such so nobody mistakes the demo for the real sale.
DEV_CHAIN_NAMES = {31337: "local dev chain (anvil)", 1337: "local dev chain"}
# Donations per page of the donor's history (the API allows up to 100).
DONATIONS_PAGE_SIZE = 10


@dataclass(frozen=True)
class TierRow:
    number: int
    first_token: str
    last_token: str
    size: str
    price: str


@dataclass(frozen=True)
class Network:
    chain_id: int
    name: str
    dev: bool


def group_thousands(value: int) -> str:
    return f"{value:,}"


def tier_rows(tiers: Sequence[SaleTier]) -> list[TierRow]:
    rows = []
    previous = 0
    for number, tier in enumerate(tiers, start=1):
        rows.append(
            TierRow(
                number=number,
                first_token=group_thousands(previous + 1),
                last_token=group_thousands(tier.token_limit),
                size=group_thousands(tier.token_limit - previous),
                price=format(tier.token_price.normalize(), "f"),
            )
        )
        previous = tier.token_limit
    return rows


def network(chain_id: int | None) -> Network:
    """The chain donations go to: DWS_CHAIN_ID when set (a dev or test chain), else Ethereum mainnet."""
    chain = chain_id or MAINNET_CHAIN_ID
    if chain == MAINNET_CHAIN_ID:
        return Network(chain, "Ethereum mainnet", dev=False)
    return Network(chain, DEV_CHAIN_NAMES.get(chain, f"test chain {chain}"), dev=True)


@dataclass(frozen=True)
class CoinRow:
    asset: str  # "usdt"
    symbol: str  # "USDT"
    contract: str  # EIP-55 checksummed, as wallets show it
    decimals: int


def donation_address(config: Config) -> str:
    """Where donations go on the first chain, checksummed (EIP-55) the way a wallet shows the recipient."""
    return to_checksum_address(config.first_chain.donation_address)


def coin_rows(config: Config) -> list[CoinRow]:
    return [
        CoinRow(asset=c.asset, symbol=c.asset.upper(), contract=to_checksum_address(c.contract), decimals=c.scale)
        for c in config.first_chain.stable_coins
    ]


def page_config(config: Config) -> dict[str, object]:
    """The settings the page's scripts start from (rendered as JSON, not executed).

    The donation address and the coin contracts come from here, the server's own configuration, and
    never from an API response (which a cache or a proxy could have altered).
    """
    chain = network(config.first_chain.chain_id)
    return {
        "donationAddress": donation_address(config),
        "stableCoins": [{"asset": c.asset, "contract": c.contract, "decimals": c.decimals} for c in coin_rows(config)],
        "chainId": chain.chain_id,
        "chainName": chain.name,
        "devChain": chain.dev,
        "pageSize": DONATIONS_PAGE_SIZE,
        # How often the page re-reads a donor's data while one of their donations is unconfirmed.
        "pendingRefreshSeconds": settings.WEB_PENDING_REFRESH_SECONDS,
        # The receipt links each transaction to the explorer's page: DWS_EXPLORER_URL, {tx} replaced.
        "explorers": {c.name: c.explorer_url for c in config.chains if c.explorer_url},
    }
