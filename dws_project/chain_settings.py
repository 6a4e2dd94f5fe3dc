"""The chains one campaign takes donations on (DESIGN "Chains"): each as one frozen value, read from the
environment and validated with every other variable at a process's start.

`DWS_CHAINS` names them (default `eth`); the first is the page's default. Chain `eth` is configured by
today's single-chain variables (`ETH_RPC_URL`, `DWS_CHAIN_ID`, ...), so a single-chain deployment changes
nothing; any other chain `N` by `DWS_N_RPC_URL`, `DWS_N_CHAIN_ID`, ... (N upper-cased). The crawler rooms
below `crawlers/runs` take a `ChainSettings` instead of reaching for the whole configuration: a chain is
a parameter of the pipeline, not a fork of it.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
import unicodedata
from dataclasses import dataclass, field, replace
from urllib.parse import parse_qsl, unquote, urlsplit

from dws_project.config_values import (
    EnvReader,
    StableCoin,
    is_loopback_host,
    parse_block_number,
    parse_chain_id,
    parse_donation_address,
    parse_explorer_url,
    parse_rpc_url,
    parse_stable_coins,
    parse_stray_tokens,
    parse_trace_mode,
    parse_ws_url,
)
from dws_project.redaction import redact_url

# The name of the chain today's single-chain variables describe (`last_block.chain`, DESIGN "Chains").
FIRST_CHAIN = "eth"
CHAIN_NAME = re.compile(r"[a-z][a-z0-9]{0,15}")
# Chain ids of local development chains (anvil/hardhat 31337, ganache/geth --dev 1337): the only
# chains where DWS_DEV_ETH_PRICE is accepted.
DEV_CHAIN_IDS = frozenset({31337, 1337})
# What the page calls a chain when its DWS_NAME_LABEL is not set.
KNOWN_LABELS = {
    1: "Ethereum",
    10: "OP Mainnet",
    8453: "Base",
    42161: "Arbitrum One",
    42170: "Arbitrum Nova",
    11155111: "Sepolia",
    17000: "Holesky",
    560048: "Hoodi",
    84532: "Base Sepolia",
    421614: "Arbitrum Sepolia",
    11155420: "OP Sepolia",
    31337: "Local chain (31337)",
    1337: "Local rollup (1337)",
}
# Well-known chains whose native coin is not ETH: their coin would be credited at ETH's price.
NOT_ETH = {
    56: "BNB Smart Chain (BNB)",
    137: "Polygon PoS (POL)",
    43114: "Avalanche C-Chain (AVAX)",
    250: "Fantom (FTM)",
    100: "Gnosis (xDAI)",
    42220: "Celo (CELO)",
    5000: "Mantle (MNT)",
    1088: "Metis (METIS)",
    25: "Cronos (CRO)",
    1284: "Moonbeam (GLMR)",
    204: "opBNB (BNB)",
    80094: "Berachain (BERA)",
    146: "Sonic (S)",
}
_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9 .()\-]{0,31}")
# The per-chain settings of chain `eth` that today's single-chain variables hold instead.
_FIRST_CHAIN_NAMES = {
    "RPC_URL": "ETH_RPC_URL",
    "CHAIN_ID": "DWS_CHAIN_ID",
    "STABLE_COINS": "DWS_STABLE_COINS",
    "START_BLOCK": "DWS_START_BLOCK",
    "TRACE": "DWS_TRACE",
    "RPC_CHECK_URL": "DWS_RPC_CHECK_URL",
    "EXPLORER_URL": "DWS_EXPLORER_URL",
    "WS_URL": "DWS_WS_URL",
    "STRAY_TOKENS": "DWS_STRAY_TOKENS",
}
# Well-known tokens a donor may send by mistake (DWS_STRAY_TOKENS' default per chain id): recorded as stray
# transfers owed back to their sender (docs/detection.md, "Coins the sale does not take"); an entry the chain
# takes as a donation coin (DWS_STABLE_COINS, same contract or name) is left out. Other chains: none.
_STRAY_DEFAULTS: dict[int, tuple[tuple[str, str, int], ...]] = {
    1: (
        ("usdt", "0xdac17f958d2ee523a2206206994597c13d831ec7", 6),
        ("usdc", "0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48", 6),
        ("dai", "0x6b175474e89094c44da98b954eedeac495271d0f", 18),
        ("weth", "0xc02aaa39b223fe8d0a0e5c4f27ead9083c756cc2", 18),
    ),
    10: (
        ("usdt", "0x94b008aa00579c1307b0ef2c499ad98a8ce58e58", 6),
        ("usdc", "0x0b2c639c533813f4aa9d7837caf62653d097ff85", 6),
        ("usdc.e", "0x7f5c764cbc14f9669b88837ca1490cca17c31607", 6),
        ("dai", "0xda10009cbd5d07dd0cecc66161fc93d7c9000da1", 18),
        ("weth", "0x4200000000000000000000000000000000000006", 18),
    ),
    8453: (
        ("usdt", "0xfde4c96c8593536e31f229ea8f37b2ada2699bb2", 6),
        ("usdc", "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913", 6),
        ("usdbc", "0xd9aaec86b65d86f6a7b5b1b0c42ffa531710b6ca", 6),
        ("dai", "0x50c5725949a6f0c72e6c4a641f24049a917db0cb", 18),
        ("weth", "0x4200000000000000000000000000000000000006", 18),
    ),
    42161: (
        ("usdt", "0xfd086bc7cd5c481dcc9c85ebe478a1c0b69fcbb9", 6),
        ("usdc", "0xaf88d065e77c8cc2239327c5edb3a432268e5831", 6),
        ("usdc.e", "0xff970a61a04b1ca14834a43f5de4533ebddb5cc8", 6),
        ("dai", "0xda10009cbd5d07dd0cecc66161fc93d7c9000da1", 18),
        ("weth", "0x82af49447d8a07e3bd95bd0d56f35241523fbab1", 18),
    ),
}


@dataclass(frozen=True)
class ChainSettings:
    name: str
    chain_id: int  # what the provider must report (crawlers/chain/tips.py checks it at every run)
    rpc_url: str = field(repr=False)  # the provider's key may be in it: only `rpc_origin` is ever shown
    donation_address: str  # lower case
    stable_coins: tuple[StableCoin, ...]
    trace_mode: str  # auto | debug | trace | off
    start_block: int | None
    block_cache: str | None  # DWS_BLOCK_CACHE/<name>: this chain's finalized blocks, or None
    debug_data_store: str | None  # DWS_DEBUG_DATA_STORE/<name>: this chain's raw provider answers, or None
    # The second provider that must agree before a donation is confirmed, or None
    rpc_check_url: str | None = field(default=None, repr=False)
    # DWS_RPC_MAX_ANSWER_MB: a longer answer is no evidence
    rpc_max_answer_bytes: int = 32 * 2**20
    rpc_max_in_flight: int = 4  # DWS_RPC_MAX_IN_FLIGHT: posts in flight at once to one provider endpoint
    label: str = ""  # what the page calls the chain ("Base"); `display_label` falls back
    # A public RPC URL the page may hand to a wallet that lacks the chain (never the provider URL)
    wallet_rpc_url: str | None = None
    explorer_url: str | None = None  # a transaction's explorer page, {tx} replaced
    # The provider's WebSocket endpoint: the head follower subscribes to newHeads there (polls without it)
    ws_url: str | None = field(default=None, repr=False)
    # Well-known tokens the sale does not take (DWS_STRAY_TOKENS): what reaches the address in them is owed back
    stray_tokens: tuple[StableCoin, ...] = ()

    @property
    def rpc_origin(self) -> str:
        return redact_url(self.rpc_url)

    @property
    def rpc_check_origin(self) -> str | None:
        return redact_url(self.rpc_check_url) if self.rpc_check_url else None

    @property
    def display_label(self) -> str:
        return self.label or KNOWN_LABELS.get(self.chain_id) or self.name.capitalize()

    @property
    def dev(self) -> bool:
        return self.chain_id in DEV_CHAIN_IDS

    def stable_coin(self, asset: str) -> StableCoin | None:
        return next((c for c in self.stable_coins if c.asset == asset), None)

    def stray_token(self, contract: str) -> StableCoin | None:
        return next((t for t in self.stray_tokens if t.contract == contract), None)

    def variable(self, setting: str) -> str:
        """The environment variable that holds this chain's `setting` (e.g. "RPC_URL")."""
        return chain_variable(self.name, setting)


def chain_variable(name: str, setting: str) -> str:
    """`ETH_RPC_URL` for chain eth's RPC_URL, `DWS_BASE_RPC_URL` for chain base's."""
    if name == FIRST_CHAIN and setting in _FIRST_CHAIN_NAMES:
        return _FIRST_CHAIN_NAMES[setting]
    return f"DWS_{name.upper()}_{setting}"


class UnknownChain(Exception):
    """A chain name that DWS_CHAINS does not list; the message names the ones it does."""


def parse_chain_names(value: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in value.split(",") if n.strip())
    if not names:
        raise ValueError("empty: list at least one chain name, e.g. eth")
    for name in names:
        if not CHAIN_NAME.fullmatch(name):
            raise ValueError(f"{name!r} is not a chain name (a lower-case letter, then up to 15 letters or digits)")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"{', '.join(repeated)} listed twice")
    return names


def parse_label(value: str) -> str:
    label = value.strip()
    if not _LABEL.fullmatch(label):
        raise ValueError("must be 1 to 32 letters, digits, spaces and . ( ) - (what the page shows, e.g. Base)")
    return label


def parse_eth_chain_id(value: str) -> int:
    """A chain id whose native coin is ETH, as far as we can tell: the well-known others are refused."""
    chain_id = parse_chain_id(value)
    if chain_id in NOT_ETH:
        raise ValueError(
            f"chain id {chain_id} is {NOT_ETH[chain_id]}, whose native coin is not ETH: "
            "only chains whose native coin is ETH (Ethereum, its rollups and their testnets) can take donations"
        )
    return chain_id


# A provider URL's path segment, query part or user info this long is taken for a key: a wallet URL holding
# it anywhere (path, query, fragment, host; percent-encoded or not) is refused, whatever its host. Shorter
# pieces ("v3", "eth") are compared only between URLs of the same host.
KEY_PIECE_CHARS = 16


def _host(url: str) -> str:
    """The URL's host as a browser reaches it: percent-decoded, Unicode folded (full-width letters), case
    folded, without the root's trailing dot, an IP address in one spelling (`[2001:db8:0::7]`, `3221225991`,
    `0xc0.0.2.7`); the port, default or not, is left out (a key that opens one port of a provider's host is
    not safer on another)."""
    host = unicodedata.normalize("NFKC", unquote(urlsplit(url).hostname or "")).casefold().rstrip(".")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        try:  # the forms browsers read as IPv4: one number, octal or hexadecimal parts
            return socket.inet_ntoa(socket.inet_aton(host)) if host and host[-1].isalnum() else host
        except OSError:
            return host
    mapped = getattr(address, "ipv4_mapped", None)
    return str(mapped or address)


def _url_pieces(url: str) -> set[str]:
    """Every piece of a URL that can carry a provider's key: each path segment, each query name, value and
    pair, the user name and password, percent-decoded (what the server reads)."""
    parts = urlsplit(url)
    pieces = {unquote(segment) for segment in parts.path.split("/")}
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        pieces |= {name, value, f"{name}={value}"}
    pieces |= {unquote(parts.username or ""), unquote(parts.password or "")}
    return pieces - {""}


def _as_read(url: str) -> str:
    """The whole URL as anyone reading it may take it: percent-decoding undone (twice nested too), Unicode
    and case folded."""
    text = url
    for _ in range(3):
        text = unquote(text)
    return unicodedata.normalize("NFKC", text).casefold()


def shares_provider_key(wallet_url: str, provider_url: str) -> bool:
    """Whether handing `wallet_url` to every visitor could hand them `provider_url`'s key: a key-length piece
    of the provider URL anywhere in it, whatever its host; or the same host (however spelt) and any path
    segment, query part or user info in common. A provider on a public host with nothing but its host (the
    key may be the host) shares it whole."""
    provider = _url_pieces(provider_url)
    readable = _as_read(wallet_url)
    if any(_as_read(piece) in readable for piece in provider if len(piece) >= KEY_PIECE_CHARS):
        return True
    if _host(wallet_url) != _host(provider_url):
        return False
    if not provider:
        return not is_loopback_host(_host(provider_url))
    return bool(provider & _url_pieces(wallet_url))


def parse_wallet_rpc_url(value: str) -> str:
    url = parse_rpc_url(value)
    parts = urlsplit(url)
    if parts.username or parts.password:
        raise ValueError("must not carry credentials: every visitor's wallet is given it")
    return url


def read_chains(
    env: EnvReader,
    *,
    block_cache: str | None,
    debug_data_store: str | None,
    rpc_max_answer_bytes: int,
    rpc_max_in_flight: int = 4,
) -> tuple[ChainSettings, ...]:
    """Every chain DWS_CHAINS lists, in its order; each bad setting is a problem on `env` (all of them are
    reported at once), and an empty tuple comes back when any chain's settings are unusable."""
    names = env.optional("DWS_CHAINS", parse_chain_names, (FIRST_CHAIN,))
    if any(env.raw(chain_variable(n, "DONATION_ADDRESS")) is None for n in names):
        default_address = env.required("DWS_DONATION_ADDRESS", parse_donation_address)
    else:
        default_address = env.optional("DWS_DONATION_ADDRESS", parse_donation_address, None)
    problems_before = len(env.problems)
    chains = [chain for name in names if (chain := _read_chain(env, name, default_address)) is not None]
    _cross_checks(env, chains)
    if len(env.problems) > problems_before or len(chains) != len(names):
        return ()
    # Block N of one chain is not block N of another: each chain's files go to a directory named after it.
    return tuple(
        replace(
            c,
            block_cache=os.path.join(block_cache, c.name) if block_cache else None,
            debug_data_store=os.path.join(debug_data_store, c.name) if debug_data_store else None,
            rpc_max_answer_bytes=rpc_max_answer_bytes,
            rpc_max_in_flight=rpc_max_in_flight,
        )
        for c in chains
    )


def _read_chain(env: EnvReader, name: str, default_address: str | None) -> ChainSettings | None:
    def var(setting: str) -> str:
        return chain_variable(name, setting)

    if name == FIRST_CHAIN:
        for setting, used in _FIRST_CHAIN_NAMES.items():
            if env.raw(f"DWS_ETH_{setting}") is not None:
                env.problems.append((f"DWS_ETH_{setting}", f"chain eth is configured by {used}; set that instead"))
    rpc_url = env.required(var("RPC_URL"), parse_rpc_url)
    # Required everywhere: a provider on another network would credit its coins at this one's price.
    chain_id = env.required(var("CHAIN_ID"), parse_eth_chain_id)
    if name == FIRST_CHAIN:
        stable_coins = env.required(var("STABLE_COINS"), parse_stable_coins)
    else:  # empty or unset: ETH only on that chain
        stable_coins = env.optional(var("STABLE_COINS"), parse_stable_coins, ())
    start_block = env.optional(var("START_BLOCK"), parse_block_number, None)
    trace_mode = env.optional(var("TRACE"), parse_trace_mode, "auto")
    rpc_check_url = env.optional(var("RPC_CHECK_URL"), parse_rpc_url, None)
    if rpc_check_url is not None and rpc_check_url == rpc_url:
        env.problems.append((var("RPC_CHECK_URL"), f"must name another provider than {var('RPC_URL')}"))
    explorer_url = env.optional(var("EXPLORER_URL"), parse_explorer_url, None)
    ws_url = env.optional(var("WS_URL"), parse_ws_url, None)
    stray_tokens = env.optional(var("STRAY_TOKENS"), parse_stray_tokens, None)
    donation_address = env.optional(var("DONATION_ADDRESS"), parse_donation_address, default_address)
    label = env.optional(var("LABEL"), parse_label, "")
    wallet_rpc_url = env.optional(var("WALLET_RPC_URL"), parse_wallet_rpc_url, None)
    if rpc_url is None or chain_id is None or stable_coins is None or donation_address is None:
        return None
    return ChainSettings(
        name=name,
        chain_id=chain_id,
        rpc_url=rpc_url,
        donation_address=donation_address,
        stable_coins=stable_coins,
        trace_mode=trace_mode,
        start_block=start_block,
        block_cache=None,
        debug_data_store=None,
        rpc_check_url=rpc_check_url,
        label=label,
        wallet_rpc_url=wallet_rpc_url,
        explorer_url=explorer_url,
        ws_url=ws_url,
        stray_tokens=_stray_tokens(env, var("STRAY_TOKENS"), chain_id, stable_coins, stray_tokens),
    )


def _stray_tokens(
    env: EnvReader,
    variable: str,
    chain_id: int,
    coins: tuple[StableCoin, ...],
    listed: tuple[StableCoin, ...] | None,
) -> tuple[StableCoin, ...]:
    """The chain's stray tokens: the list given, or the chain id's default without the coins it takes. A
    listed token that is one of the chain's donation coins is a contradiction, refused at start."""
    taken = {c.contract for c in coins} | {c.asset for c in coins}
    if listed is None:
        defaults = (StableCoin(a, c, d) for a, c, d in _STRAY_DEFAULTS.get(chain_id, ()))
        return tuple(t for t in defaults if t.contract not in taken and t.asset not in taken)
    clashes = [t.asset for t in listed if t.contract in taken or t.asset in taken]
    if clashes:
        env.problems.append(
            (variable, f"lists {', '.join(clashes)}, which the chain takes as a donation coin (its STABLE_COINS)")
        )
    return listed


def _cross_checks(env: EnvReader, chains: list[ChainSettings]) -> None:
    """Two chains are two networks: never the same chain id, never the same provider."""
    seen_ids: dict[int, str] = {}
    seen_urls: dict[str, str] = {}
    for chain in chains:
        other = seen_ids.setdefault(chain.chain_id, chain.name)
        if other != chain.name:
            env.problems.append(
                (
                    chain.variable("CHAIN_ID"),
                    f"is {chain.chain_id}, the chain id of chain {other} too: two chains must differ",
                )
            )
        for setting, url in (("RPC_URL", chain.rpc_url), ("RPC_CHECK_URL", chain.rpc_check_url)):
            if url is None:
                continue
            owner = seen_urls.setdefault(url.rstrip("/"), chain.name)
            if owner != chain.name:
                env.problems.append(
                    (chain.variable(setting), f"names the provider of chain {owner}: one provider serves one chain")
                )
    _wallet_urls_hold_no_key(env, chains)


def _wallet_urls_hold_no_key(env: EnvReader, chains: list[ChainSettings]) -> None:
    """No chain's wallet RPC URL (shown to every visitor) may share a key with any chain's provider. The
    problem names the variables, never a URL."""
    providers = [
        (chain.variable(setting), url)
        for chain in chains
        for setting, url in (("RPC_URL", chain.rpc_url), ("RPC_CHECK_URL", chain.rpc_check_url))
        if url is not None
    ]
    for chain in chains:
        if chain.wallet_rpc_url is None:
            continue
        shared = [variable for variable, url in providers if shares_provider_key(chain.wallet_rpc_url, url)]
        if shared:
            env.problems.append(
                (
                    chain.variable("WALLET_RPC_URL"),
                    "must be a public RPC URL, never the provider's: it holds the key, or shares the host and part "
                    f"of the path, query or user info, of {', '.join(shared)} (its key would reach every visitor)",
                )
            )


def chain_named(chains: tuple[ChainSettings, ...], name: str) -> ChainSettings:
    """The configured chain called `name`; UnknownChain naming the configured ones otherwise."""
    for chain in chains:
        if chain.name == name:
            return chain
    raise UnknownChain(f"no chain {name!r} is configured (DWS_CHAINS: {', '.join(c.name for c in chains)})")
