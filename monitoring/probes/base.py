"""The probe interface: what a probe gets, what it returns, and the shared clients."""

import asyncio
import contextvars
import errno
import socket
import ssl
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self, TypeVar

import aiohttp
from aiohttp.http_exceptions import HttpProcessingError
from django.conf import settings

from monitoring.locations import LOCATION_HEADER
from monitoring.probes import phrases
from monitoring.probes.certificates import PeerCertificate, client_context
from monitoring.probes.network import (
    NOT_ALLOWED,
    PolicyResolver,
    exception_chain,
    numeric_host_allowed,
    policy_socket_factory,
    refused_by_policy,
)

# Probes read at most this much of a response body: a hostile target cannot fill memory.
MAX_BODY_BYTES = 1_048_576
MAX_DETAIL_LENGTH = 200
MAX_ERROR_LENGTH = 500
MAX_ERROR_DETAIL_LENGTH = 500
# A server's text for the detail (a GraphQL error, a WebSocket reply) is cut here before it
# is scrubbed: a hostile target could send a megabyte. The stored detail is cut far shorter,
# after scrubbing, so a secret cut in two at this point lies beyond what is kept.
MAX_RAW_TEXT = 4096

T = TypeVar("T")


@dataclass(frozen=True)
class ProbeTask:
    """One check to run: the endpoint's decrypted target and its validated config, not
    started before `not_before` (a Unix time: its slot), from `location` (a slug, sent to
    HTTP targets in `X-Healthmon-Location`; empty: no header, a check outside a worker)."""

    type: str
    target: str
    config: dict[str, Any]
    timeout: float
    not_before: float = 0.0
    location: str = ""


def request_headers(task: ProbeTask, *given: dict[str, str] | None) -> dict[str, str]:
    """The headers an HTTP-family probe sends: `given` in order (the probe's own, then the
    config's), and the location header last. The location is the monitoring's statement of
    where the check runs from: a configured header of that name is dropped, not sent."""
    headers: dict[str, str] = {}
    for extra in given:
        headers.update(extra or {})
    if not task.location:
        return headers
    wanted = LOCATION_HEADER.lower()
    headers = {name: value for name, value in headers.items() if name.lower() != wanted}
    return {**headers, LOCATION_HEADER: task.location}


@dataclass(frozen=True)
class Outcome:
    """What a probe observed; an `error` makes it a failure."""

    status_detail: str = ""
    error: str = ""
    detected_type: str = ""
    certificate: PeerCertificate | None = None  # the server's, when a handshake completed
    loss_percent: float | None = None  # ICMP: the share of echo requests lost
    round_trip_ms: float | None = None  # ICMP: the average round trip, the response time


@dataclass(frozen=True)
class ProbeResult:
    """The result of one check, ready to store."""

    ok: bool
    response_time_ms: float | None  # None: nothing was timed (a heartbeat ping with no start)
    status_detail: str = ""
    error: str = ""
    detected_type: str = ""
    started_at: float = 0.0  # Unix time the check began
    error_detail: str = ""  # what the driver or server said, masked: `error` is a phrase
    certificate: PeerCertificate | None = None
    loss_percent: float | None = None  # ICMP: more than config.max_loss_percent is degraded
    # A round's verdict only: the locations that failed although the quorum held, with their
    # errors (`eu-west: Connection refused`). A success with failing locations is degraded.
    failing_locations: str = ""


class ProbeFailed(Exception):
    """A probe's verdict that the target is down: `error` is one of the kind's fixed
    phrases (`phrases.py`), `detail` what the driver or server said (masked later)."""

    def __init__(
        self,
        error: str,
        status_detail: str = "",
        detected_type: str = "",
        *,
        detail: str = "",
        certificate: PeerCertificate | None = None,
    ) -> None:
        super().__init__(error)
        self.error = error
        self.status_detail = status_detail
        self.detected_type = detected_type
        self.detail = detail
        self.certificate = certificate  # an expired one, say: still worth recording


def tls_context(verify: bool, ca_certificate: str = "") -> ssl.SSLContext:
    """A client TLS context; `verify=False` accepts any certificate (a user's choice),
    `ca_certificate` (PEM) is trusted besides the system's CAs."""
    return client_context(bool(verify), ca_certificate or "")


def task_tls_context(task: ProbeTask) -> ssl.SSLContext:
    """The TLS context a check's config asks for (`verify_tls`, `ca_certificate`)."""
    return tls_context(task.config.get("verify_tls", True), task.config.get("ca_certificate", ""))


@dataclass
class ProbeContext:
    """Clients shared by the probes of one batch, on one event loop.

    One aiohttp session serves every HTTP-based probe of the batch: its connector never
    keeps a connection alive, so each check opens its own, as a user's client would.
    """

    _http: aiohttp.ClientSession | None = None
    _threads: ThreadPoolExecutor | None = field(default=None)

    @property
    def http(self) -> aiohttp.ClientSession:
        """The batch's HTTP session, created on first use."""
        if self._http is None:
            connector = aiohttp.TCPConnector(
                resolver=PolicyResolver(),
                socket_factory=policy_socket_factory,
                force_close=True,
                limit=0,
                ttl_dns_cache=10,
            )
            self._http = aiohttp.ClientSession(
                connector=connector,
                trust_env=False,  # no proxy from the environment: probes go where they say
                cookie_jar=aiohttp.DummyCookieJar(),
                auto_decompress=True,
                max_line_size=16_384,
                max_field_size=16_384,
            )
        return self._http

    async def in_thread(self, function: Callable[..., T], *args: Any) -> T:
        """Run a blocking client (PyMySQL) off the event loop."""
        if self._threads is None:
            self._threads = ThreadPoolExecutor(
                max_workers=settings.PROBE_THREADS, thread_name_prefix="probe"
            )
        # In the check's context, so that a TLS handshake made in the thread is noted for it.
        run = contextvars.copy_context().run
        return await asyncio.get_running_loop().run_in_executor(self._threads, run, function, *args)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._http is not None:
            await self._http.close()
        if self._threads is not None:
            self._threads.shutdown(wait=False, cancel_futures=True)


def raw_text(exc: BaseException) -> str:
    """An exception as its type and message on one line: the raw text for `error_detail`."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def describe_error(exc: BaseException) -> tuple[str, str]:
    """The fixed phrase for a client error, and its raw text (masked later)."""
    detail = raw_text(exc)
    if refused_by_policy(exc):
        return NOT_ALLOWED, ""  # the refusal is the whole story; it names no address
    if isinstance(exc, aiohttp.InvalidURL) and "canonical IPv4" in str(exc):
        # aiohttp refuses `127.1` before resolving: the refusal names no address either way.
        allowed = numeric_host_allowed(str(exc).split(" - ", 1)[0].strip())
        if allowed is False:
            return NOT_ALLOWED, ""
        return phrases.INVALID_URL, "the URL's IPv4 address is not canonical"
    for error in exception_chain(exc):
        phrase = _known_cause(error)
        if phrase:
            return phrase, detail
    if isinstance(exc, aiohttp.InvalidURL):
        return phrases.INVALID_URL, detail
    if isinstance(exc, OSError | aiohttp.ClientConnectionError):
        return phrases.NETWORK_ERROR, detail
    return phrases.UNEXPECTED_ERROR, detail


_UNREACHABLE = frozenset({errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EHOSTDOWN})
# OpenSSL's verify codes (`X509_V_ERR_*`) that say more than "not trusted".
_EXPIRED, _HOSTNAME_MISMATCH, _IP_MISMATCH = 10, 62, 64


def _known_cause(error: BaseException) -> str:
    if isinstance(error, aiohttp.ClientConnectorCertificateError):
        error = error.certificate_error
    if isinstance(error, ssl.SSLCertVerificationError):
        return _certificate_phrase(error)
    if isinstance(error, ssl.SSLError | aiohttp.ClientSSLError):
        return phrases.TLS_FAILED
    if isinstance(error, ConnectionRefusedError) or "refused" in str(error).lower():
        return phrases.REFUSED
    if isinstance(error, socket.gaierror):
        return phrases.DNS_FAILED
    if isinstance(error, ConnectionResetError):
        return phrases.RESET
    if isinstance(error, OSError) and error.errno in _UNREACHABLE:
        return phrases.UNREACHABLE
    if isinstance(
        error,
        aiohttp.ServerDisconnectedError | asyncio.IncompleteReadError | ConnectionAbortedError,
    ):
        return phrases.CLOSED
    if isinstance(error, HttpProcessingError | aiohttp.ClientPayloadError):
        # aiohttp's message quotes what the target sent: the detail keeps it, masked
        return phrases.INVALID_RESPONSE
    return ""


def _certificate_phrase(error: ssl.SSLCertVerificationError) -> str:
    """Expired, issued for another host, or not trusted."""
    if error.verify_code == _EXPIRED:
        return phrases.TLS_EXPIRED
    if error.verify_code in (_HOSTNAME_MISMATCH, _IP_MISMATCH):
        return phrases.TLS_WRONG_HOST
    return phrases.TLS_UNTRUSTED


Probe = Callable[[ProbeTask, ProbeContext], Awaitable[Outcome]]
