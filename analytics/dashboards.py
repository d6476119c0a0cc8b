"""What the dashboard pages show, read with a fixed number of queries per page.

The pages use the same reports as the analytics API (`analytics.reports`), so a figure on
a page and the same figure from the API always agree.
"""

import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TypedDict
from uuid import UUID

from django.conf import settings
from django.core.cache import cache
from django.core.paginator import Page, Paginator
from django.db.models import Case, IntegerField, Min, QuerySet, Value, When
from django.urls import reverse
from django.utils.safestring import SafeString

from accounts.models import Project, User
from analytics import charts, locations, reports
from analytics.reports import Items
from analytics.rows import (
    AvailabilityRow,
    CompareRow,
    ErrorsRow,
    LocationSummaryRow,
    RawCoverage,
    SeriesPoint,
    SlaRow,
    SummaryRow,
)
from analytics.selectors import bucket_for, degraded_stretches
from analytics.windows import BUCKETS, PERIODS
from healthmon.db import own_fields
from healthmon.intervals import Interval, Window
from monitoring.locations import endpoint_slugs, shown_slug
from monitoring.models import CheckResult, Endpoint, EndpointStatus, EndpointType, Incident

OVERVIEW_PAGE_SIZE = 100
RECENT = 20
# The least a chart of a young endpoint spans: its first bucket, not a line a minute wide.
SHORTEST_CHART = timedelta(minutes=5)
# Worst first, so that what needs attention leads each project's list.
STATUS_ORDER = [
    EndpointStatus.DOWN,
    EndpointStatus.DEGRADED,
    EndpointStatus.LATE,
    EndpointStatus.PENDING,
    EndpointStatus.UP,
    EndpointStatus.PAUSED,
]
# The labels of types and statuses, looked up here: `get_<field>_display` flattens and hashes
# the field's choices on each call, and an overview page makes 200 of them.
TYPE_LABELS = {value: str(label) for value, label in EndpointType.choices}
STATUS_LABELS = {value: str(label) for value, label in EndpointStatus.choices}
# What the overview reads of an endpoint: its row and the reports behind its figures (status
# and creation for the time watched, the SLA target). Not the 30 other columns (nine dates,
# two JSON documents) that each row would decode for nothing.
OVERVIEW_FIELDS = (
    "id",
    "project__id",
    "project__name",
    "name",
    "type",
    "status",
    "last_checked_at",
    "created_at",
    "sla_target",
)


def period_window(period: str, now: datetime) -> Window:
    """The live window of a period name (1h, 6h, 24h, 7d, 30d) ending now."""
    return Window(now - PERIODS[period], now)


@dataclass
class OverviewFilters:
    """What the overview is narrowed to; empty means everything visible."""

    project: UUID | None = None
    status: str = ""
    type: str = ""
    period: str = "24h"

    def lookups(self, prefix: str = "") -> dict[str, object]:
        """The filters as lookups on an endpoint; `prefix` reaches it from another model."""
        chosen = {"project_id": self.project, "status": self.status, "type": self.type}
        return {prefix + name: value for name, value in chosen.items() if value}


class OverviewFigures(TypedDict):
    """What the overview shows of an endpoint beside its name and status."""

    uptime_24h: float | None
    uptime_7d: float | None
    uptime_30d: float | None
    avg_ms: float | None
    sparkline: SafeString


class OverviewRow(OverviewFigures):
    """An endpoint's row on the overview: its figures, the endpoint itself, the address of
    its page and the labels of its type and status."""

    object: Endpoint
    url: str
    type_label: str
    status_label: str


@dataclass
class ProjectGroup:
    """A project's endpoints on one overview page, with their figures."""

    project: Project
    rows: list[OverviewRow] = field(default_factory=list)


class LocationLine(TypedDict):
    """A row of an endpoint page's per-location table: uptime (checks that succeeded) over
    24 h and 7 d, checks and failures over the page's period, and the latest result
    within the 7 d (or the period, when longer)."""

    location: str
    uptime_24h: float | None
    uptime_7d: float | None
    checks: int
    failures: int
    last_checked_at: datetime | None
    last_ok: bool | None


class LocationPanel(TypedDict):
    """What an endpoint page shows of its locations: a table row and a series each, and
    what raw checks (their source) cover of the period."""

    rows: list[LocationLine]
    series: list[tuple[str, list[SeriesPoint]]]
    coverage: RawCoverage


class LocationComparison(TypedDict):
    """The comparison page comparing one endpoint's locations."""

    window: Window
    shown: Window
    since: datetime | None
    bucket: str
    endpoint: Endpoint
    rows: list[LocationSummaryRow]
    series: list[tuple[str, list[SeriesPoint]]]
    coverage: RawCoverage


class EndpointDetail(TypedDict):
    """Everything the endpoint page shows: the reports of its period, its response-time
    series, and its latest checks and incidents. `since` is the first check of an endpoint
    younger than the period (None otherwise); `shown` is the part of the period its charts
    draw: from that first check, or the whole period."""

    window: Window
    shown: Window
    since: datetime | None
    bucket: str
    summary: SummaryRow
    series: list[SeriesPoint]
    availability: AvailabilityRow
    errors: ErrorsRow
    sla: SlaRow
    degraded: list[Interval]  # when it was slow, yet up
    checks: list[CheckResult]
    incidents: list[Incident]
    locations: LocationPanel | None  # for an endpoint probed from several places


class ComparedRow(CompareRow):
    """An endpoint of the comparison page: its comparison row and the endpoint itself."""

    object: Endpoint


class Comparison(TypedDict):
    """The comparison page: its window and bucket, a row per endpoint picked; `since` and
    `shown` as on the endpoint page, when every endpoint picked is younger than the window."""

    window: Window
    shown: Window
    since: datetime | None
    bucket: str
    rows: list[ComparedRow]


def _ranked(endpoints: QuerySet[Endpoint]) -> QuerySet[Endpoint]:
    rank = Case(
        *[When(status=status, then=Value(i)) for i, status in enumerate(STATUS_ORDER)],
        default=Value(len(STATUS_ORDER)),
        output_field=IntegerField(),
    )
    return endpoints.annotate(rank=rank).order_by("project__name", "project_id", "rank", "name")


def overview_endpoints(user: User, filters: OverviewFilters) -> QuerySet[Endpoint]:
    """The endpoints the user may see, narrowed by the filters, worst status first."""
    endpoints = (
        Endpoint.objects.visible_to(user)
        .filter(**filters.lookups())
        .select_related("project")
        .only(*OVERVIEW_FIELDS)
    )
    return _ranked(endpoints)


def overview(
    user: User, filters: OverviewFilters, page_number: str | None, now: datetime
) -> tuple[Page[Endpoint], list[ProjectGroup], list[Incident]]:
    """One page of the overview: endpoints grouped by project with status, uptime over
    24 h / 7 d / 30 d, average response time over the period and a 24 h sparkline; and the
    open incidents, newest first."""
    page = Paginator(overview_endpoints(user, filters), OVERVIEW_PAGE_SIZE).get_page(page_number)
    endpoints = list(page.object_list)
    figures = overview_figures(endpoints, filters.period, now)
    head, tail = _endpoint_url_parts()
    groups: dict[UUID, ProjectGroup] = {}
    for endpoint in endpoints:
        group = groups.setdefault(endpoint.project_id, ProjectGroup(endpoint.project))
        row: OverviewRow = {
            **figures[str(endpoint.pk)],
            "object": endpoint,
            "url": f"{head}{endpoint.pk}{tail}",
            "type_label": TYPE_LABELS.get(endpoint.type, endpoint.type),
            "status_label": STATUS_LABELS.get(endpoint.status, endpoint.status),
        }
        group.rows.append(row)
    return page, list(groups.values()), open_incidents(user, filters)


def _endpoint_url_parts() -> tuple[str, str]:
    """What an endpoint page's address has before and after its id: one `reverse` for a
    page of rows rather than one per row."""
    probe = uuid.UUID(int=0)
    head, tail = reverse("endpoint", args=[probe]).split(str(probe))
    return head, tail


def overview_figures(
    endpoints: list[Endpoint], period: str, now: datetime
) -> dict[str, OverviewFigures]:
    """Per endpoint: uptime over 24 h / 7 d / 30 d, average response time over the period
    (from the same reports as the API) and a sparkline of the last 24 h, hour by hour.

    Kept in the cache for `DASHBOARD_CACHE_SECONDS` under the page's endpoints and period:
    everyone who sees the same page shares one computation per refresh. A page with
    another set of endpoints (one added, removed or moved) has another key.
    """
    ids = ",".join(sorted(str(endpoint.pk) for endpoint in endpoints))
    key = f"overview:1:{period}:{hashlib.sha256(ids.encode()).hexdigest()}"
    seconds = settings.DASHBOARD_CACHE_SECONDS
    cached: dict[str, OverviewFigures] | None = cache.get(key) if seconds else None
    if cached is not None:
        return cached
    items = Items("endpoint", endpoints)
    reads = reports.Reads(items, now)
    summaries = reports.summary(items, period_window(period, now), now, reads, percentiles=False)
    day = period_window("24h", now)
    lines = reports.response_time(items, day, "1h", reads, p95=False)
    found: dict[str, OverviewFigures] = {
        row["endpoint"]: {
            "uptime_24h": row["uptime_24h"],
            "uptime_7d": row["uptime_7d"],
            "uptime_30d": row["uptime_30d"],
            "avg_ms": row["avg_ms"],
            "sparkline": charts.sparkline(line["points"]),
        }
        for row, line in zip(summaries, lines, strict=True)
    }
    if seconds:
        cache.set(key, found, seconds)
    return found


def open_incidents(user: User, filters: OverviewFilters, limit: int = RECENT) -> list[Incident]:
    """Incidents still open on endpoints the overview shows, newest first."""
    incidents = (
        Incident.objects.visible_to(user)
        .open()
        .filter(**filters.lookups("endpoint__"))
        .select_related("endpoint__project")
        # The names shown beside each: the endpoint's whole row would be decrypted too.
        .only(*own_fields(Incident), "endpoint__name", "endpoint__project__name")
    )
    return list(incidents.order_by("-started_at")[:limit])


def endpoint_detail(endpoint: Endpoint, period: str, now: datetime) -> EndpointDetail:
    """Everything the endpoint page shows, over the chosen period: the response-time series
    (5-minute buckets up to two days, hourly beyond), availability, SLA, rates and trends.
    """
    items = Items("endpoint", [endpoint])
    window = period_window(period, now)
    bucket = bucket_for(window, None)
    reads = reports.Reads(items, now)
    since = first_check(endpoint, window)
    (summary,) = reports.summary(items, window, now, reads)
    (series,) = reports.response_time(items, window, bucket, reads)
    (availability,) = reports.availability(items, window, bucket, now, reads)
    (errors,) = reports.errors(items, window, bucket, now, reads)
    (sla,) = reports.sla(items, window, now, None, reads)
    recent = list(CheckResult.objects.filter(endpoint=endpoint).order_by("-checked_at")[:RECENT])
    return {
        "window": window,
        "shown": Window(min(since, window.end - SHORTEST_CHART), window.end) if since else window,
        "since": since,
        "bucket": bucket,
        "summary": summary,
        "series": series["points"],
        "availability": availability,
        "errors": errors,
        "sla": sla,
        "degraded": degraded_stretches(endpoint, window, now),
        "checks": recent,
        "incidents": list(
            Incident.objects.filter(endpoint=endpoint).order_by("-started_at")[:RECENT]
        ),
        "locations": location_panel(endpoint, window, bucket, now, recent),
    }


def several_places(endpoint: Endpoint, recent: Sequence[CheckResult]) -> bool:
    """Whether an endpoint lists several locations, or its recent checks (those the page
    shows, already read) came from several: no query of its own, so a page of an
    endpoint probed from one place costs what it did."""
    return len(endpoint_slugs(endpoint)) > 1 or len({check.location for check in recent}) > 1


def location_panel(
    endpoint: Endpoint, window: Window, bucket: str, now: datetime, recent: Sequence[CheckResult]
) -> LocationPanel | None:
    """Per location of a multi-location endpoint: its response-time series over the
    window and its table row, from one read of raw checks (none for an endpoint probed
    from one place: its page stays as it was)."""
    if not several_places(endpoint, recent):
        return None
    day, week = period_window("24h", now), period_window("7d", now)
    read = Window(min(window.start, week.start), now)
    checks = locations.raw_checks([endpoint.pk], read, None)
    tallied = locations.tallies(checks, [window, day, week, read])
    lines = locations.series_of(checks, [endpoint], window, BUCKETS[bucket])
    rows: list[LocationLine] = []
    for line in lines:
        slug = "" if line["location"] == shown_slug("") else line["location"]
        period, last_day, last_week, everything = tallied[endpoint.pk, slug]
        rows.append(
            {
                "location": line["location"],
                "uptime_24h": last_day.uptime,
                "uptime_7d": last_week.uptime,
                "checks": period.count,
                "failures": period.failures,
                "last_checked_at": everything.last_at,
                "last_ok": everything.last_ok,
            }
        )
    return {
        "rows": rows,
        "series": [(line["location"], line["points"]) for line in lines],
        "coverage": locations.raw_coverage(window, now),
    }


def location_comparison(endpoint: Endpoint, period: str, now: datetime) -> LocationComparison:
    """One endpoint's locations side by side: a series each over the period and their
    figures, from one read of raw checks."""
    window = period_window(period, now)
    bucket = bucket_for(window, None)
    checks = locations.raw_checks([endpoint.pk], window, None)
    lines = locations.series_of(checks, [endpoint], window, BUCKETS[bucket])
    tallied = locations.tallies(checks, [window])
    rows: list[LocationSummaryRow] = []
    for line in lines:
        slug = "" if line["location"] == shown_slug("") else line["location"]
        (tally,) = tallied[endpoint.pk, slug]
        rows.append({**locations.identity(endpoint), **tally.figures(slug)})
    since = min((check[2] for check in checks), default=None)
    since = since if since is not None and endpoint.created_at > window.start else None
    return {
        "window": window,
        "shown": Window(min(since, window.end - SHORTEST_CHART), window.end) if since else window,
        "since": since,
        "bucket": bucket,
        "endpoint": endpoint,
        "rows": rows,
        "series": [(line["location"], line["points"]) for line in lines],
        "coverage": locations.raw_coverage(window, now),
    }


def first_check(endpoint: Endpoint, window: Window) -> datetime | None:
    """When an endpoint created inside the window was first checked (None for an older one,
    or one not checked yet): its charts start there rather than draw an empty period."""
    if endpoint.created_at <= window.start:
        return None
    checks = CheckResult.objects.filter(endpoint=endpoint, checked_at__gte=window.start)
    return checks.order_by("checked_at").values_list("checked_at", flat=True).first()


def comparison(endpoints: list[Endpoint], period: str, now: datetime) -> Comparison:
    """Several endpoints side by side: one overlaid series each and their figures."""
    window = period_window(period, now)
    bucket = bucket_for(window, None)
    # The chart draws averages: its series are read without histograms.
    rows = reports.compare(endpoints, window, bucket, now, series_p95=False) if endpoints else []
    by_id = {str(endpoint.pk): endpoint for endpoint in endpoints}
    compared: list[ComparedRow] = [{**row, "object": by_id[row["endpoint"]]} for row in rows]
    since = None
    if endpoints and all(endpoint.created_at > window.start for endpoint in endpoints):
        checks = CheckResult.objects.filter(endpoint__in=endpoints, checked_at__gte=window.start)
        since = checks.aggregate(first=Min("checked_at"))["first"]
    shown = Window(min(since, window.end - SHORTEST_CHART), window.end) if since else window
    return {"window": window, "shown": shown, "since": since, "bucket": bucket, "rows": compared}
