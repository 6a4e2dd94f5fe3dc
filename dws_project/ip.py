"""One reading of an IP address, used by every comparison dws makes with one.

A dual-stack listener (`DWS_WEB_HOST=::`) sees an IPv4 client as `::ffff:10.1.2.3`. If one check (the
trusted proxies) compares that spelling while another (the admin allow-list) compares `10.1.2.3`, the
same peer is "untrusted" for X-Forwarded-For and "allowed" for the admin at once. So every check goes
through `normalize_ip`: an IPv4-mapped IPv6 address is the IPv4 address, and networks configured in
either spelling are read the same way (`normalize_network`). Rate limiting groups IPv6 by /64
(`bucket_id`): a host can pick any address of its /64.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")
IPV6_GROUP_PREFIX = 64


def normalize_ip(value: str | IPAddress) -> IPAddress | None:
    """The address, an IPv4-mapped IPv6 address as its IPv4 address; None when `value` is no address."""
    if isinstance(value, str):
        try:
            value = ipaddress.ip_address(value.strip().strip("[]"))
        except ValueError:
            return None
    if isinstance(value, ipaddress.IPv6Address) and value.ipv4_mapped is not None:
        return value.ipv4_mapped
    return value


def normalize_network(network: IPNetwork) -> IPNetwork:
    """A network inside ::ffff:0:0/96 as the IPv4 network it maps (`::ffff:10.0.0.0/104` is 10.0.0.0/8)."""
    if isinstance(network, ipaddress.IPv6Network) and network.prefixlen >= 96 and network.subnet_of(_MAPPED):
        first = network.network_address.ipv4_mapped
        assert first is not None
        return ipaddress.IPv4Network((first, network.prefixlen - 96))
    return network


def in_networks(value: str | IPAddress | None, networks: Iterable[IPNetwork]) -> bool:
    """Whether the address (normalized) lies in any of `networks` (normalized)."""
    ip = normalize_ip(value) if value is not None else None
    if ip is None:
        return False
    return any(ip in normalize_network(network) for network in networks)


def bucket_id(value: str) -> str:
    """Whose rate-limit bucket an address draws on: IPv4 as is, IPv6 by its /64 (one subscriber's
    network: limiting by exact address would give such a host 2^64 buckets)."""
    ip = normalize_ip(value)
    if ip is None:
        return value
    if isinstance(ip, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((ip, IPV6_GROUP_PREFIX), strict=False))
    return str(ip)
