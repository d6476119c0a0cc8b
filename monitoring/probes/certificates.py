"""What a probe saw of the certificate a server presented in a TLS handshake.

Read from the DER bytes the handshake delivered, so it works with verification off too (an
untrusted or expired certificate still has an expiry to report). Probes that complete a
handshake put it on their `Outcome` (or `ProbeFailed`); the check pipeline stores it.
"""

import ssl
from dataclasses import dataclass
from datetime import datetime

from cryptography import x509


@dataclass(frozen=True)
class PeerCertificate:
    """The leaf certificate's validity and names (RFC 4514 strings)."""

    not_before: datetime
    expires_at: datetime
    issuer: str
    subject: str


def peer_certificate(ssl_object: ssl.SSLObject | ssl.SSLSocket | None) -> PeerCertificate | None:
    """The certificate of a finished handshake; None without one (or if it cannot be read)."""
    if ssl_object is None:
        return None
    der = ssl_object.getpeercert(binary_form=True)
    if not der:
        return None
    try:
        certificate = x509.load_der_x509_certificate(der)
    except ValueError:
        return None
    return PeerCertificate(
        not_before=certificate.not_valid_before_utc,
        expires_at=certificate.not_valid_after_utc,
        issuer=certificate.issuer.rfc4514_string(),
        subject=certificate.subject.rfc4514_string(),
    )
