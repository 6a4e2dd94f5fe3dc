"""The value parsers every configuration reader shares (dws_project/config.py, dws_project/chain_settings.py):
addresses, provider URLs, coin and tier lists, numbers; and the reader that keeps every problem it meets.

Each parser takes the variable's text and returns the value or raises ValueError with a reason that never
echoes a secret (a URL is shown through `redact_url`: scheme and host only).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TypeVar
from urllib.parse import urlsplit

from dws_project.digits import whole_number
from dws_project.ip import normalize_network
from dws_project.keccak import keccak256
from dws_project.redaction import redact_url

# Stable coins the crawlers hold an ERC-20 ABI for; an asset outside this set is refused at start.
KNOWN_STABLE_COINS = frozenset({"usdt", "usdc"})
STABLE_COIN_SCALES = range(2, 19)  # plausibility bound for a USD stable coin's decimals (2..18)

_T = TypeVar("_T")
_D = TypeVar("_D")


@dataclass(frozen=True)
class StableCoin:
    asset: str
    contract: str  # lower case 0x address
    scale: int  # the token's decimals


@dataclass(frozen=True)
class SaleTier:
    token_limit: int  # cumulative confirmed tokens up to which this tier's price applies
    token_price: Decimal  # USD per token


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
    (about 0.1 s), and the crawlers start once a minute; the hash is the plain-Python one, since loading
    a compiled one costs more than this one hash (dws_project/keccak.py).
    """
    lower = body.lower()
    digest = keccak256(lower.encode("ascii")).hex()
    return "".join(c.upper() if int(d, 16) >= 8 else c for c, d in zip(lower, digest[:40], strict=True))


def checksum_address(address: str) -> str:
    """A 0x address in its EIP-55 checksummed spelling (what wallets and the Safe's tools show)."""
    return "0x" + _eip55(address.removeprefix("0x"))


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


def _token_list(
    value: str, *, word: str, scales: range, unfit_asset: Callable[[str], str | None]
) -> tuple[StableCoin, ...]:
    """A comma list of `asset:contract:<word>` entries (DWS_STABLE_COINS, DWS_STRAY_TOKENS): each asset as
    `unfit_asset` allows (it returns why not), its contract an address, its decimals in `scales`; no asset
    or contract twice."""
    entries = [e.strip() for e in value.split(",") if e.strip()]
    if not entries:
        raise ValueError(f"empty: list at least one asset:contract:{word} entry")
    coins: list[StableCoin] = []
    for position, entry in enumerate(entries, start=1):
        parts = entry.split(":")
        if len(parts) != 3:
            raise ValueError(f"entry {position} is not asset:contract:{word}")
        asset, contract, scale_text = (p.strip() for p in parts)
        unfit = unfit_asset(asset)
        if unfit is not None:
            raise ValueError(f"entry {position}: {unfit}")
        try:
            contract = parse_address(contract)
        except ValueError as exc:
            raise ValueError(f"entry {position} ({asset}): contract {exc}") from None
        scale = whole_number(scale_text, max_digits=2)
        if scale is None or scale not in scales:
            bounds = f"from {scales[0]} to {scales[-1]}"
            raise ValueError(f"entry {position} ({asset}): {word} must be a whole number {bounds}")
        coins.append(StableCoin(asset=asset, contract=contract, scale=scale))
    if len({c.asset for c in coins}) != len(coins):
        raise ValueError("an asset is listed twice")
    if len({c.contract for c in coins}) != len(coins):
        raise ValueError("a contract is listed twice")
    return tuple(coins)


def _unknown_stable_coin(asset: str) -> str | None:
    if asset in KNOWN_STABLE_COINS:
        return None
    return f"unknown asset {asset!r} (known, lower case: {', '.join(sorted(KNOWN_STABLE_COINS))})"


def parse_stable_coins(value: str) -> tuple[StableCoin, ...]:
    return _token_list(value, word="scale", scales=STABLE_COIN_SCALES, unfit_asset=_unknown_stable_coin)


_STRAY_ASSET = re.compile(r"[a-z][a-z0-9.]{0,15}")
STRAY_TOKEN_DECIMALS = range(0, 19)  # what the refund register's amounts hold exactly (18 decimals, like ETH)


def _not_a_token_name(asset: str) -> str | None:
    if _STRAY_ASSET.fullmatch(asset):
        return None
    return f"{asset!r} is not a token name (lower case letters, digits, dots)"


def parse_stray_tokens(value: str) -> tuple[StableCoin, ...]:
    """DWS_STRAY_TOKENS: well-known tokens the sale does not take, `asset:contract:decimals` like
    DWS_STABLE_COINS (any lower-case name: `dai`, `usdc.e`, `weth`), or `none`."""
    if value.strip().lower() == "none":
        return ()
    return _token_list(value, word="decimals", scales=STRAY_TOKEN_DECIMALS, unfit_asset=_not_a_token_name)


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


def _url_with_scheme(value: str, secure: str, plain: str) -> str:
    """`secure` (https, wss) anywhere; `plain` (http, ws) only for a loopback host (a local dev node)."""
    try:
        parts = urlsplit(value.strip())
        host = parts.hostname or ""
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        raise ValueError("not a valid URL") from None
    if not host:
        raise ValueError("not a URL with a host")
    if parts.scheme == secure or (parts.scheme == plain and is_loopback_host(host)):
        return value.strip()
    raise ValueError(f"must be {secure} ({plain} only for a loopback host), got {redact_url(value)}")


def parse_rpc_url(value: str) -> str:
    """https only; plain http is allowed for a loopback node (a local dev chain)."""
    return _url_with_scheme(value, "https", "http")


def parse_ws_url(value: str) -> str:
    """DWS_WS_URL: the provider's WebSocket endpoint for `newHeads`; wss only, plain ws for a loopback node."""
    return _url_with_scheme(value, "wss", "ws")


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


class EnvReader:
    """Reads variables one at a time, keeping every problem instead of stopping at the first."""

    def __init__(self, environ_: Mapping[str, str]) -> None:
        self._environ = environ_
        self.problems: list[tuple[str, str]] = []

    def required(self, var: str, parse: Callable[[str], _T], *, secret: bool = False) -> _T | None:
        """The parsed value; None (and a problem) when unset or invalid."""
        if self.raw(var) is None:
            self.problems.append((var, "is required but not set or empty"))
            return None
        return self.optional(var, parse, None, secret=secret)

    def optional(self, var: str, parse: Callable[[str], _T], default: _D, *, secret: bool = False) -> _T | _D:
        """The parsed value, or `default` when unset (and, with a problem, when invalid)."""
        raw = self.raw(var)
        if raw is None:
            return default
        try:
            return parse(raw)
        except (ValueError, TypeError) as exc:
            self.problems.append((var, "has an invalid value" if secret else str(exc)))
            return default

    def raw(self, var: str) -> str | None:
        raw = self._environ.get(var)
        return None if raw is None or raw.strip() == "" else raw


def present(value: _T | None) -> _T:
    """A required value once the problems are raised: a missing one was reported and never gets here."""
    assert value is not None
    return value


def parse_block_number(value: str) -> int:
    block = whole_number(value)
    if block is None:
        raise ValueError("must be a block number (a whole number >= 0)")
    return block


def parse_chain_id(value: str) -> int:
    chain_id = whole_number(value)
    if not chain_id:
        raise ValueError("must be a positive chain id")
    return chain_id


def parse_on_off(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered not in ("on", "off"):
        raise ValueError("must be on or off")
    return lowered == "on"


TRACE_MODES = ("auto", "debug", "trace", "off")


def parse_trace_mode(value: str) -> str:
    mode = value.strip().lower()
    if mode not in TRACE_MODES:
        raise ValueError(f"must be one of {', '.join(TRACE_MODES)}")
    return mode
