"""ICMP: `config.count` echo requests to the target's first allowed address.

Down when every request is lost; the share lost (`loss_percent`) makes a check that got
replies degraded above `config.max_loss_percent` (`monitoring.checks`). The response time is
the average round trip, not the wall time of the whole series.

Sending ICMP needs either a raw socket (root, or CAP_NET_RAW) or the kernel's unprivileged
ICMP datagram sockets, which Linux grants only to the groups in `net.ipv4.ping_group_range`
(`1 0`, its default, grants none). `icmp_mode` tries both, raw first, each time: a worker
given the capability or the range later needs no restart.
"""

import errno
import ipaddress
import socket
from typing import Literal
from urllib.parse import urlsplit

from icmplib import async_ping
from icmplib.exceptions import ICMPLibError, SocketPermissionError

from healthmon.errors import DomainError
from monitoring.probes import phrases
from monitoring.probes.base import Outcome, ProbeContext, ProbeFailed, ProbeTask
from monitoring.probes.network import resolve

IcmpMode = Literal["raw", "datagram"]
INTERVAL_SECONDS = 0.2  # between echo requests, at most
MAX_REPLY_WAIT = 2.0
FIX = (
    "ICMP needs the worker to run as root or with CAP_NET_RAW "
    "(setcap cap_net_raw+ep on its Python, or the container's NET_RAW capability), or "
    "net.ipv4.ping_group_range to include the worker's group "
    '(sysctl -w net.ipv4.ping_group_range="0 2147483647").'
)
_DENIED = frozenset({errno.EPERM, errno.EACCES})


class IcmpUnavailable(DomainError):
    """This server's workers cannot send ICMP: an `icmp` endpoint would only ever fail."""

    status = 400
    code = "icmp_unavailable"
    title = "ICMP unavailable"
    default_detail = f"This server cannot send ICMP echo requests. {FIX}"


def _opens(family: socket.AddressFamily, kind: socket.SocketKind) -> bool:
    proto = socket.IPPROTO_ICMPV6 if family == socket.AF_INET6 else socket.IPPROTO_ICMP
    try:
        socket.socket(family, kind, proto).close()
    except OSError as exc:
        if exc.errno in _DENIED:
            return False
        raise
    return True


def icmp_mode(family: socket.AddressFamily = socket.AF_INET) -> IcmpMode | None:
    """How this process can send ICMP for a family: a raw socket, a datagram one, or not."""
    if _opens(family, socket.SOCK_RAW):
        return "raw"
    if _opens(family, socket.SOCK_DGRAM):
        return "datagram"
    return None


def require_icmp(target: str) -> None:
    """Refuse an `icmp` endpoint on a server whose processes cannot send ICMP (the web
    process stands for the workers: they run as the same user, on the same kernel)."""
    host = (urlsplit(target).hostname or "").strip("[]")
    family = socket.AF_INET
    try:
        if ipaddress.ip_address(host).version == 6:
            family = socket.AF_INET6
    except ValueError:
        pass  # a name: IPv4, as most are
    if icmp_mode(family) is None:
        raise IcmpUnavailable


def _pacing(task: ProbeTask, count: int) -> tuple[float, float]:
    """The pause between requests and the wait for each reply, so that the whole series
    fits the timeout (10 requests in 1 s: 33 ms apart, 60 ms for each reply)."""
    interval = min(INTERVAL_SECONDS, task.timeout * 0.3 / max(count - 1, 1))
    spare = task.timeout * 0.9 - interval * (count - 1)
    return interval, max(0.01, min(MAX_REPLY_WAIT, spare / count))


def _summary(sent: int, received: int, loss: float, rtts: tuple[float, float, float]) -> str:
    low, average, high = rtts
    return (
        f"{received}/{sent} replies, {loss:g}% loss, "
        f"rtt min/avg/max {low:.2f}/{average:.2f}/{high:.2f} ms"
    )


async def probe(task: ProbeTask, context: ProbeContext) -> Outcome:
    """Ping the target's first allowed address `config.count` times."""
    count = int(task.config.get("count", 3))
    host = (urlsplit(task.target).hostname or "").strip("[]")
    family, address = (await resolve(host, 0))[0]
    mode = icmp_mode(socket.AddressFamily(family))
    if mode is None:
        raise ProbeFailed(phrases.ICMP_UNAVAILABLE, detail=FIX)
    interval, wait = _pacing(task, count)
    try:
        result = await async_ping(
            str(address[0]),
            count=count,
            interval=interval,
            timeout=wait,
            privileged=mode == "raw",
        )
    except SocketPermissionError as exc:
        raise ProbeFailed(phrases.ICMP_UNAVAILABLE, detail=FIX) from exc
    except ICMPLibError as exc:
        raise ProbeFailed(phrases.NETWORK_ERROR, detail=f"{type(exc).__name__}: {exc}") from exc
    loss = round(result.packet_loss * 100, 1)
    if not result.is_alive:
        detail = f"0/{result.packets_sent} replies from {address[0]}"
        raise ProbeFailed(phrases.ALL_PINGS_LOST.format(count=count), detail, detail=detail)
    rtts = (result.min_rtt, result.avg_rtt, result.max_rtt)
    detail = _summary(result.packets_sent, result.packets_received, loss, rtts)
    return Outcome(detail, loss_percent=loss, round_trip_ms=result.avg_rtt)
