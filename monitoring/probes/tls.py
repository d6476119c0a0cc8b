"""TLS: a handshake with the host by name; up when the chain, the name and the dates hold.

The certificate's expiry is recorded on every check; an expired, untrusted or misnamed one
fails the check, and is read again without verification so that its dates are recorded too.
"""

import asyncio
import contextlib
import ssl
from datetime import UTC, datetime
from urllib.parse import urlsplit

from monitoring.probes.base import (
    Outcome,
    ProbeContext,
    ProbeFailed,
    ProbeTask,
    describe_error,
    task_tls_context,
    tls_context,
)
from monitoring.probes.certificates import PeerCertificate, peer_certificate
from monitoring.probes.network import open_socket


async def _handshake(
    host: str, port: int, context: ssl.SSLContext
) -> tuple[str, PeerCertificate | None]:
    """A finished handshake's protocol version and certificate; the connection is dropped
    at once, without a TLS goodbye that a silent peer could keep waiting."""
    sock = await open_socket(host, port)
    try:
        _, writer = await asyncio.open_connection(sock=sock, ssl=context, server_hostname=host)
    except BaseException:
        sock.close()
        raise
    ssl_object = writer.get_extra_info("ssl_object")
    version, certificate = ssl_object.version() or "TLS", peer_certificate(ssl_object)
    writer.transport.abort()
    await asyncio.sleep(0)  # the loop closes the socket on its next turn: before the check ends
    return version, certificate


async def _unverified_certificate(host: str, port: int) -> PeerCertificate | None:
    """The certificate a failed verification refused, read with verification off."""
    with contextlib.suppress(OSError, ssl.SSLError):
        return (await _handshake(host, port, tls_context(verify=False)))[1]
    return None


def days_left(certificate: PeerCertificate, now: datetime) -> int:
    """Whole days until the certificate expires (negative once it has)."""
    return (certificate.expires_at - now).days


async def probe(task: ProbeTask, context: ProbeContext) -> Outcome:
    """Shake hands; the detail names the protocol version and the days left."""
    parts = urlsplit(task.target)
    host, port = parts.hostname or "", parts.port or 443
    try:
        version, certificate = await _handshake(host, port, task_tls_context(task))
    except ssl.SSLCertVerificationError as exc:
        phrase, raw = describe_error(exc)
        certificate = await _unverified_certificate(host, port)
        raise ProbeFailed(phrase, detail=raw, certificate=certificate) from exc
    if certificate is None:
        return Outcome(f"{version}, no certificate")
    days = days_left(certificate, datetime.now(UTC))
    detail = f"{version}, expires in {days} day{'' if days == 1 else 's'}"
    return Outcome(detail, certificate=certificate)
