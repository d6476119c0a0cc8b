"""Custom: find out what the target speaks, then run that kind's probe.

A URL names its protocol by its scheme (an http(s) URL is looked at more closely). For a
bare `host:port` the protocol is sniffed on fresh connections, each exchange harmless:
wait for a server greeting (MySQL), send PostgreSQL's SSLRequest, the HTTP/2 preface
(gRPC), a Redis PING, a TLS ClientHello, then a plain HTTP request.
"""

import asyncio
import json
import re
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from urllib.parse import urlsplit

from monitoring.models import EndpointType
from monitoring.probes import phrases
from monitoring.probes.base import (
    Outcome,
    ProbeContext,
    ProbeFailed,
    ProbeTask,
    task_tls_context,
    tls_context,
)
from monitoring.probes.network import open_socket
from monitoring.validation import option_names, validate_config

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
}
_URL_FORMS: dict[str, str] = {
    EndpointType.GRPC: "grpc://{host}",
    EndpointType.POSTGRESQL: "postgresql://{host}/postgres",
    EndpointType.MYSQL: "mysql://{host}",
    EndpointType.REDIS: "redis://{host}",
}
SSL_REQUEST = b"\x00\x00\x00\x08\x04\xd2\x16\x2f"
HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
READ_WAIT = 0.3
# What a bare host:port was found to speak, per worker process: sniffing costs several
# round trips, so it runs again only when the entry is old or a check of it failed.
DETECTION_TTL = 600.0
_detected: dict[str, tuple[str, str, float]] = {}


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
    writer.close()
    return True


async def _sniff(host: str, port: int) -> tuple[str, str]:
    """The kind and the URL to probe it with, for a bare host:port."""
    netloc = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    greeting = await _exchange(host, port, b"")
    kind = _kind_of_reply(greeting)
    if kind is None and greeting == b"":
        reply = await _exchange(host, port, SSL_REQUEST)
        kind = EndpointType.POSTGRESQL if reply in (b"S", b"N") else _kind_of_reply(reply)
    for payload in (HTTP2_PREFACE, b"PING\r\n"):
        if kind is None:
            kind = _kind_of_reply(await _exchange(host, port, payload))
    if kind is None and await _speaks_tls(host, port):
        return "http", f"https://{netloc}/"
    if kind is None:
        reply = await _exchange(host, port, f"HEAD / HTTP/1.0\r\nHost: {netloc}\r\n\r\n".encode())
        kind = "http" if reply.startswith(b"HTTP/") else None
    if kind is None:
        detail = "no MySQL, PostgreSQL, gRPC, Redis, TLS or HTTP answer"
        raise ProbeFailed(phrases.UNKNOWN_PROTOCOL, detail=detail)
    if kind == "http":
        return kind, f"http://{netloc}/"
    return kind, _URL_FORMS[kind].format(host=netloc)


async def _refine_http(url: str, task: ProbeTask, context: ProbeContext) -> tuple[str, str]:
    """An HTTP URL may serve GraphQL, Elasticsearch or a WebSocket: look before probing."""
    if re.search(r"graphql", urlsplit(url).path, re.IGNORECASE):
        return EndpointType.GRAPHQL, url
    tls = task_tls_context(task)
    async with context.http.get(url, ssl=tls, allow_redirects=False) as response:
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


async def detect(task: ProbeTask, context: ProbeContext) -> tuple[str, str]:
    """The detected kind and the target to probe it with."""
    scheme = task.target.split("://", 1)[0] if "://" in task.target else ""
    if scheme in _SCHEME_KINDS:
        return _SCHEME_KINDS[scheme], task.target
    cached = _detected.get(task.target)
    if cached is not None and time.monotonic() - cached[2] < DETECTION_TTL:
        return cached[0], cached[1]
    if scheme:
        kind, url = await _refine_http(task.target, task, context)
    else:
        host, _, port = task.target.rpartition(":")
        kind, url = await _sniff(host.strip("[]"), int(port))
        if kind == "http":
            kind, url = await _refine_http(url, task, context)
    _detected[task.target] = (kind, url, time.monotonic())
    return kind, url


def make_probe(
    probes: Callable[[str], Callable[[ProbeTask, ProbeContext], Awaitable[Outcome]]],
) -> Callable[[ProbeTask, ProbeContext], Awaitable[Outcome]]:
    """The custom probe, running the detected kind's probe from the registry."""

    async def probe(task: ProbeTask, context: ProbeContext) -> Outcome:
        kind, target = await detect(task, context)
        kind = str(kind)
        known = option_names(kind)
        config = validate_config(kind, {k: v for k, v in task.config.items() if k in known})
        detected = replace(task, type=kind, target=target, config=config)
        try:
            outcome = await probes(kind)(detected, context)
        except ProbeFailed as exc:
            _detected.pop(task.target, None)
            exc.detected_type = kind
            raise
        except Exception:
            _detected.pop(task.target, None)
            raise
        return replace(outcome, detected_type=kind)

    return probe
