"""The whole dws configuration, read from the environment once and validated into one typed object.

Every process (web, worker, beat, management commands) builds its `Config` while Django loads its
settings, so a bad value stops the process before it touches the chain or the database. Messages name
the offending variable and never echo a secret: the database password, the path and query of
ETH_RPC_URL (where providers put their API key), the signing key and the Django secret key.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import TypedDict, TypeVar
from urllib.parse import unquote, urlsplit

import environ
from eth_hash.auto import keccak

from dws_project import ops_config
from dws_project.digits import whole_number
from dws_project.ip import normalize_network
from dws_project.redaction import redact_url
from dws_project.secret_box import parse_secrets_key

# Stable coins the crawlers hold an ERC-20 ABI for; an asset outside this set is refused at start.
KNOWN_STABLE_COINS = frozenset({"usdt", "usdc"})
STABLE_COIN_SCALES = range(2, 19)  # plausibility bound for a USD stable coin's decimals (2..18)
LIBPQ_SSLMODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
MAX_TIMESTAMP_AGE_CAP = 300
VENUES = ("BINANCE", "COINBASE", "KRAKEN", "KUCOIN", "BITFINEX", "CEXIO")
# Chain ids of local development chains (anvil/hardhat 31337, ganache/geth --dev 1337): the only
# chains where DWS_DEV_ETH_PRICE is accepted.
DEV_CHAIN_IDS = frozenset({31337, 1337})
# Operator surfaces answer only the machine itself unless an operator names more networks.
DEFAULT_ADMIN_NETWORKS = (ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("::1/128"))
RPC_MAX_ANSWER_MB_RANGE = range(1, 1025)  # DWS_RPC_MAX_ANSWER_MB: a provider's answer, in MB (2**20 bytes)
DEFAULT_RPC_MAX_ANSWER_MB = 32  # a busy block's traces fit with room to spare
VENUE_TIMEOUT_RANGE = (Decimal("0.5"), Decimal("30"))  # seconds; a price cycle runs every 60 s

_T = TypeVar("_T")
_D = TypeVar("_D")


class ConfigError(Exception):
    """One or more variables are unusable; each problem is `(variable, reason)`."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"{var}: {reason}" for var, reason in problems))


@dataclass(frozen=True)
class StableCoin:
    asset: str
    contract: str  # lower case 0x address
    scale: int  # the token's decimals


@dataclass(frozen=True)
class SaleTier:
    token_limit: int  # cumulative confirmed tokens up to which this tier's price applies
    token_price: Decimal  # USD per token


@dataclass(frozen=True)
class Database:
    name: str
    user: str
    password: str = field(repr=False)
    host: str
    port: int | None
    sslmode: str

    def describe(self) -> str:
        """Where the database is, for logs: never the password."""
        port = f":{self.port}" if self.port else ""
        return f"postgres://{self.user}@{self.host}{port}/{self.name} (sslmode={self.sslmode})"


@dataclass(frozen=True)
class Config:
    database: Database
    redis_url: str = field(repr=False)
    donation_address: str  # lower case
    stable_coins: tuple[StableCoin, ...]
    sale_tiers: tuple[SaleTier, ...]
    eth_rpc_url: str = field(repr=False)
    max_timestamp_age: int
    debug_data_store: str | None
    block_cache: str | None
    tt_private_key: str | None = field(repr=False)
    start_block: int | None
    chain_id: int  # DWS_CHAIN_ID: the chain the provider must serve, checked at every crawler run
    dev_eth_price: Decimal | None  # a fixed ETH/USD price for a dev chain only (never with real money)
    venue_urls: Mapping[str, str]
    venue_timeout: float  # seconds per venue HTTP call (connect and each read)
    trace_mode: str  # DWS_TRACE: how internal ETH transfers are found (auto | debug | trace | off)
    trusted_proxies: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]
    # Networks allowed to reach operator surfaces (the admin, /health's detail, /metrics).
    admin_allowed_networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]
    secret_key: str = field(repr=False)
    allowed_hosts: tuple[str, ...]
    debug: bool
    log_level: str
    # Operations (issue 14): the automatic pause on drift, the worker's metrics server, heartbeats.
    freeze_on_drift: bool = True
    metrics_port: int | None = None
    metrics_host: str = "127.0.0.1"
    # DWS_METRICS_TOKEN: the bearer token the worker's /metrics asks for when bound beyond loopback.
    metrics_token: str | None = field(default=None, repr=False)
    heartbeat_dir: str = ops_config.DEFAULT_HEARTBEAT_DIR
    # DWS_HTTPS: secure cookies, HSTS, redirect to https, the proxy's https header (off: plain HTTP).
    https: bool = True
    csrf_trusted_origins: tuple[str, ...] = ()
    # DWS_SECRETS_KEY: Fernet keys for the secrets kept in the database (dws_project/secret_box.py).
    secrets_key: tuple[str, ...] | None = field(default=None, repr=False)
    # DWS_WEBHOOK_ALLOW_LOOPBACK: a development chain's webhooks may go to this machine (the local demo).
    webhook_allow_loopback: bool = False
    # DWS_RPC_CHECK_URL: a second, independent provider that must agree before a donation is confirmed.
    rpc_check_url: str | None = field(default=None, repr=False)
    # DWS_RPC_MAX_ANSWER_MB: the largest provider answer read; a longer one is no evidence (a hold).
    rpc_max_answer_bytes: int = DEFAULT_RPC_MAX_ANSWER_MB * 2**20
    # DWS_EXPLORER_URL: the block explorer's transaction page, {tx} replaced (parse_explorer_url).
    explorer_url: str | None = None

    @property
    def eth_rpc_origin(self) -> str:
        """The only part of ETH_RPC_URL that may be shown anywhere."""
        return redact_url(self.eth_rpc_url)

    @property
    def sale_cap(self) -> int:
        """The last tier's limit is the sale's token cap."""
        return self.sale_tiers[-1].token_limit

    def stable_coin(self, asset: str) -> StableCoin | None:
        return next((c for c in self.stable_coins if c.asset == asset), None)

    def secrets(self) -> list[str]:
        """Every secret string this configuration holds, for the log redactor."""
        found = [self.database.password, self.secret_key, self.tt_private_key or "", self.metrics_token or ""]
        found += list(self.secrets_key or ())
        for url in (self.eth_rpc_url, self.rpc_check_url or ""):
            rpc = urlsplit(url)
            found += [rpc.path, rpc.query, rpc.username or "", rpc.password or ""]
        redis = urlsplit(self.redis_url)
        found += [redis.password or "", unquote(redis.password or "")]
        return sorted({s for s in found if len(s) >= 4}, key=len, reverse=True)


def is_loopback_host(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


_HEX_ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")


def _eip55(body: str) -> str:
    """The EIP-55 checksummed spelling of a 40-hex-digit address body.

    Written here on keccak alone: eth_utils would pull pydantic and friends into every process's start
    (about 0.1 s), and the crawlers start once a minute.
    """
    lower = body.lower()
    digest = keccak(lower.encode("ascii")).hex()
    return "".join(c.upper() if int(d, 16) >= 8 else c for c, d in zip(lower, digest[:40], strict=True))


def parse_address(value: str) -> str:
    """A 0x address, lower-cased; mixed case must carry a valid EIP-55 checksum."""
    value = value.strip()
    if not _HEX_ADDRESS.fullmatch(value):
        raise ValueError("not a 0x-prefixed 20-byte hex address")
    body = value[2:]
    if body != body.lower() and body != body.upper() and body != _eip55(body):
        raise ValueError("mixed-case address with an invalid EIP-55 checksum")
    return value.lower()


# Addresses that take value and give it to no one: the zero address, the precompiles (0x01..0xff: ecrecover,
# sha256, ... and the range the hard forks add to) and the conventional burn address.
_BURN_ADDRESS = "0x000000000000000000000000000000000000dead"
_PRECOMPILE_LIMIT = 0xFF


def parse_donation_address(value: str) -> str:
    """`parse_address`, refusing the zero address, a precompile and the burn address."""
    address = parse_address(value)
    number = int(address, 16)
    if number == 0:
        raise ValueError("is the zero address: nothing sent there can ever be spent")
    if number <= _PRECOMPILE_LIMIT:
        raise ValueError("is a precompile address (0x...01 to 0x...ff): nothing sent there can be spent")
    if address == _BURN_ADDRESS:
        raise ValueError("is the burn address 0x...dEaD: nothing sent there can be spent")
    return address


def parse_stable_coins(value: str) -> tuple[StableCoin, ...]:
    entries = [e.strip() for e in value.split(",") if e.strip()]
    if not entries:
        raise ValueError("empty: list at least one asset:contract:scale entry")
    coins: list[StableCoin] = []
    for position, entry in enumerate(entries, start=1):
        parts = entry.split(":")
        if len(parts) != 3:
            raise ValueError(f"entry {position} is not asset:contract:scale")
        asset, contract, scale_text = (p.strip() for p in parts)
        if asset not in KNOWN_STABLE_COINS:
            known = ", ".join(sorted(KNOWN_STABLE_COINS))
            raise ValueError(f"entry {position}: unknown asset {asset!r} (known, lower case: {known})")
        try:
            contract = parse_address(contract)
        except ValueError as exc:
            raise ValueError(f"entry {position} ({asset}): contract {exc}") from None
        scale = whole_number(scale_text, max_digits=2)
        if scale is None or scale not in STABLE_COIN_SCALES:
            raise ValueError(f"entry {position} ({asset}): scale must be a whole number from 2 to 18")
        coins.append(StableCoin(asset=asset, contract=contract, scale=scale))
    if len({c.asset for c in coins}) != len(coins):
        raise ValueError("an asset is listed twice")
    if len({c.contract for c in coins}) != len(coins):
        raise ValueError("a contract is listed twice")
    return tuple(coins)


def parse_sale_params(value: str) -> tuple[SaleTier, ...]:
    entries = [e.strip() for e in value.split(",") if e.strip()]
    if not entries:
        raise ValueError("empty: list at least one token_limit:token_price_usd tier")
    tiers: list[SaleTier] = []
    for position, entry in enumerate(entries, start=1):
        parts = entry.split(":")
        if len(parts) != 2:
            raise ValueError(f"tier {position} is not token_limit:token_price_usd")
        limit_text, price_text = (p.strip() for p in parts)
        limit = whole_number(limit_text, max_digits=30)
        if not limit:
            raise ValueError(f"tier {position}: token limit must be a whole number greater than zero")
        try:
            price = Decimal(price_text)
        except InvalidOperation:
            raise ValueError(f"tier {position}: token price is not a decimal number") from None
        if not price.is_finite() or price <= 0:
            raise ValueError(f"tier {position}: token price must be greater than zero")
        if tiers and limit <= tiers[-1].token_limit:
            raise ValueError(f"tier {position}: token limits must ascend")
        tiers.append(SaleTier(token_limit=limit, token_price=price))
    return tuple(tiers)


def parse_rpc_url(value: str) -> str:
    """https only; plain http is allowed for a loopback node (a local dev chain)."""
    try:
        parts = urlsplit(value.strip())
        host = parts.hostname or ""
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        raise ValueError("not a valid URL") from None
    if not host:
        raise ValueError("not a URL with a host")
    if parts.scheme == "https":
        return value.strip()
    if parts.scheme == "http" and is_loopback_host(host):
        return value.strip()
    raise ValueError(f"must be https (http only for a loopback host), got {redact_url(value)}")


def parse_explorer_url(value: str) -> str:
    """DWS_EXPLORER_URL: a block explorer's transaction page, `{tx}` (exactly once, nothing else in braces)
    standing for the hash, in its path or query; the donor's receipt links there. The scheme and host
    follow the RPC rule (https; plain http for a loopback host) and no credentials are allowed."""
    template = value.strip()
    rest = template.replace("{tx}", "", 1)
    if "{tx}" not in template or "{" in rest or "}" in rest:
        raise ValueError("must contain {tx} (where the transaction hash goes) exactly once, and no other {...}")
    sample = "0x" + "ab" * 32
    url = parse_rpc_url(template.replace("{tx}", sample))
    parts = urlsplit(url)
    if sample in (parts.hostname or ""):
        raise ValueError("{tx} must be in the path or query, not the host")
    if parts.username or parts.password:
        raise ValueError("must not carry credentials")
    return template


def parse_venue_url(value: str) -> str:
    """A venue base URL: scheme://host[:port] and nothing else; the adapter appends its path."""
    url = parse_rpc_url(value)
    parts = urlsplit(url)
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        raise ValueError("must be a base URL scheme://host[:port] without path, query or credentials")
    return url.rstrip("/")


def parse_networks(value: str) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    networks = []
    for entry in (e.strip() for e in value.split(",")):
        if not entry:
            continue
        try:
            # ::ffff:10.0.0.0/104 and 10.0.0.0/8 are one network to every rule (dws_project/ip.py).
            networks.append(normalize_network(ipaddress.ip_network(entry, strict=False)))
        except ValueError:
            raise ValueError(f"{entry!r} is not an IP address or network") from None
    return tuple(networks)


class _Reader:
    """Reads variables one at a time, keeping every problem instead of stopping at the first."""

    def __init__(self, environ_: Mapping[str, str]) -> None:
        self._environ = environ_
        self.problems: list[tuple[str, str]] = []

    def required(self, var: str, parse: Callable[[str], _T], *, secret: bool = False) -> _T | None:
        """The parsed value; None (and a problem) when unset or invalid."""
        if self._raw(var) is None:
            self.problems.append((var, "is required but not set or empty"))
            return None
        return self.optional(var, parse, None, secret=secret)

    def optional(self, var: str, parse: Callable[[str], _T], default: _D, *, secret: bool = False) -> _T | _D:
        """The parsed value, or `default` when unset (and, with a problem, when invalid)."""
        raw = self._raw(var)
        if raw is None:
            return default
        try:
            return parse(raw)
        except (ValueError, TypeError) as exc:
            self.problems.append((var, "has an invalid value" if secret else str(exc)))
            return default

    def _raw(self, var: str) -> str | None:
        raw = self._environ.get(var)
        return None if raw is None or raw.strip() == "" else raw


def _present(value: _T | None) -> _T:
    """A required value once the problems are raised: a missing one was reported and never gets here."""
    assert value is not None
    return value


def load_config(environ_: Mapping[str, str]) -> Config:
    """Read and validate every dws variable; raise ConfigError listing each bad one."""
    env = _Reader(environ_)
    database = env.required("DATABASE_URL", _parse_database_url, secret=True)
    sslmode = env.optional("DWS_DB_SSLMODE", _parse_sslmode, "require")
    redis_url = env.optional("REDIS_URL", _parse_redis_url, "redis://127.0.0.1:6379/0", secret=True)
    donation_address = env.required("DWS_DONATION_ADDRESS", parse_donation_address)
    stable_coins = env.required("DWS_STABLE_COINS", parse_stable_coins)
    sale_tiers = env.required("DWS_SALE_PARAMS", parse_sale_params)
    eth_rpc_url = env.required("ETH_RPC_URL", parse_rpc_url)
    rpc_check_url = env.optional("DWS_RPC_CHECK_URL", parse_rpc_url, None)
    if rpc_check_url is not None and rpc_check_url == eth_rpc_url:
        env.problems.append(("DWS_RPC_CHECK_URL", "must name another provider than ETH_RPC_URL"))
    max_timestamp_age = env.optional("DWS_MAX_TIMESTAMP_AGE", _parse_timestamp_age, 30)
    debug_data_store = env.optional("DWS_DEBUG_DATA_STORE", _parse_directory, None)
    block_cache = env.optional("DWS_BLOCK_CACHE", _parse_directory, None)
    tt_private_key = env.optional("DWS_TT_PRIVATE_KEY", _parse_private_key, None, secret=True)
    start_block = env.optional("DWS_START_BLOCK", _parse_block_number, None)
    # Required everywhere: a provider on another network would credit its coins at this one's price.
    chain_id = env.required("DWS_CHAIN_ID", _parse_chain_id)
    dev_eth_price = env.optional("DWS_DEV_ETH_PRICE", _parse_dev_eth_price, None)
    if dev_eth_price is not None and chain_id not in DEV_CHAIN_IDS:
        # A made-up price on a real chain would credit real money at a fake rate.
        env.problems.append(("DWS_DEV_ETH_PRICE", _dev_only_reason(chain_id)))
    trusted_proxies = env.optional("DWS_TRUSTED_PROXIES", parse_networks, ())
    admin_allowed_networks = env.optional("DWS_ADMIN_ALLOWED_NETWORKS", parse_networks, DEFAULT_ADMIN_NETWORKS)
    log_level = env.optional("DWS_LOG_LEVEL", _parse_log_level, "INFO")
    debug = env.optional("DJANGO_DEBUG", _parse_bool, False)
    dev_chain = chain_id in DEV_CHAIN_IDS
    if debug and not dev_chain:
        # DEBUG shows settings and tracebacks to anyone and accepts a public fallback secret key.
        env.problems.append(("DJANGO_DEBUG", _dev_only_reason(chain_id)))
    # Plain HTTP is the default only where no real money moves (a development chain).
    https = env.optional("DWS_HTTPS", _parse_on_off, not dev_chain)
    csrf_trusted_origins = env.optional("DWS_CSRF_TRUSTED_ORIGINS", _parse_origins, ())
    allowed_hosts = env.optional("DJANGO_ALLOWED_HOSTS", _parse_hosts, ("localhost", "127.0.0.1", "[::1]"))
    venue_urls: dict[str, str] = {}
    for venue in VENUES:
        url = env.optional(f"DWS_VENUE_{venue}_URL", parse_venue_url, None)
        if url:
            venue_urls[venue.lower()] = url
    venue_timeout = env.optional("DWS_VENUE_TIMEOUT", _parse_venue_timeout, 5.0)
    trace_mode = env.optional("DWS_TRACE", _parse_trace_mode, "auto")
    rpc_max_answer_mb = env.optional("DWS_RPC_MAX_ANSWER_MB", _parse_answer_mb, DEFAULT_RPC_MAX_ANSWER_MB)
    freeze_on_drift = env.optional("DWS_FREEZE_ON_DRIFT", ops_config.parse_on_off, True)
    metrics_port = env.optional("DWS_METRICS_PORT", ops_config.parse_port, None)
    metrics_host = env.optional("DWS_METRICS_HOST", ops_config.parse_listen_host, "127.0.0.1")
    metrics_token = env.optional("DWS_METRICS_TOKEN", ops_config.parse_token, None, secret=True)
    if metrics_port and not is_loopback_host(str(metrics_host)) and not metrics_token:
        # Beyond loopback nothing filters who reaches the worker's port; a token does.
        env.problems.append(("DWS_METRICS_TOKEN", "is required when DWS_METRICS_HOST is not a loopback address"))
    heartbeat_dir = env.optional("DWS_HEARTBEAT_DIR", ops_config.parse_absolute_path, ops_config.DEFAULT_HEARTBEAT_DIR)
    secrets_key = env.optional("DWS_SECRETS_KEY", parse_secrets_key, None, secret=True)
    webhook_allow_loopback = env.optional("DWS_WEBHOOK_ALLOW_LOOPBACK", _parse_on_off, False)
    explorer_url = env.optional("DWS_EXPLORER_URL", parse_explorer_url, None)
    if webhook_allow_loopback and not dev_chain:
        # Webhooks to this machine reach its database, Redis and metrics ports: a local demo's choice only.
        env.problems.append(("DWS_WEBHOOK_ALLOW_LOOPBACK", _dev_only_reason(chain_id)))
    # Outside development a missing secret key stops the process; DEBUG gets a throwaway one.
    secret_key: str | None
    if debug:
        secret_key = env.optional("DJANGO_SECRET_KEY", _parse_secret_key, "dev-only-insecure-key", secret=True)
    else:
        secret_key = env.required("DJANGO_SECRET_KEY", _parse_secret_key, secret=True)
    if env.problems:
        raise ConfigError(env.problems)

    return Config(
        database=Database(**_present(database), sslmode=sslmode),
        redis_url=redis_url,
        donation_address=_present(donation_address),
        stable_coins=_present(stable_coins),
        sale_tiers=_present(sale_tiers),
        eth_rpc_url=_present(eth_rpc_url),
        max_timestamp_age=max_timestamp_age,
        debug_data_store=debug_data_store,
        block_cache=block_cache,
        tt_private_key=tt_private_key,
        start_block=start_block,
        chain_id=_present(chain_id),
        dev_eth_price=dev_eth_price,
        venue_urls=venue_urls,
        venue_timeout=venue_timeout,
        trace_mode=trace_mode,
        trusted_proxies=trusted_proxies,
        admin_allowed_networks=admin_allowed_networks,
        secret_key=_present(secret_key),
        allowed_hosts=allowed_hosts,
        debug=debug,
        log_level=log_level,
        freeze_on_drift=freeze_on_drift,
        metrics_port=metrics_port,
        metrics_host=metrics_host,
        metrics_token=metrics_token,
        heartbeat_dir=heartbeat_dir,
        https=https,
        csrf_trusted_origins=csrf_trusted_origins,
        secrets_key=secrets_key,
        webhook_allow_loopback=webhook_allow_loopback,
        rpc_max_answer_bytes=rpc_max_answer_mb * 2**20,
        rpc_check_url=rpc_check_url,
        explorer_url=explorer_url,
    )


def _dev_only_reason(chain_id: object) -> str:
    dev_ids = ", ".join(map(str, sorted(DEV_CHAIN_IDS)))
    return (
        f"is only accepted on a development chain (DWS_CHAIN_ID one of {dev_ids}); "
        f"DWS_CHAIN_ID is {chain_id or 'not set'}"
    )


class _DatabaseURL(TypedDict):
    """What DATABASE_URL names; DWS_DB_SSLMODE completes the `Database`."""

    name: str
    user: str
    password: str
    host: str
    port: int | None


def _parse_database_url(value: str) -> _DatabaseURL:
    scheme = urlsplit(value.strip()).scheme
    if scheme not in ("postgres", "postgresql", "pgsql"):
        raise ValueError("must be a postgres:// URL")
    parsed = environ.Env.db_url_config(value.strip())
    if not parsed.get("NAME") or not parsed.get("HOST"):
        raise ValueError("must name a host and a database")
    return {
        "name": parsed["NAME"],
        "user": parsed.get("USER") or "",
        "password": parsed.get("PASSWORD") or "",
        "host": parsed["HOST"],
        "port": int(parsed["PORT"]) if parsed.get("PORT") else None,
    }


def _parse_sslmode(value: str) -> str:
    if value.strip() not in LIBPQ_SSLMODES:
        raise ValueError(f"must be one of libpq's modes: {', '.join(LIBPQ_SSLMODES)}")
    return value.strip()


def _parse_redis_url(value: str) -> str:
    parts = urlsplit(value.strip())
    if parts.scheme not in ("redis", "rediss", "unix") or (parts.scheme != "unix" and not parts.hostname):
        raise ValueError("must be a redis://host:port/db URL")
    return value.strip()


def _parse_timestamp_age(value: str) -> int:
    seconds = whole_number(value)
    if seconds is None or not 1 <= seconds <= MAX_TIMESTAMP_AGE_CAP:
        raise ValueError(f"must be whole seconds from 1 to {MAX_TIMESTAMP_AGE_CAP}")
    return seconds


def _parse_directory(value: str) -> str:
    return value.strip()


def _parse_private_key(value: str) -> str:
    body = value.strip().removeprefix("0x")
    if len(body) != 64 or any(ch not in "0123456789abcdefABCDEF" for ch in body):
        raise ValueError("not a 32-byte hex key")
    return "0x" + body


def _parse_block_number(value: str) -> int:
    block = whole_number(value)
    if block is None:
        raise ValueError("must be a block number (a whole number >= 0)")
    return block


def _parse_chain_id(value: str) -> int:
    chain_id = whole_number(value)
    if not chain_id:
        raise ValueError("must be a positive chain id")
    return chain_id


def _parse_answer_mb(value: str) -> int:
    low, high = RPC_MAX_ANSWER_MB_RANGE.start, RPC_MAX_ANSWER_MB_RANGE.stop - 1
    megabytes = whole_number(value)
    if megabytes is None or megabytes not in RPC_MAX_ANSWER_MB_RANGE:
        raise ValueError(f"must be whole megabytes from {low} to {high}")
    return megabytes


def _parse_dev_eth_price(value: str) -> Decimal:
    try:
        price = Decimal(value.strip())
    except ArithmeticError:
        raise ValueError("must be a positive decimal ETH/USD price, e.g. 2000.00") from None
    if not price.is_finite() or price <= 0:
        raise ValueError("must be a positive decimal ETH/USD price, e.g. 2000.00")
    return price


def _parse_bool(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError("must be true or false")


def _parse_on_off(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered not in ("on", "off"):
        raise ValueError("must be on or off")
    return lowered == "on"


def _parse_origins(value: str) -> tuple[str, ...]:
    """Comma list of scheme://host[:port] origins (Django's CSRF_TRUSTED_ORIGINS)."""
    origins = []
    for entry in (e.strip() for e in value.split(",")):
        if not entry:
            continue
        parts = urlsplit(entry)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/"):
            raise ValueError(f"{entry!r} is not an origin scheme://host[:port]")
        origins.append(entry.rstrip("/"))
    return tuple(origins)


def _parse_log_level(value: str) -> str:
    level = value.strip().upper()
    if level not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
        raise ValueError("must be DEBUG, INFO, WARNING, ERROR or CRITICAL")
    return level


def _parse_hosts(value: str) -> tuple[str, ...]:
    return tuple(h.strip() for h in value.split(",") if h.strip())


TRACE_MODES = ("auto", "debug", "trace", "off")


def _parse_trace_mode(value: str) -> str:
    mode = value.strip().lower()
    if mode not in TRACE_MODES:
        raise ValueError(f"must be one of {', '.join(TRACE_MODES)}")
    return mode


def _parse_venue_timeout(value: str) -> float:
    low, high = VENUE_TIMEOUT_RANGE
    try:
        seconds = Decimal(value.strip())
    except InvalidOperation:
        raise ValueError(f"must be seconds from {low} to {high}") from None
    if not seconds.is_finite() or not low <= seconds <= high:
        raise ValueError(f"must be seconds from {low} to {high}")
    return float(seconds)


def _parse_secret_key(value: str) -> str:
    if len(value) < 32:
        raise ValueError("must be at least 32 characters")
    return value
