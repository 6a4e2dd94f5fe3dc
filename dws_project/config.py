"""The whole dws configuration, read from the environment once and validated into one typed object.

Every process (web, worker, beat, management commands) builds its `Config` while Django loads its
settings, so a bad value stops the process before it touches the chain or the database. Every problem is
reported at once, each naming its variable, and no message echoes a secret: the database password, the
path and query of a provider URL (where providers put their API key), the signing key and the Django
secret key. The chains (DWS_CHAINS and each chain's variables) are read by dws_project/chain_settings.py.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import TypedDict
from urllib.parse import unquote, urlsplit

import environ

from dws_project import ops_config
from dws_project.chain_settings import DEV_CHAIN_IDS, ChainSettings, UnknownChain, chain_named, read_chains
from dws_project.config_values import (
    EnvReader,
    SaleTier,
    is_loopback_host,
    parse_networks,
    parse_on_off,
    parse_sale_params,
    parse_venue_url,
    present,
)
from dws_project.digits import whole_number
from dws_project.secret_box import parse_secrets_key

LIBPQ_SSLMODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
MAX_TIMESTAMP_AGE_CAP = 300
VENUES = ("BINANCE", "COINBASE", "KRAKEN", "KUCOIN", "BITFINEX", "CEXIO")
# Operator surfaces answer only the machine itself unless an operator names more networks.
DEFAULT_ADMIN_NETWORKS = (ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("::1/128"))
RPC_MAX_ANSWER_MB_RANGE = range(1, 1025)  # DWS_RPC_MAX_ANSWER_MB: a provider's answer, in MB (2**20 bytes)
DEFAULT_RPC_MAX_ANSWER_MB = 32  # a busy block's traces fit with room to spare
RPC_MAX_IN_FLIGHT_RANGE = range(1, 65)  # DWS_RPC_MAX_IN_FLIGHT: concurrent posts to one provider endpoint
DEFAULT_REFUND_ALERT_DAYS = 14  # two weeks: time to export, sign and execute a batch, with room for a holiday
DEFAULT_RPC_MAX_IN_FLIGHT = 4  # a handful: a hosted provider's latency overlapped, its rate limit respected
VENUE_TIMEOUT_RANGE = (Decimal("0.5"), Decimal("30"))  # seconds; a price cycle runs every 60 s


class ConfigError(Exception):
    """One or more variables are unusable; each problem is `(variable, reason)`."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"{var}: {reason}" for var, reason in problems))


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
    sale_tiers: tuple[SaleTier, ...]
    # DWS_CHAINS in order, each with its settings; the first is the page's default (DESIGN "Chains").
    chains: tuple[ChainSettings, ...]
    max_timestamp_age: int
    debug_data_store: str | None
    block_cache: str | None
    tt_private_key: str | None = field(repr=False)
    dev_eth_price: Decimal | None  # a fixed ETH/USD price for development chains only (never with real money)
    venue_urls: Mapping[str, str]
    venue_timeout: float  # seconds per venue HTTP call (connect and each read)
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
    # DWS_RPC_MAX_ANSWER_MB: the largest provider answer read; a longer one is no evidence (a hold).
    rpc_max_answer_bytes: int = DEFAULT_RPC_MAX_ANSWER_MB * 2**20
    # DWS_RPC_MAX_IN_FLIGHT: posts in flight at once to one provider endpoint, per process.
    rpc_max_in_flight: int = DEFAULT_RPC_MAX_IN_FLIGHT
    # DWS_REFUND_ALERT_DAYS: an owed refund older than this is overdue (/health, the metric, the alert).
    refund_alert_days: int = DEFAULT_REFUND_ALERT_DAYS

    @property
    def first_chain(self) -> ChainSettings:
        """The page's default chain, the one today's single-chain API fields describe."""
        return self.chains[0]

    def chain(self, name: str) -> ChainSettings:
        """The configured chain `name`; UnknownChain (naming the configured ones) otherwise."""
        return chain_named(self.chains, name)

    @property
    def chain_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.chains)

    @property
    def dev(self) -> bool:
        """Every chain is a local development chain: no real money can move."""
        return all(c.dev for c in self.chains)

    @property
    def sale_cap(self) -> int:
        """The last tier's limit is the sale's token cap."""
        return self.sale_tiers[-1].token_limit

    def secrets(self) -> list[str]:
        """Every secret string this configuration holds, for the log redactor."""
        found = [self.database.password, self.secret_key, self.tt_private_key or "", self.metrics_token or ""]
        found += list(self.secrets_key or ())
        for chain in self.chains:
            for url in (chain.rpc_url, chain.rpc_check_url or "", chain.ws_url or ""):
                rpc = urlsplit(url)
                found += [rpc.path, rpc.query, rpc.username or "", rpc.password or ""]
        redis = urlsplit(self.redis_url)
        found += [redis.password or "", unquote(redis.password or "")]
        return sorted({s for s in found if len(s) >= 4}, key=len, reverse=True)


__all__ = ["Config", "ConfigError", "Database", "UnknownChain", "load_config"]


def load_config(environ_: Mapping[str, str]) -> Config:
    """Read and validate every dws variable; raise ConfigError listing each bad one."""
    env = EnvReader(environ_)
    database = env.required("DATABASE_URL", _parse_database_url, secret=True)
    sslmode = env.optional("DWS_DB_SSLMODE", _parse_sslmode, "require")
    redis_url = env.optional("REDIS_URL", _parse_redis_url, "redis://127.0.0.1:6379/0", secret=True)
    sale_tiers = env.required("DWS_SALE_PARAMS", parse_sale_params)
    max_timestamp_age = env.optional("DWS_MAX_TIMESTAMP_AGE", _parse_timestamp_age, 30)
    debug_data_store = env.optional("DWS_DEBUG_DATA_STORE", _parse_directory, None)
    block_cache = env.optional("DWS_BLOCK_CACHE", _parse_directory, None)
    rpc_max_answer_mb = env.optional("DWS_RPC_MAX_ANSWER_MB", _parse_answer_mb, DEFAULT_RPC_MAX_ANSWER_MB)
    rpc_max_in_flight = env.optional("DWS_RPC_MAX_IN_FLIGHT", _parse_in_flight, DEFAULT_RPC_MAX_IN_FLIGHT)
    chains = read_chains(
        env,
        block_cache=block_cache,
        debug_data_store=debug_data_store,
        rpc_max_answer_bytes=rpc_max_answer_mb * 2**20,
        rpc_max_in_flight=rpc_max_in_flight,
    )
    # A development deployment: every chain is a local one (no chain read: nothing to judge by).
    dev_chain = bool(chains) and all(c.dev for c in chains)
    tt_private_key = env.optional("DWS_TT_PRIVATE_KEY", _parse_private_key, None, secret=True)
    dev_eth_price = env.optional("DWS_DEV_ETH_PRICE", _parse_dev_eth_price, None)
    if dev_eth_price is not None and not dev_chain:
        # A made-up price on a real chain would credit real money at a fake rate.
        env.problems.append(("DWS_DEV_ETH_PRICE", _dev_only_reason(chains)))
    trusted_proxies = env.optional("DWS_TRUSTED_PROXIES", parse_networks, ())
    admin_allowed_networks = env.optional("DWS_ADMIN_ALLOWED_NETWORKS", parse_networks, DEFAULT_ADMIN_NETWORKS)
    log_level = env.optional("DWS_LOG_LEVEL", _parse_log_level, "INFO")
    debug = env.optional("DJANGO_DEBUG", _parse_bool, False)
    if debug and not dev_chain:
        # DEBUG shows settings and tracebacks to anyone and accepts a public fallback secret key.
        env.problems.append(("DJANGO_DEBUG", _dev_only_reason(chains)))
    # Plain HTTP is the default only where no real money moves (development chains).
    https = env.optional("DWS_HTTPS", parse_on_off, not dev_chain)
    csrf_trusted_origins = env.optional("DWS_CSRF_TRUSTED_ORIGINS", _parse_origins, ())
    allowed_hosts = env.optional("DJANGO_ALLOWED_HOSTS", _parse_hosts, ("localhost", "127.0.0.1", "[::1]"))
    venue_urls: dict[str, str] = {}
    for venue in VENUES:
        url = env.optional(f"DWS_VENUE_{venue}_URL", parse_venue_url, None)
        if url:
            venue_urls[venue.lower()] = url
    venue_timeout = env.optional("DWS_VENUE_TIMEOUT", _parse_venue_timeout, 5.0)
    freeze_on_drift = env.optional("DWS_FREEZE_ON_DRIFT", ops_config.parse_on_off, True)
    refund_alert_days = env.optional("DWS_REFUND_ALERT_DAYS", _parse_refund_alert_days, DEFAULT_REFUND_ALERT_DAYS)
    metrics_port = env.optional("DWS_METRICS_PORT", ops_config.parse_port, None)
    metrics_host = env.optional("DWS_METRICS_HOST", ops_config.parse_listen_host, "127.0.0.1")
    metrics_token = env.optional("DWS_METRICS_TOKEN", ops_config.parse_token, None, secret=True)
    if metrics_port and not is_loopback_host(str(metrics_host)) and not metrics_token:
        # Beyond loopback nothing filters who reaches the worker's port; a token does.
        env.problems.append(("DWS_METRICS_TOKEN", "is required when DWS_METRICS_HOST is not a loopback address"))
    heartbeat_dir = env.optional("DWS_HEARTBEAT_DIR", ops_config.parse_absolute_path, ops_config.DEFAULT_HEARTBEAT_DIR)
    secrets_key = env.optional("DWS_SECRETS_KEY", parse_secrets_key, None, secret=True)
    webhook_allow_loopback = env.optional("DWS_WEBHOOK_ALLOW_LOOPBACK", parse_on_off, False)
    if webhook_allow_loopback and not dev_chain:
        # Webhooks to this machine reach its database, Redis and metrics ports: a local demo's choice only.
        env.problems.append(("DWS_WEBHOOK_ALLOW_LOOPBACK", _dev_only_reason(chains)))
    # Outside development a missing secret key stops the process; DEBUG gets a throwaway one.
    secret_key: str | None
    if debug:
        secret_key = env.optional("DJANGO_SECRET_KEY", _parse_secret_key, "dev-only-insecure-key", secret=True)
    else:
        secret_key = env.required("DJANGO_SECRET_KEY", _parse_secret_key, secret=True)
    if env.problems:
        raise ConfigError(env.problems)

    return Config(
        database=Database(**present(database), sslmode=sslmode),
        redis_url=redis_url,
        sale_tiers=present(sale_tiers),
        chains=chains,
        max_timestamp_age=max_timestamp_age,
        debug_data_store=debug_data_store,
        block_cache=block_cache,
        tt_private_key=tt_private_key,
        dev_eth_price=dev_eth_price,
        venue_urls=venue_urls,
        venue_timeout=venue_timeout,
        trusted_proxies=trusted_proxies,
        admin_allowed_networks=admin_allowed_networks,
        secret_key=present(secret_key),
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
        rpc_max_in_flight=rpc_max_in_flight,
        refund_alert_days=refund_alert_days,
    )


def _dev_only_reason(chains: tuple[ChainSettings, ...]) -> str:
    dev_ids = ", ".join(map(str, sorted(DEV_CHAIN_IDS)))
    real = [f"{c.variable('CHAIN_ID')} is {c.chain_id}" for c in chains if not c.dev]
    found = "; ".join(real) if real else "no chain's id could be read"
    return f"is only accepted on a development chain (every chain's id one of {dev_ids}): {found}"


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


def _whole_in(allowed: range, what: str) -> Callable[[str], int]:
    """A parser of a whole number of `what` within `allowed`."""

    def parse(value: str) -> int:
        number = whole_number(value)
        if number is None or number not in allowed:
            raise ValueError(f"must be {what} from {allowed.start} to {allowed.stop - 1}")
        return number

    return parse


_parse_answer_mb = _whole_in(RPC_MAX_ANSWER_MB_RANGE, "whole megabytes")
_parse_in_flight = _whole_in(RPC_MAX_IN_FLIGHT_RANGE, "a whole number of posts")


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


def _parse_refund_alert_days(value: str) -> int:
    days = whole_number(value.strip(), max_digits=3)
    if not days:
        raise ValueError("must be a whole number of days from 1 to 999")
    return days


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
