"""Per-location figures of endpoints, read from raw checks grouped by `CheckResult.location`.

Why raw checks: the rollups count one verdict per round of a multi-location endpoint (the
overall figures), and no per-location tier is kept. Raw checks are kept
RAW_RETENTION_DAYS, so per-location figures reach that far back: a window older than that
answers with the rows that still exist and says so (`raw_coverage`). The default location
is stored as "" and shown as its slug (`monitoring.locations.shown_slug`).

Each read is one query whatever the number of locations: the rows are tallied here.
"""

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from uuid import UUID

from django.conf import settings

from analytics.rows import (
    Identity,
    LocationFigures,
    LocationSeriesRow,
    LocationSummaryRow,
    LocationUptimeRow,
    RawCoverage,
    SeriesPoint,
)
from analytics.windows import PERIODS, UPTIME_PERIODS, buckets, floor
from healthmon.intervals import Window
from monitoring.locations import endpoint_slugs, shown_slug, stored_slug
from monitoring.models import CheckResult, Endpoint

# (endpoint id, stored location, checked at, ok, response time)
RawCheck = tuple[UUID, str, datetime, bool, float | None]


@dataclass
class Tally:
    """What one location's checks add up to."""

    count: int = 0
    failures: int = 0
    times: list[float] = field(default_factory=list)
    last_at: datetime | None = None
    last_ok: bool | None = None

    def add(self, at: datetime, ok: bool, ms: float | None) -> None:
        """Count one check; its time joins the figures if it succeeded and has one."""
        self.count += 1
        self.failures += not ok
        if ok and ms is not None:
            self.times.append(ms)
        if self.last_at is None or at > self.last_at:
            self.last_at, self.last_ok = at, ok

    @property
    def uptime(self) -> float | None:
        """The share of checks that succeeded, %; None without a check."""
        return round(100 * (self.count - self.failures) / self.count, 4) if self.count else None

    @property
    def avg_ms(self) -> float | None:
        return round(sum(self.times) / len(self.times), 3) if self.times else None

    def figures(self, location: str) -> LocationFigures:
        """The figures as the API shows them, under the location's shown slug."""
        return {
            "location": shown_slug(location),
            "checks": self.count,
            "failures": self.failures,
            "uptime": self.uptime,
            "avg_ms": self.avg_ms,
            "min_ms": min(self.times, default=None),
            "max_ms": max(self.times, default=None),
            "p95_ms": percentile(self.times, 0.95),
            "last_checked_at": self.last_at,
            "last_ok": self.last_ok,
        }

    def point(self, start: datetime) -> SeriesPoint:
        """The tally as one bucket of a response-time series."""
        return {
            "t": start,
            "avg_ms": self.avg_ms,
            "min_ms": min(self.times, default=None),
            "max_ms": max(self.times, default=None),
            "p95_ms": percentile(self.times, 0.95),
            "count": self.count,
            "failures": self.failures,
        }


def percentile(values: Sequence[float], q: float) -> float | None:
    """The exact q-th quantile, interpolated between the two nearest values (PostgreSQL's
    `percentile_cont`); None without values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = q * (len(ordered) - 1)
    low, high = math.floor(rank), math.ceil(rank)
    value = ordered[low] + (ordered[high] - ordered[low]) * (rank - low)
    return round(value, 3)


def raw_since(now: datetime) -> datetime:
    """The oldest moment raw checks are kept for."""
    return now - timedelta(days=settings.RAW_RETENTION_DAYS)


def raw_coverage(window: Window, now: datetime) -> RawCoverage:
    """What raw checks cover of a window (see `RawCoverage`)."""
    since = raw_since(now)
    return {"since": max(since, window.start), "partial": window.start < since}


def raw_checks(endpoint_ids: Sequence[UUID], window: Window, only: str | None) -> list[RawCheck]:
    """The raw checks of the endpoints in a window, from one location (a stored slug) or
    all: one query, tuples rather than models."""
    found = CheckResult.objects.filter(
        endpoint_id__in=list(endpoint_ids), checked_at__gte=window.start, checked_at__lt=window.end
    )
    if only is not None:
        found = found.filter(location=only)
    return list(
        found.order_by().values_list(
            "endpoint_id", "location", "checked_at", "ok", "response_time_ms"
        )
    )


def slugs_of(endpoint: Endpoint, seen: Iterable[str], only: str | None) -> list[str]:
    """The stored slugs an endpoint's rows are about: those it lists (in its order), then
    any other its checks came from (sorted); just `only` when given."""
    listed = [stored_slug(slug) for slug in endpoint_slugs(endpoint)]
    chosen = list(dict.fromkeys([*listed, *sorted(set(seen) - set(listed))]))
    return [slug for slug in chosen if only is None or slug == only]


def tallies(
    checks: Iterable[RawCheck], windows: Sequence[Window]
) -> dict[tuple[UUID, str], list[Tally]]:
    """Per (endpoint, stored slug), a tally of its checks in each window."""
    found: dict[tuple[UUID, str], list[Tally]] = defaultdict(lambda: [Tally() for _ in windows])
    for endpoint_id, location, at, ok, ms in checks:
        for index, window in enumerate(windows):
            if window.start <= at < window.end:
                found[endpoint_id, location][index].add(at, ok, ms)
    return found


def identity(endpoint: Endpoint) -> Identity:
    """What a row about an endpoint says it is about."""
    return {
        "endpoint": str(endpoint.pk),
        "name": endpoint.name,
        "project": str(endpoint.project_id),
    }


def _seen(checks: Iterable[RawCheck]) -> dict[UUID, set[str]]:
    seen: dict[UUID, set[str]] = defaultdict(set)
    for endpoint_id, location, *_ in checks:
        seen[endpoint_id].add(location)
    return seen


def summary(
    endpoints: Sequence[Endpoint], window: Window, only: str | None = None
) -> list[LocationSummaryRow]:
    """Per endpoint and location: checks, failures, uptime and response times over the
    window."""
    checks = raw_checks([e.pk for e in endpoints], window, only)
    found, seen = tallies(checks, [window]), _seen(checks)
    return [
        {**identity(e), **found[e.pk, slug][0].figures(slug)}
        for e in endpoints
        for slug in slugs_of(e, seen[e.pk], only)
    ]


def series(
    endpoints: Sequence[Endpoint], window: Window, width: timedelta, only: str | None = None
) -> list[LocationSeriesRow]:
    """Per endpoint and location: a response-time series with every bucket of the window
    (empty ones with count 0)."""
    checks = raw_checks([e.pk for e in endpoints], window, only)
    return series_of(checks, endpoints, window, width, only)


def series_of(
    checks: Sequence[RawCheck],
    endpoints: Sequence[Endpoint],
    window: Window,
    width: timedelta,
    only: str | None = None,
) -> list[LocationSeriesRow]:
    """`series` from checks already read (those outside the window are left out)."""
    checks = [check for check in checks if window.start <= check[2] < window.end]
    per_bucket: dict[tuple[UUID, str], dict[datetime, Tally]] = defaultdict(
        lambda: defaultdict(Tally)
    )
    for endpoint_id, location, at, ok, ms in checks:
        per_bucket[endpoint_id, location][floor(at, width)].add(at, ok, ms)
    seen = _seen(checks)
    rows: list[LocationSeriesRow] = []
    for e in endpoints:
        for slug in slugs_of(e, seen[e.pk], only):
            own = per_bucket[e.pk, slug]
            points = [(own.get(start) or Tally()).point(start) for start in buckets(window, width)]
            rows.append({**identity(e), "location": shown_slug(slug), "points": points})
    return rows


def uptime(
    endpoints: Sequence[Endpoint], end: datetime, only: str | None = None
) -> list[LocationUptimeRow]:
    """Per endpoint and location: uptime (checks that succeeded, %) over 24 h, 7 d and
    30 d to `end`, with the checks and failures in each."""
    windows = [Window(end - PERIODS[period], end) for period in UPTIME_PERIODS]
    checks = raw_checks([e.pk for e in endpoints], windows[-1], only)
    found, seen = tallies(checks, windows), _seen(checks)
    rows: list[LocationUptimeRow] = []
    for e in endpoints:
        for slug in slugs_of(e, seen[e.pk], only):
            day, week, month = found[e.pk, slug]
            rows.append(
                {
                    **identity(e),
                    "location": shown_slug(slug),
                    "uptime_24h": day.uptime,
                    "uptime_7d": week.uptime,
                    "uptime_30d": month.uptime,
                    "checks_24h": day.count,
                    "checks_7d": week.count,
                    "checks_30d": month.count,
                    "failures_24h": day.failures,
                    "failures_7d": week.failures,
                    "failures_30d": month.failures,
                }
            )
    return rows
