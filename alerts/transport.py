"""Outbound requests of notifications: urllib3, through the probes' network policy.

Every connection is made to an address the policy allows, checked on the resolved address
(not the name) just before dialling, so a name that resolves to a private address, a
numeric form or DNS rebinding cannot reach one. Redirects are never followed: a webhook
that answers 3xx has not taken the event (GitHub and Stripe webhooks behave the same).
Proxies from the environment are ignored (urllib3 reads none), so the policy sees the real
destination. Certificates are checked against certifi's bundle, as `requests` checks them.
"""

import contextlib
import ipaddress
import os
import socket
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

import certifi
from django.conf import settings
from urllib3 import BaseHTTPResponse, PoolManager
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
    SSLError,
)
from urllib3.util import connection

from monitoring.probes.network import (
    NOT_ALLOWED,
    address_allowed,
    numeric_host_allowed,
    refused_by_policy,
)
from monitoring.targets import TargetError, validate_target

MAX_ERROR_LENGTH = 500
USER_AGENT = "healthmon-notifications/1"


PRIVATE_REFUSED = (
    "This URL points to a private, loopback or otherwise reserved address, which the "
    "network policy does not let notifications reach."
)


def checked_url(url: str) -> str:
    """A channel's URL as stored: strict http(s) syntax (as probe targets are checked), and
    a host that is no address the policy forbids. Raises TargetError."""
    url = validate_target("http", url)
    if host_refused(urlsplit(url).hostname or ""):
        raise TargetError(PRIVATE_REFUSED)
    return url


def host_refused(host: str) -> bool:
    """Whether the network policy forbids a host written as an address (any numeric form)
    or `localhost` (loopback by definition, RFC 6761). Names are not resolved: that would
    tell a caller which internal names exist; every connection is checked when sending."""
    host = host.rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        host = "127.0.0.1"
    try:
        return not address_allowed(str(ipaddress.ip_address(host)))
    except ValueError:
        return numeric_host_allowed(host) is False


class _PolicyConnectionMixin:
    """Dial only addresses the network policy allows, in DNS order."""

    def _new_conn(self) -> socket.socket:
        host, port = self._dns_host, self.port  # type: ignore[attr-defined]
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror as exc:
            raise NewConnectionError(self, f"cannot resolve {host}: {exc}") from exc  # type: ignore[arg-type]
        allowed = [info[4] for info in infos if address_allowed(str(info[4][0]))]
        if not allowed:
            raise NewConnectionError(self, NOT_ALLOWED)  # type: ignore[arg-type]
        error: OSError | None = None
        for address in allowed:
            try:
                return connection.create_connection(
                    (str(address[0]), int(address[1])),
                    self.timeout,  # type: ignore[attr-defined]
                    source_address=self.source_address,  # type: ignore[attr-defined]
                    socket_options=self.socket_options,  # type: ignore[attr-defined]
                )
            except OSError as exc:
                error = exc
        raise NewConnectionError(self, f"cannot connect: {error}")  # type: ignore[arg-type]


class _PolicyHTTPConnection(_PolicyConnectionMixin, HTTPConnection):
    pass


class _PolicyHTTPSConnection(_PolicyConnectionMixin, HTTPSConnection):
    pass


class _PolicyHTTPPool(HTTPConnectionPool):
    ConnectionCls = _PolicyHTTPConnection


class _PolicyHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _PolicyHTTPSConnection


@dataclass(frozen=True)
class Sent:
    """What one attempt observed."""

    ok: bool
    status_code: int | None
    error: str
    duration_ms: float


def _manager() -> PoolManager:
    """A pool manager whose pools dial through the policy: never retries, never redirects."""
    manager = PoolManager(retries=False, cert_reqs="CERT_REQUIRED", ca_certs=certifi.where())
    manager.pool_classes_by_scheme = {"http": _PolicyHTTPPool, "https": _PolicyHTTPSPool}
    return manager


# A reply this short (by its Content-Length) is read, so that its connection is kept for the
# next send to that host; a longer or unsized one is not read, and its connection dropped.
KEEP_ALIVE_REPLY_BYTES = 16384
_pooled = threading.local()


def pooled_manager() -> PoolManager:
    """This thread's urllib3 pool manager, kept between sends so that a worker reuses its
    connections to a receiver (a new one in a forked child: connections are not shared
    across a fork). Every connection it opens is still dialled through the network policy.

    urllib3 itself, not `requests` over it: a session's preparing, hooks and adapters were
    half the CPU of a send (bench/README.md, incident_storm.py), and the transport needs
    none of them (no cookies, auth, proxies, redirects or retries)."""
    # A change of the policy's settings (tests override them) drops the kept connections.
    owner = (os.getpid(), settings.PROBE_ALLOW_PRIVATE_NETWORKS, *settings.PROBE_ALLOWED_NETWORKS)
    if getattr(_pooled, "owner", None) != owner:
        if getattr(_pooled, "manager", None) is not None:
            _pooled.manager.clear()
        _pooled.manager, _pooled.owner = _manager(), owner
    manager: PoolManager = _pooled.manager
    return manager


def _release(response: BaseHTTPResponse) -> None:
    """Done with a reply (the status says it all): a short body is read so the connection
    goes back to the pool, anything else closes it."""
    length = response.headers.get("Content-Length", "")
    if length.isdigit() and int(length) <= KEEP_ALIVE_REPLY_BYTES:
        with contextlib.suppress(HTTPError, OSError):
            response.read()  # whole: the connection is clean for reuse
            response.release_conn()
            return
    response.close()  # the connection with it: never handed out again half-read
    response.release_conn()


def _describe(exc: Exception) -> str:
    if refused_by_policy(exc):
        return f"{NOT_ALLOWED} (network policy)"
    text = str(exc)
    # urllib3 counts a connection that failed as a connect timeout (NewConnectionError).
    timed_out = isinstance(exc, ConnectTimeoutError | ReadTimeoutError)
    if timed_out and not isinstance(exc, NewConnectionError):
        return "timed out"
    if isinstance(exc, NewConnectionError | ProtocolError | SSLError | OSError):
        for phrase, said in (("cannot resolve", "cannot resolve the host"), ("refused", "refused")):
            if phrase in text:
                return f"connection failed: {said}"
        return "connection failed"
    return type(exc).__name__


def post_json(url: str, body: bytes, headers: dict[str, str], timeout: float) -> Sent:
    """POST a JSON body; a 2xx answer is success, anything else (3xx too) a failure.

    Errors are described without the URL: it may hold a credential (Slack's does).
    """
    started = time.perf_counter()
    try:
        response = pooled_manager().urlopen(
            "POST",
            url,
            body=body,
            headers={"Content-Type": "application/json", "User-Agent": USER_AGENT, **headers},
            timeout=timeout,
            redirect=False,
            preload_content=False,
        )
        _release(response)
    except (HTTPError, OSError) as exc:
        return Sent(False, None, _describe(exc)[:MAX_ERROR_LENGTH], _ms(started))
    code = response.status
    if 200 <= code < 300:
        return Sent(True, code, "", _ms(started))
    error = f"HTTP {code}"
    if 300 <= code < 400:
        error += " (a redirect: not followed)"
    return Sent(False, code, error, _ms(started))


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
