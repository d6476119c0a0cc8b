"""The rows the analytics reports answer, as the API sends them and the pages show them.

TypedDicts, not dataclasses: a row is the JSON object itself (its keys in the order built,
nested rows as lists), so the API renders it, the CSV export flattens it and the cache keeps
it with no conversion. `analytics.api.serializers` describes the same shapes for the schema.
"""

from datetime import datetime
from typing import NotRequired, TypedDict
from uuid import UUID


class Identity(TypedDict):
    """What a row is about: an endpoint (endpoint, name, project) or a project (project,
    name)."""

    endpoint: NotRequired[str]
    name: str
    project: str


class LatencyFigures(TypedDict):
    """Response time over successful checks and check-count rates of a set of checks."""

    checks: int
    failures: int
    success_rate: float | None
    error_rate: float | None
    avg_ms: float | None
    min_ms: float | None
    max_ms: float | None
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None


class Uptimes(TypedDict):
    """Time-weighted uptime % over the 24 h, 7 d and 30 d to a moment, and the checks in
    each (an uptime is None when its span holds no check)."""

    uptime_24h: float | None
    uptime_7d: float | None
    uptime_30d: float | None
    checks_24h: int
    checks_7d: int
    checks_30d: int


class SlaTarget(TypedDict, total=False):
    """An endpoint's own SLA target, in rows about one endpoint."""

    sla_target: float


class EndpointFacts(TypedDict, total=False):
    """An endpoint's status and own SLA target, in rows about one endpoint."""

    status: str
    sla_target: float


class SummaryRow(Identity, EndpointFacts, LatencyFigures, Uptimes):
    """Latency and rates over a window and uptime to its end."""


class UptimeRow(Identity, Uptimes):
    """Uptime beside the check-count success rate over the same periods."""

    success_rate_24h: float | None
    success_rate_7d: float | None
    success_rate_30d: float | None


class SeriesPoint(TypedDict):
    """One bucket of a response-time series."""

    t: datetime
    avg_ms: float | None
    min_ms: float | None
    max_ms: float | None
    p95_ms: float | None
    count: int
    failures: int


class SeriesRow(Identity):
    """A response-time series, one point per bucket."""

    points: list[SeriesPoint]


class AvailabilityBucket(TypedDict):
    """Uptime and downtime of one bucket."""

    t: datetime
    uptime: float | None
    downtime_s: float


class IncidentRow(TypedDict):
    """An incident overlapping a window."""

    id: str
    endpoint: UUID
    started_at: datetime
    resolved_at: datetime | None
    duration_seconds: float | None
    cause: str


class MaintenanceRow(TypedDict):
    """A stretch of maintenance inside a window, clipped to it."""

    endpoint: UUID
    starts_at: datetime
    ends_at: datetime


class AvailabilityRow(Identity):
    """Uptime per bucket, with the incidents and the maintenance inside the window."""

    checks: int
    uptime: float | None
    downtime_s: float
    buckets: list[AvailabilityBucket]
    incidents: list[IncidentRow]
    maintenance: list[MaintenanceRow]


class ErrorPoint(TypedDict):
    """Checks, failures and error rate of one bucket."""

    t: datetime
    checks: int
    failures: int
    error_rate: float | None


class Cause(TypedDict):
    """An error text and how often it was seen."""

    error: str
    count: int


class ErrorsRow(Identity):
    """Failures and error rate against the window before, per bucket, and top causes."""

    checks: int
    failures: int
    error_rate: float | None
    previous_error_rate: float | None
    error_rate_change: float | None
    trend: list[ErrorPoint]
    top_errors: list[Cause]


class SlaTier(TypedDict):
    """One SLA tier's budget and standing for a watched span (None without data)."""

    target: float
    tier: str
    uptime: float | None
    allowed_downtime_month_s: float
    allowed_downtime_year_s: float
    allowed_downtime_s: float | None
    downtime_s: float | None
    budget_remaining_s: float | None
    compliant: bool | None


class SlaFigures(TypedDict):
    """Uptime over a window, the checks, time watched and down, and each SLA tier's
    standing."""

    checks: int
    uptime: float | None
    watched_s: float
    downtime_s: float
    tiers: list[SlaTier]


class SlaRow(Identity, SlaTarget, SlaFigures):
    """SLA figures of an endpoint (with its own target) or a project."""


class CompareRow(SummaryRow):
    """One endpoint of a comparison: its summary, its SLA tier and its series."""

    sla: SlaTier
    points: list[SeriesPoint]


class RawCoverage(TypedDict):
    """What raw checks cover of a window: per-location figures come from them, and they
    are kept RAW_RETENTION_DAYS. `partial`: the window starts before `since`, the oldest
    moment raw checks are kept for; its earlier part holds only what retention has not
    deleted yet."""

    since: datetime
    partial: bool


class LocationFigures(TypedDict):
    """One location's checks of an endpoint over a window, from raw checks: uptime is the
    share of its checks that succeeded; response times cover timed successes; p95 is exact
    (interpolated between the two nearest checks)."""

    location: str
    checks: int
    failures: int
    uptime: float | None
    avg_ms: float | None
    min_ms: float | None
    max_ms: float | None
    p95_ms: float | None
    last_checked_at: datetime | None
    last_ok: bool | None


class LocationSummaryRow(Identity, LocationFigures):
    """An endpoint's figures from one location."""


class LocationSeriesRow(Identity):
    """An endpoint's response-time series from one location."""

    location: str
    points: list[SeriesPoint]


class LocationUptimeRow(Identity):
    """An endpoint's uptime from one location over 24 h, 7 d and 30 d to a moment."""

    location: str
    uptime_24h: float | None
    uptime_7d: float | None
    uptime_30d: float | None
    checks_24h: int
    checks_7d: int
    checks_30d: int
    failures_24h: int
    failures_7d: int
    failures_30d: int
