"""Custom: find out what the target speaks, then run that kind's probe.

A URL names its protocol by its scheme (an http(s) URL is looked at more closely). For a
bare `host:port` the protocol is sniffed on fresh connections, each exchange harmless:
wait for a server greeting (MySQL, or a banner: SMTP, SSH, FTP, IMAP, POP3), send
PostgreSQL's SSLRequest, the HTTP/2 preface (gRPC), a Redis PING, a TLS ClientHello, then a
plain HTTP request. An open port that answers none of them is watched as a `tcp` one.
A banner of a protocol without a kind of its own (SSH, FTP, IMAP, POP3) makes it a `tcp`
check expecting that banner's start, so a check fails when something else takes the port.
"""

import asyncio
import json
import re
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from monitoring.models import EndpointType
from monitoring.probes.base import (
    Outcome,
    ProbeContext,
    ProbeFailed,
    ProbeTask,
    request_headers,
    task_tls_context,
    tls_context,
)
from monitoring.probes.network import open_socket

_SCHEME_KINDS = {
    "grpc": EndpointType.GRPC,
    "grpcs": EndpointType.GRPC,
    "postgresql": EndpointType.POSTGRESQL,
    "postgres": EndpointType.POSTGRESQL,
    "mysql": EndpointType.MYSQL,
    "mariadb": EndpointType.MYSQL,
    "redis": EndpointType.REDIS,
    "rediss": EndpointType.REDIS,
    "ws": EndpointType.WEBSOCKET,
    "wss": EndpointType.WEBSOCKET,
    "tcp": EndpointType.TCP,
    "smtp": EndpointType.SMTP,
    "smtps": EndpointType.SMTP,
}
_URL_FORMS: dict[str, str] = {
    EndpointType.GRPC: "grpc://{host}",
    EndpointType.POSTGRESQL: "postgresql://{host}/postgres",
    EndpointType.MYSQL: "mysql://{host}",
    EndpointType.REDIS: "redis://{host}",
    EndpointType.SMTP: "smtp://{host}",
    EndpointType.TCP: "tcp://{host}",
}
# Greetings of protocols a server speaks first: (name, pattern of the first line, the kind
# that checks it, what a `tcp` check expects of it). SMTP comes before FTP: both greet 220;
# an SMTP server refusing service (554, 421) still names itself, and is down as SMTP.
_BANNERS: tuple[tuple[str, re.Pattern[bytes], str, str], ...] = (
    ("SMTP", re.compile(rb"(220|421|554)[ -].*\bE?SMTP\b", re.I), EndpointType.SMTP, ""),
    ("SSH", re.compile(rb"SSH-\d"), EndpointType.TCP, "SSH-"),
    ("FTP", re.compile(rb"220[ -].*FTP", re.I), EndpointType.TCP, "220"),
    ("IMAP", re.compile(rb"\* (OK|PREAUTH)\b"), EndpointType.TCP, "* "),
    ("POP3", re.compile(rb"\+OK\b"), EndpointType.TCP, "+OK"),
)
SSL_REQUEST = b"\x00\x00\x00\x08\x04\xd2\x16\x2f"
HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
READ_WAIT = 0.3
# What a bare host:port was found to speak, per worker process: sniffing costs several
# round trips, so it runs again only when the entry is old or a check of it failed.
DETECTION_TTL = 600.0
_detected: dict[str, "Detection"] = {}


@dataclass(frozen=True)
class Detection:
    """What a target was found to speak: the kind and target to probe it with, options
    the detection sets (a banner to expect), and what was seen, for the status detail."""

    kind: str
    target: str
    config: dict[str, Any] = field(default_factory=dict)
    seen: str = ""
    at: float = field(default_factory=time.monotonic)


async def _exchange(host: str, port: int, payload: bytes, wait: float = READ_WAIT) -> bytes:
    """Send `payload` (nothing if empty) on a fresh connection; what came back, if anything."""
    sock = await open_socket(host, port)
    reader, writer = await asyncio.open_connection(sock=sock)
    try:
        if payload:
            writer.write(payload)
            await writer.drain()
        async with asyncio.timeout(wait):
            return await reader.read(512)
    except (TimeoutError, ConnectionError):
        return b""
    finally:
        writer.close()


def _kind_of_reply(reply: bytes) -> str | None:
    if len(reply) > 4 and reply[4] in (10, 0xFF) and reply[0] + (reply[1] << 8) == len(reply) - 4:
        return EndpointType.MYSQL  # a handshake (v10) or error packet, length-prefixed
    if len(reply) >= 9 and reply[3] in (4, 7) and reply[:3] != b"HTT":
        return EndpointType.GRPC  # an HTTP/2 SETTINGS or GOAWAY frame
    if reply.startswith(b"HTTP/"):
        return "http"
    if reply[:1] in (b"+", b"-") and reply.endswith(b"\r\n"):
        return EndpointType.REDIS
    return None


async def _speaks_tls(host: str, port: int) -> bool:
    sock = await open_socket(host, port)
    try:
        async with asyncio.timeout(READ_WAIT * 2):
            _, writer = await asyncio.open_connection(
                sock=sock, ssl=tls_context(verify=False), server_hostname=host
            )
    except (TimeoutError, OSError, ssl.SSLError):
        sock.close()
        return False
    # Abort, not close: a TLS close waits for the server's close_notify, and a socket still
    # waiting when the batch's event loop ends is never closed.
    writer.transport.abort()
    return True


def _first_line(reply: bytes) -> str:
    return reply.decode(errors="replace").strip().split("\n", 1)[0].strip()[:100]


def _banner(greeting: bytes, netloc: str) -> Detection | None:
    """A greeting naming its protocol: SMTP is probed as SMTP, the others as `tcp`."""
    for name, pattern, kind, expect in _BANNERS:
        if pattern.match(greeting):
            config = {"expect": expect} if expect else {}
            seen = f"{name} banner: {_first_line(greeting)}"
            return Detection(kind, _URL_FORMS[kind].format(host=netloc), config, seen)
    return None


async def _sniff(host: str, port: int) -> Detection:
    """The kind and the URL to probe it with, for a bare host:port."""
    netloc = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    greeting = await _exchange(host, port, b"")
    banner = _banner(greeting, netloc)
    if banner is not None:
        return banner
    kind = _kind_of_reply(greeting)
    if kind is None and greeting == b"":
        reply = await _exchange(host, port, SSL_REQUEST)
        kind = EndpointType.POSTGRESQL if reply in (b"S", b"N") else _kind_of_reply(reply)
    for payload in (HTTP2_PREFACE, b"PING\r\n"):
        if kind is None:
            kind = _kind_of_reply(await _exchange(host, port, payload))
    if kind is None and await _speaks_tls(host, port):
        return Detection("http", f"https://{netloc}/")
    if kind is None:
        reply = await _exchange(host, port, f"HEAD / HTTP/1.0\r\nHost: {netloc}\r\n\r\n".encode())
        kind = "http" if reply.startswith(b"HTTP/") else None
    if kind is None:
        # An open port speaking none of these: connecting is what can be checked.
        said = f"; it said: {_first_line(greeting)}" if greeting else ""
        return Detection(EndpointType.TCP, f"tcp://{netloc}", seen=f"protocol not recognized{said}")
    if kind == "http":
        return Detection(kind, f"http://{netloc}/")
    return Detection(kind, _URL_FORMS[kind].format(host=netloc))


async def _refine_http(url: str, task: ProbeTask, context: ProbeContext) -> tuple[str, str]:
    """An HTTP URL may serve GraphQL, Elasticsearch or a WebSocket: look before probing."""
    if re.search(r"graphql", urlsplit(url).path, re.IGNORECASE):
        return EndpointType.GRAPHQL, url
    tls = task_tls_context(task)
    headers = request_headers(task)  # the look is a request from the location too
    async with context.http.get(url, headers=headers, ssl=tls, allow_redirects=False) as response:
        if response.status == 426 or response.headers.get("Upgrade", "").lower() == "websocket":
            return EndpointType.WEBSOCKET, re.sub(r"^http", "ws", url)
        if response.headers.get("X-Elastic-Product") == "Elasticsearch":
            return EndpointType.ELASTICSEARCH, url
        if response.content_type == "application/json":
            try:
                document = json.loads(await response.content.read(65_536))
            except ValueError:
                document = None
            if isinstance(document, dict) and document.get("tagline") == "You Know, for Search":
                return EndpointType.ELASTICSEARCH, url
    return EndpointType.HTTP, url


async def detect(task: ProbeTask, context: ProbeContext) -> Detection:
    """The detected kind and the target to probe it with."""
    scheme = task.target.split("://", 1)[0] if "://" in task.target else ""
    if scheme in _SCHEME_KINDS:
        return Detection(_SCHEME_KINDS[scheme], task.target)
    cached = _detected.get(task.target)
    if cached is not None and time.monotonic() - cached.at < DETECTION_TTL:
        return cached
    if scheme:
        found = Detection(*await _refine_http(task.target, task, context))
    else:
        host, _, port = task.target.rpartition(":")
        found = await _sniff(host.strip("[]"), int(port))
        if found.kind == "http":
            found = Detection(*await _refine_http(found.target, task, context))
    _detected[task.target] = found
    return found


def _with_seen(found: Detection, detail: str) -> str:
    """The probe's status detail, after what the detection saw (a banner, an unknown port)."""
    return f"{found.seen} ({detail})" if found.seen and detail else found.seen or detail


def make_probe(
    probes: Callable[[str], Callable[[ProbeTask, ProbeContext], Awaitable[Outcome]]],
) -> Callable[[ProbeTask, ProbeContext], Awaitable[Outcome]]:
    """The custom probe, running the detected kind's probe from the registry."""

    async def probe(task: ProbeTask, context: ProbeContext) -> Outcome:
        # Imported here: validation sits above the probes (it reads their kinds and the
        # heartbeat rules, which read the probes' phrases), so the probes must not need it
        # to be imported.
        from monitoring.validation import option_names, validate_config

        found = await detect(task, context)
        kind = str(found.kind)
        known = option_names(kind)
        given = {k: v for k, v in task.config.items() if k in known}
        config = validate_config(kind, {**given, **found.config})
        detected = replace(task, type=kind, target=found.target, config=config)
        try:
            outcome = await probes(kind)(detected, context)
        except ProbeFailed as exc:
            _detected.pop(task.target, None)
            exc.detected_type = kind
            exc.status_detail = _with_seen(found, exc.status_detail)
            raise
        except Exception:
            _detected.pop(task.target, None)
            raise
        return replace(
            outcome, detected_type=kind, status_detail=_with_seen(found, outcome.status_detail)
        )

    return probe
