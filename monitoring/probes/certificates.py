"""What a probe saw of the certificate a server presented in a TLS handshake.

Read from the DER bytes the handshake delivered, so it works with verification off too (an
untrusted or expired certificate still has an expiry to report). Probes that complete a
handshake put it on their `Outcome` (or `ProbeFailed`); the check pipeline stores it.

Clients that shake hands through asyncio (aiohttp, websockets, the Redis and TLS probes)
use `client_context`: its contexts note every TLS connection they make for the running
check (`handshakes`), so the runner finds the certificate of a check whose client hides its
connection (aiohttp releases it as soon as a short body is read).
"""

import contextlib
import contextvars
import functools
import hashlib
import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cryptography import x509


@dataclass(frozen=True)
class PeerCertificate:
    """The leaf certificate's validity and names (RFC 4514 strings)."""

    not_before: datetime
    expires_at: datetime
    issuer: str
    subject: str
    fingerprint: str = ""  # SHA-256 of the DER bytes, hex: tells a renewed certificate apart


def certificate_of_der(der: bytes | None) -> PeerCertificate | None:
    """The certificate in DER bytes; None when there are none or they cannot be read."""
    if not der:
        return None
    try:
        certificate = x509.load_der_x509_certificate(der)
    except ValueError:
        return None
    return PeerCertificate(
        not_before=certificate.not_valid_before_utc,
        expires_at=certificate.not_valid_after_utc,
        issuer=certificate.issuer.rfc4514_string()[:500],
        subject=certificate.subject.rfc4514_string()[:500],
        fingerprint=hashlib.sha256(der).hexdigest(),
    )


def peer_certificate(ssl_object: ssl.SSLObject | ssl.SSLSocket | None) -> PeerCertificate | None:
    """The certificate of a finished handshake; None without one (or if it cannot be read)."""
    if ssl_object is None:
        return None
    try:
        der = ssl_object.getpeercert(binary_form=True)
    except (ValueError, ssl.SSLError):  # the handshake never finished
        return None
    return certificate_of_der(der)


# The TLS connections the running check opened (each probe runs in its own task).
_Noted = list[ssl.SSLObject | PeerCertificate]
_handshakes: contextvars.ContextVar[_Noted | None] = contextvars.ContextVar(
    "handshakes", default=None
)


class _NotingContext(ssl.SSLContext):
    """A client context that notes each TLS connection it makes for the running check."""

    def wrap_bio(self, *args: Any, **kwargs: Any) -> ssl.SSLObject:
        """Wrap as usual, noting the connection: its certificate is read once it is done."""
        ssl_object = super().wrap_bio(*args, **kwargs)
        noted = _handshakes.get()
        if noted is not None:
            noted.append(ssl_object)
        return ssl_object

    def wrap_socket(self, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        """Wrap as usual (a blocking client, PyMySQL: the handshake happens here), noting
        the certificate at once: the client closes the socket before the check ends."""
        sock = super().wrap_socket(*args, **kwargs)
        noted = _handshakes.get()
        found = peer_certificate(sock) if noted is not None else None
        if noted is not None and found is not None:
            noted.append(found)
        return sock


@functools.lru_cache(maxsize=256)
def client_context(verify: bool = True, ca_certificate: str = "") -> ssl.SSLContext:
    """A client TLS context, shared by the checks that ask for the same one (building one
    reads the system's CAs). `verify=False` accepts any certificate (a user's choice);
    `ca_certificate` (PEM) is trusted besides the system's CAs."""
    context = _NotingContext(ssl.PROTOCOL_TLS_CLIENT)
    if not verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    if ca_certificate:
        context.load_verify_locations(cadata=ca_certificate)
    return context


@contextlib.contextmanager
def handshakes() -> Iterator[_Noted]:
    """Note the TLS connections made through `client_context` inside the block (and in
    the threads it hands work to with its context: `ProbeContext.in_thread`)."""
    noted: _Noted = []
    token = _handshakes.set(noted)
    try:
        yield noted
    finally:
        _handshakes.reset(token)


def last_certificate(noted: _Noted) -> PeerCertificate | None:
    """The certificate of the last noted connection whose handshake finished."""
    for entry in reversed(noted):
        found = entry if isinstance(entry, PeerCertificate) else peer_certificate(entry)
        if found is not None:
            return found
    return None
