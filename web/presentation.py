"""What the page shows of the configuration: the tiers table and the networks a donation may be sent on,
each with where the money goes there (its donation address and coin contracts)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from django.conf import settings
from eth_utils import to_checksum_address

from dws_project.chain_settings import KNOWN_LABELS, ChainSettings
from dws_project.config import Config
from dws_project.config_values import SaleTier

MAINNET_CHAIN_ID = 1
# Chains a developer runs locally; shown as such so nobody mistakes the demo for the real sale.
DEV_CHAIN_NAMES = {31337: "local dev chain (anvil)", 1337: "local dev chain"}
# Networks whose ETH is real money: every other chain (a testnet, a local chain) carries the page's badge.
REAL_MONEY_CHAIN_IDS = frozenset({1, 10, 8453, 42161, 42170})
# Donations per page of the donor's history (the API allows up to 100).
DONATIONS_PAGE_SIZE = 10


@dataclass(frozen=True)
class TierRow:
    number: int
    first_token: str
    last_token: str
    size: str
    price: str


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


@dataclass(frozen=True)
class CoinRow:
    asset: str  # "usdt"
    symbol: str  # "USDT"
    contract: str  # EIP-55 checksummed, as wallets show it
    decimals: int


@dataclass(frozen=True)
class PageChain:
    """A network the page offers: what it is called, which chain id the wallet must be on, where the money goes."""

    name: str  # as DWS_CHAINS names it ("eth", "base")
    chain_id: int
    label: str  # what the page calls it ("Ethereum mainnet", "Base")
    dev: bool  # a local or test chain: the badge says it is not real money
    donation_address: str  # EIP-55 checksummed, the way a wallet shows the recipient
    coins: tuple[CoinRow, ...]  # empty: ETH only on this chain
    wallet_rpc_url: str | None  # the public RPC URL a wallet that lacks the chain is offered (never the provider's)


def chain_label(chain: ChainSettings) -> str:
    """What the page calls a chain: its DWS_NAME_LABEL, else the usual name of its chain id."""
    if chain.label:
        return chain.label
    if chain.chain_id == MAINNET_CHAIN_ID:
        return "Ethereum mainnet"
    if chain.chain_id in DEV_CHAIN_NAMES:
        return DEV_CHAIN_NAMES[chain.chain_id]
    return KNOWN_LABELS.get(chain.chain_id, f"test chain {chain.chain_id}")


def page_chain(chain: ChainSettings) -> PageChain:
    return PageChain(
        name=chain.name,
        chain_id=chain.chain_id,
        label=chain_label(chain),
        dev=chain.chain_id not in REAL_MONEY_CHAIN_IDS,
        donation_address=to_checksum_address(chain.donation_address),
        coins=tuple(
            CoinRow(asset=c.asset, symbol=c.asset.upper(), contract=to_checksum_address(c.contract), decimals=c.scale)
            for c in chain.stable_coins
        ),
        wallet_rpc_url=chain.wallet_rpc_url,
    )


def offered_chains(config: Config, refused: Collection[str] = ()) -> list[PageChain]:
    """The networks the page offers, in DWS_CHAINS order (the first is its default), without the refused ones
    (a Safe donation address not deployed there: crawlers/runs/address_code.py)."""
    return [page_chain(c) for c in config.chains if c.name not in refused]


def words(items: Sequence[str], conjunction: str) -> str:
    """Items in prose: "A", "A and B", "A, B and C"."""
    if len(items) < 2:
        return "".join(items)
    return f"{', '.join(items[:-1])} {conjunction} {items[-1]}"


def page_config(config: Config, chains: Sequence[PageChain]) -> dict[str, object]:
    """The settings the page's scripts start from (rendered as JSON, not executed).

    Each offered network's donation address, coin contracts and chain id come from here, the server's own
    configuration, and never from an API response (which a cache or a proxy could have altered). Of the
    RPC URLs only the public one a wallet may be handed (`wallet_rpc_url`) is ever in the page.
    """
    return {
        # The networks the donor may choose, in DWS_CHAINS order; the first is shown when the page opens.
        "chains": [
            {
                "chain": c.name,
                "chainId": c.chain_id,
                "label": c.label,
                "devChain": c.dev,
                "donationAddress": c.donation_address,
                "stableCoins": [{"asset": k.asset, "contract": k.contract, "decimals": k.decimals} for k in c.coins],
                "walletRpcUrl": c.wallet_rpc_url,
            }
            for c in chains
        ],
        # What the donor's list calls each configured chain (a refused one's donations are still listed).
        "chainLabels": {c.name: chain_label(c) for c in config.chains},
        "pageSize": DONATIONS_PAGE_SIZE,
        # How often the page re-reads a donor's data while one of their donations is unconfirmed.
        "pendingRefreshSeconds": settings.WEB_PENDING_REFRESH_SECONDS,
        # How often it looks for the donor's own donation after sending it, until the crawlers recorded it.
        "sentRefreshSeconds": settings.WEB_SENT_REFRESH_SECONDS,
        # The receipt links each transaction to the explorer's page: DWS_EXPLORER_URL, {tx} replaced.
        "explorers": {c.name: c.explorer_url for c in config.chains if c.explorer_url},
    }


def page_context(config: Config, *, refused: Collection[str] = ()) -> dict[str, object]:
    """Everything the page's template shows of the configuration."""
    chains = offered_chains(config, refused)
    labels = [c.label for c in chains]
    addresses = {c.donation_address for c in chains}
    return {
        "tiers": tier_rows(config.sale_tiers),
        "sale_cap": group_thousands(config.sale_cap),
        "chains": chains,
        "chain": chains[0] if chains else None,  # the network shown when the page opens
        "any_dev_chain": any(c.dev for c in chains),
        "networks_and": words(labels, "and"),
        "networks_or": words(labels, "or"),
        "one_address": addresses.pop() if len(addresses) == 1 else None,
        # The donor's list has a network column once more than one chain is configured.
        "several_chains": len(config.chains) > 1,
        "page_config": page_config(config, chains),
    }
