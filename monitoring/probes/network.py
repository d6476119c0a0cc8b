"""The probe network policy: which addresses a probe may connect to.

Checked on the address actually connected to, after DNS resolution, so that a host name,
a numeric form (`127.1`, `2130706433`) or an IPv6 wrapping (`::ffff:127.0.0.1`,
`64:ff9b::7f00:1`) cannot reach an address the policy forbids. Every probe connects
through `open_socket`, `PolicyResolver` or `policy_socket_factory`.
"""

import asyncio
import ipaddress
import socket
from collections.abc import Iterator
from functools import cache
from typing import Any

from aiohttp.abc import ResolveResult
from aiohttp.resolver import ThreadedResolver
from django.conf import settings

NOT_ALLOWED = "target address not allowed"

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# Cloud metadata services that are not already private or link-local everywhere.
_METADATA = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "100.100.100.200", "fd00:ec2::254")
)
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
# Special-purpose ranges (IANA registries), refused whatever the running Python's
# `ipaddress` tables say: older patch releases miss some (192.0.0.8, 192.88.99.1).
_SPECIAL = tuple(
    ipaddress.ip_network(network)
    for network in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "192.88.99.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/3",
        "::/8",
        "100::/64",
        "2001::/23",
        "2001:db8::/32",
        "3fff::/20",
        "5f00::/16",
        "fc00::/7",
        "fe80::/10",
        "fec0::/10",
        "ff00::/8",
    )
)


class AddressNotAllowed(OSError):
    """The network policy forbids connecting to this address."""

    def __init__(self) -> None:
        super().__init__(NOT_ALLOWED)


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 form carries: mapped, NAT64, 6to4 or Teredo."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if any(address in network for network in _NAT64):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    return None


def _is_public(address: IPAddress) -> bool:
    if isinstance(address, ipaddress.IPv6Address):
        if address.scope_id:
            return False
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            return _is_public(embedded)
        if address.is_site_local or address.is_reserved:
            return False  # ::/8 holds the deprecated IPv4-compatible forms (::127.0.0.1)
    # is_global leaves out loopback, private, link-local, CGNAT, reserved, unspecified and
    # documentation ranges; multicast addresses can be "global", so they are refused apart.
    if any(address in network for network in _SPECIAL if network.version == address.version):
        return False
    return address.is_global and not address.is_multicast and address not in _METADATA


@cache
def _exceptions(networks: tuple[str, ...]) -> tuple[IPNetwork, ...]:
    return tuple(ipaddress.ip_network(network, strict=False) for network in networks)


def address_allowed(address: str) -> bool:
    """Whether the policy lets a probe connect to this IP address (a literal, not a name)."""
    ip = ipaddress.ip_address(address)
    if _is_public(ip) or settings.PROBE_ALLOW_PRIVATE_NETWORKS:
        return True
    if isinstance(ip, ipaddress.IPv6Address) and (embedded := _embedded_ipv4(ip)):
        ip = embedded
    return any(ip in network for network in _exceptions(tuple(settings.PROBE_ALLOWED_NETWORKS)))


async def resolve(host: str, port: int) -> list[tuple[int, Any]]:
    """The (family, sockaddr) pairs for host:port that the policy allows, in DNS order."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    allowed: list[tuple[int, Any]] = [
        (family, addr) for family, _, _, _, addr in infos if address_allowed(str(addr[0]))
    ]
    if not allowed:
        raise AddressNotAllowed
    return allowed


async def open_socket(host: str, port: int) -> socket.socket:
    """A connected, non-blocking TCP socket to an allowed address of host:port."""
    loop = asyncio.get_running_loop()
    error: OSError | None = None
    for family, address in await resolve(host, port):
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            await loop.sock_connect(sock, address)
        except OSError as exc:
            sock.close()
            error = exc
            continue
        except BaseException:
            sock.close()
            raise
        return sock
    assert error is not None  # resolve() returns at least one address  # noqa: S101
    raise error


def policy_socket_factory(addr_info: tuple[Any, ...]) -> socket.socket:
    """aiohttp's socket factory: the last check, on the very address about to be dialled."""
    family, type_, proto, _, address = addr_info
    if not address_allowed(address[0]):
        raise AddressNotAllowed
    sock = socket.socket(family=family, type=type_, proto=proto)
    sock.setblocking(False)
    return sock


class PolicyResolver(ThreadedResolver):
    """aiohttp's resolver, keeping only the addresses the policy allows."""

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        """Resolve, then drop forbidden addresses; none left is a policy refusal."""
        results = await super().resolve(host, port, family)
        allowed = [result for result in results if address_allowed(result["host"])]
        if not allowed:
            raise AddressNotAllowed
        return allowed


def numeric_host_allowed(host: str) -> bool | None:
    """For a legacy numeric IPv4 host (`127.1`, `2130706433`, `0177.0.0.1`): whether its
    address is allowed; None when the host is no such form."""
    try:
        packed = socket.inet_aton(host)
    except OSError:
        return None
    return address_allowed(socket.inet_ntoa(packed))


def exception_chain(exc: BaseException) -> Iterator[BaseException]:
    """The error and the errors it wraps (aiohttp's `os_error`, causes, contexts),
    outermost first."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [exc]
    while pending:
        current = pending.pop(0)
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        wrapped = getattr(current, "os_error", None)
        if isinstance(wrapped, BaseException):
            pending.append(wrapped)
        pending += [current.__cause__, current.__context__]


def refused_by_policy(exc: BaseException) -> bool:
    """Whether an error, or one it wraps, is the policy's refusal."""
    return any(
        isinstance(error, AddressNotAllowed) or NOT_ALLOWED in str(error)
        for error in exception_chain(exc)
    )
