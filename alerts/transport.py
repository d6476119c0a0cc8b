"""Outbound requests of notifications: `requests`, through the probes' network policy.

Every connection is made to an address the policy allows, checked on the resolved address
(not the name) just before dialling, so a name that resolves to a private address, a
numeric form or DNS rebinding cannot reach one. Redirects are never followed: a webhook
that answers 3xx has not taken the event (GitHub and Stripe webhooks behave the same).
Proxies from the environment are ignored, so the policy sees the real destination.
"""

import contextlib
import http.cookiejar
import ipaddress
import os
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import requests
from django.conf import settings
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import NewConnectionError
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


class PolicyAdapter(HTTPAdapter):
    """requests' adapter whose pools connect through the network policy."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        """Swap in the policy's connection pools for both schemes."""
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {
            "http": _PolicyHTTPPool,
            "https": _PolicyHTTPSPool,
        }


@dataclass(frozen=True)
class Sent:
    """What one attempt observed."""

    ok: bool
    status_code: int | None
    error: str
    duration_ms: float


def _session() -> requests.Session:
    session = requests.Session()
    session.trust_env = False  # no proxies from the environment: the policy sees the peer
    adapter = PolicyAdapter(max_retries=0)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


# A reply this short (by its Content-Length) is read, so that its connection is kept for the
# next send to that host; a longer or unsized one is not read, and its connection dropped.
KEEP_ALIVE_REPLY_BYTES = 16384
_pooled = threading.local()


def pooled_session() -> requests.Session:
    """This thread's session, kept between sends so that a worker reuses its connections
    to a receiver (a new one in a forked child: connections are not shared across a fork).
    Every connection it opens is still dialled through the network policy."""
    # A change of the policy's settings (tests override them) drops the kept connections.
    owner = (os.getpid(), settings.PROBE_ALLOW_PRIVATE_NETWORKS, *settings.PROBE_ALLOWED_NETWORKS)
    if getattr(_pooled, "owner", None) != owner:
        if getattr(_pooled, "session", None) is not None:
            _pooled.session.close()
        _pooled.session, _pooled.owner = _session(), owner
        # Kept for good: a receiver's cookies would pile up in it (they are never sent).
        _pooled.session.cookies.set_policy(http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))
    session: requests.Session = _pooled.session
    return session


def _release(response: requests.Response) -> None:
    """Done with a reply (the status says it all): a short body is read so the connection
    goes back to the pool, anything else closes it."""
    length = response.headers.get("Content-Length", "")
    if length.isdigit() and int(length) <= KEEP_ALIVE_REPLY_BYTES:
        with contextlib.suppress(requests.RequestException):
            response.content  # noqa: B018 (read whole: the connection is clean for reuse)
    response.close()


def _describe(exc: requests.RequestException) -> str:
    if refused_by_policy(exc):
        return f"{NOT_ALLOWED} (network policy)"
    text = str(exc)
    if isinstance(exc, requests.Timeout):
        return "timed out"
    if isinstance(exc, requests.ConnectionError):
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
        # Prepared here and sent as is: the session adds nothing (no cookies, auth or
        # environment), and merging its settings cost a third of a send.
        request = requests.PreparedRequest()
        request.prepare(
            method="POST",
            url=url,
            headers={"Content-Type": "application/json", "User-Agent": USER_AGENT, **headers},
            data=body,
        )
        response = pooled_session().send(
            request, timeout=timeout, allow_redirects=False, stream=True
        )
        _release(response)
    except requests.RequestException as exc:
        return Sent(False, None, _describe(exc)[:MAX_ERROR_LENGTH], _ms(started))
    code = response.status_code
    if 200 <= code < 300:
        return Sent(True, code, "", _ms(started))
    error = f"HTTP {code}"
    if 300 <= code < 400:
        error += " (a redirect: not followed)"
    return Sent(False, code, error, _ms(started))


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
