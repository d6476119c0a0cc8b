"""The certificates checks see: the latest one recorded on its endpoint, and the expiry
thresholds it crosses (announced once each per certificate, by the alerts stage).

A stage of the check pipeline (`pipeline.checks`), run in its transaction on the endpoints
the store stage locked: one UPDATE per endpoint whose certificate or warning changed, sent
as one executemany; nothing at all when no certificate moved.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from uuid import UUID

from healthmon.db import update_each
from monitoring.checks import CheckOutcome
from monitoring.models import Endpoint
from monitoring.probes.certificates import PeerCertificate
from monitoring.validation.certificates import DEFAULT_EXPIRY_DAYS, threshold_span

CERTIFICATE_FIELDS = [
    "certificate_expires_at",
    "certificate_not_before",
    "certificate_issuer",
    "certificate_subject",
    "certificate_fingerprint",
    "certificate_warned_within",
]


@dataclass(frozen=True)
class CertificateWarning:
    """A certificate crossed an expiry threshold: `threshold` as configured (days, or a
    share of the lifetime such as "20%")."""

    endpoint_id: UUID
    certificate: PeerCertificate
    threshold: int | str
    checked_at: datetime

    @property
    def days_left(self) -> int:
        """Whole days left when the check saw it."""
        return (self.certificate.expires_at - self.checked_at).days


def certificates_advance(
    *, endpoints: dict[UUID, Endpoint], outcomes: Sequence[CheckOutcome]
) -> list[CertificateWarning]:
    """Record each endpoint's newest certificate; the thresholds newly crossed.

    Runs before `incidents_advance`, so a result older than the endpoint's last one (a late
    batch) is told apart by `last_checked_at` and records nothing.
    """
    newest: dict[UUID, CheckOutcome] = {}
    for outcome in outcomes:
        endpoint = endpoints.get(outcome.endpoint_id)
        if outcome.result.certificate is None or endpoint is None or not endpoint.enabled:
            continue
        if endpoint.last_checked_at is not None and outcome.checked_at < endpoint.last_checked_at:
            continue
        seen = newest.get(outcome.endpoint_id)
        if seen is None or outcome.checked_at > seen.checked_at:
            newest[outcome.endpoint_id] = outcome
    changed, warnings = [], []
    for endpoint_id, outcome in newest.items():
        endpoint, certificate = endpoints[endpoint_id], outcome.result.certificate
        assert certificate is not None  # noqa: S101 - kept above
        moved = _record(endpoint, certificate)
        threshold = _crossed(endpoint, certificate, outcome.checked_at)
        if threshold is not None:
            warnings.append(
                CertificateWarning(endpoint_id, certificate, threshold, outcome.checked_at)
            )
        if moved or threshold is not None:
            changed.append(endpoint)
    update_each(changed, CERTIFICATE_FIELDS)
    return warnings


def _record(endpoint: Endpoint, certificate: PeerCertificate) -> bool:
    """Put the certificate on the endpoint; False when it is the one already there. A new
    certificate has announced nothing yet."""
    if (
        endpoint.certificate_fingerprint == certificate.fingerprint
        and endpoint.certificate_expires_at == certificate.expires_at
    ):
        return False
    endpoint.certificate_expires_at = certificate.expires_at
    endpoint.certificate_not_before = certificate.not_before
    endpoint.certificate_issuer = certificate.issuer
    endpoint.certificate_subject = certificate.subject
    endpoint.certificate_fingerprint = certificate.fingerprint
    endpoint.certificate_warned_within = None
    return True


def _crossed(endpoint: Endpoint, certificate: PeerCertificate, now: datetime) -> int | str | None:
    """The tightest threshold the certificate is within and has not announced yet, marked
    as announced; None when there is none. An expired certificate announces nothing: it
    fails its checks instead."""
    left = certificate.expires_at - now
    if left <= timedelta(0):
        return None
    lifetime = certificate.expires_at - certificate.not_before
    thresholds = endpoint.config_masked.get("certificate_expiry_days", DEFAULT_EXPIRY_DAYS)
    crossed = [
        (span, threshold)
        for threshold in thresholds
        if left <= (span := threshold_span(threshold, lifetime))
    ]
    if not crossed:
        return None
    span, threshold = min(crossed, key=lambda pair: pair[0])
    if (
        endpoint.certificate_warned_within is not None
        and span >= endpoint.certificate_warned_within
    ):
        return None
    endpoint.certificate_warned_within = span
    return threshold


@dataclass(frozen=True)
class CertificateStanding:
    """How an endpoint's certificate stands, for its page: `tone` is `ok`, `warn` (within
    the widest expiry threshold) or `expired`."""

    expires_at: datetime
    issuer: str
    days_left: int
    tone: str


def certificate_standing(endpoint: Endpoint, now: datetime) -> CertificateStanding | None:
    """The endpoint's latest certificate and how near its expiry is; None before one."""
    expires_at, not_before = endpoint.certificate_expires_at, endpoint.certificate_not_before
    if expires_at is None or not_before is None:
        return None
    left = expires_at - now
    thresholds = endpoint.config_masked.get("certificate_expiry_days", DEFAULT_EXPIRY_DAYS)
    widest = max((threshold_span(t, expires_at - not_before) for t in thresholds), default=None)
    tone = "ok"
    if left <= timedelta(0):
        tone = "expired"
    elif widest is not None and left <= widest:
        tone = "warn"
    return CertificateStanding(expires_at, endpoint.certificate_issuer, left.days, tone)
