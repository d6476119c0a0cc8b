"""The analytics reports the API serves, composed from `selectors` with a bounded number of
queries whatever the number of endpoints on the page.

Every report takes items (endpoints, or projects with their endpoints) the caller may
see; it never widens them.
"""

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NamedTuple
from uuid import UUID

from django.db.models import Count

from accounts.models import Project
from analytics import selectors
from analytics.latency import Latency
from analytics.models import TIERS, Rollup
from analytics.rows import (
    AvailabilityRow,
    Cause,
    CompareRow,
    EndpointFacts,
    ErrorPoint,
    ErrorsRow,
    Identity,
    IncidentRow,
    SeriesRow,
    SlaFigures,
    SlaRow,
    SlaTarget,
    SummaryRow,
    UptimeRow,
    Uptimes,
)
from analytics.selectors import Coverage
from analytics.windows import BUCKETS, PERIODS, UPTIME_PERIODS, buckets
from healthmon.intervals import Interval, Window
from monitoring.models import CheckResult, Endpoint, Incident


class Item(NamedTuple):
    """One row of a report: its key (an endpoint's or a project's id), what it is about,
    and the endpoints whose figures it adds up."""

    key: UUID
    identity: Identity
    endpoints: list[Endpoint]


@dataclass
class Items:
    """What a report is about: endpoints, or projects each standing for its endpoints."""

    group_by: str
    endpoints: Sequence[Endpoint]
    projects: Sequence[Project] = ()

    @property
    def endpoint_ids(self) -> list[UUID]:
        """Every endpoint involved."""
        return [endpoint.pk for endpoint in self.endpoints]

    @property
    def owners(self) -> dict[UUID, UUID]:
        """Each endpoint's item: itself, or its project."""
        if self.group_by == "endpoint":
            return {endpoint.pk: endpoint.pk for endpoint in self.endpoints}
        return {endpoint.pk: endpoint.project_id for endpoint in self.endpoints}

    def rows(self) -> list[Item]:
        """One item per row, in page order."""
        if self.group_by == "endpoint":
            return [
                Item(endpoint.pk, _endpoint_identity(endpoint), [endpoint])
                for endpoint in self.endpoints
            ]
        members: dict[UUID, list[Endpoint]] = defaultdict(list)
        for endpoint in self.endpoints:
            members[endpoint.project_id].append(endpoint)
        return [
            Item(
                project.pk, {"project": str(project.pk), "name": project.name}, members[project.pk]
            )
            for project in self.projects
        ]


class Reads:
    """The selector reads of one page, made once each: reports that need the same rows
    (a page showing a summary, SLA and availability of one window) share them.

    Coverage read for a window also answers any window inside it, clipped.
    """

    def __init__(self, items: Items, now: datetime) -> None:
        self.items, self.now = items, now
        self._latency: dict[tuple[Window, bool], dict[UUID, Latency]] = {}
        self._series: dict[
            tuple[type[Rollup], Window, bool], dict[UUID, dict[datetime, Latency]]
        ] = {}
        self._coverage: list[tuple[Window, dict[UUID, Coverage]]] = []

    def latency(self, window: Window, histograms: bool = True) -> dict[UUID, Latency]:
        """`selectors.latency` of the items over a window; rows read with histograms
        also answer a read without them."""
        for key in ((window, True), (window, histograms)):
            if key in self._latency:
                return self._latency[key]
        found = selectors.latency(self.items.owners, window, self.now, histograms=histograms)
        self._latency[window, histograms] = found
        return found

    def figures(self, windows: Sequence[Window], percentiles: Window | None = None) -> None:
        """Read the latency of several windows in one statement (`selectors.rollup_figures`)
        for `latency` and `checks` to answer; percentiles for the window `percentiles`."""
        wanted = list(dict.fromkeys([*([percentiles] if percentiles else []), *windows]))
        wanted = [
            window
            for window in wanted
            if (window, True) not in self._latency
            and (window == percentiles or (window, False) not in self._latency)
        ]
        if not wanted:
            return
        index = wanted.index(percentiles) if percentiles in wanted else None
        found = selectors.rollup_figures(self.items.owners, wanted, self.now, percentiles=index)
        for position, (window, figures) in enumerate(zip(wanted, found, strict=True)):
            self._latency[window, position == index] = figures

    def checks(self, windows: Sequence[Window]) -> dict[UUID, list[int]]:
        """Checks per item in each window: from latency already read where it was, the
        rest counted together (`selectors.check_counts`)."""
        counts: dict[UUID, list[int]] = defaultdict(lambda: [0] * len(windows))
        missing: list[int] = []
        for index, window in enumerate(windows):
            read = self._latency.get((window, True), self._latency.get((window, False)))
            if read is None:
                missing.append(index)
                continue
            for key, stats in read.items():
                counts[key][index] = stats.count
        if missing:
            chosen = [windows[index] for index in missing]
            for key, found in selectors.check_counts(self.items.owners, chosen, self.now).items():
                for index, value in zip(missing, found, strict=True):
                    counts[key][index] = value
        return counts

    def series(
        self, tier: type[Rollup], window: Window, histograms: bool = True
    ) -> dict[UUID, dict[datetime, Latency]]:
        """`selectors.series` of the items in one tier over a window; rows read with
        histograms also answer a read without them."""
        for key in ((tier, window, True), (tier, window, histograms)):
            if key in self._series:
                return self._series[key]
        found = selectors.series(tier, self.items.owners, window, histograms=histograms)
        self._series[tier, window, histograms] = found
        return found

    def coverage(self, window: Window) -> dict[UUID, Coverage]:
        """`selectors.coverage` of the items' endpoints over a window."""
        clipped = Window(window.start, min(window.end, self.now))
        for span, covered in self._coverage:
            if span.start <= clipped.start and clipped.end <= span.end:
                return {key: found.clipped(clipped) for key, found in covered.items()}
        covered = selectors.coverage(self.items.endpoints, window, self.now)
        self._coverage.append((clipped, covered))
        return covered


def _endpoint_identity(endpoint: Endpoint) -> Identity:
    return {
        "endpoint": str(endpoint.pk),
        "name": endpoint.name,
        "project": str(endpoint.project_id),
    }


def _sum_coverage(
    covered: dict[UUID, Coverage], endpoints: Sequence[Endpoint], within: Window | None = None
) -> tuple[float, float]:
    watched = down = 0.0
    for endpoint in endpoints:
        w, d = covered[endpoint.pk].seconds(within)
        watched, down = watched + w, down + d
    return watched, down


# The spans every uptime figure covers (UPTIME_PERIODS), ending at the end of a report's range.


def _uptime_windows(end: datetime) -> list[Window]:
    return [Window(end - PERIODS[period], end) for period in UPTIME_PERIODS]


def _uptimes(
    covered: dict[UUID, Coverage], endpoints: Sequence[Endpoint], end: datetime, checks: list[int]
) -> Uptimes:
    """Uptime over each of UPTIME_PERIODS to `end`, None where it holds no check."""
    day, week, month = (
        selectors.uptime_percent(*_sum_coverage(covered, endpoints, within), count)
        for within, count in zip(_uptime_windows(end), checks, strict=True)
    )
    return {
        "uptime_24h": day,
        "uptime_7d": week,
        "uptime_30d": month,
        "checks_24h": checks[0],
        "checks_7d": checks[1],
        "checks_30d": checks[2],
    }


def summary(
    items: Items,
    window: Window,
    now: datetime,
    reads: Reads | None = None,
    *,
    percentiles: bool = True,
) -> list[SummaryRow]:
    """Per item: latency and rates over the window; uptime over 24 h, 7 d and 30 d to its end.
    Without `percentiles` (the overview, which shows averages), p50/p95/p99 are null and the
    rows read are an eighth of the size."""
    reads = reads or Reads(items, now)
    end = min(window.end, now)
    # The window's figures and the uptime periods' check counts in one statement.
    reads.figures([window, *_uptime_windows(end)], window if percentiles else None)
    figures = reads.latency(window, percentiles)
    covered = reads.coverage(Window(end - PERIODS["30d"], end))
    counts = reads.checks(_uptime_windows(end))
    rows: list[SummaryRow] = []
    for key, identity, endpoints in items.rows():
        stats = figures.get(key, Latency()).figures()
        uptimes = _uptimes(covered, endpoints, end, counts[key])
        about: EndpointFacts = {}
        if items.group_by == "endpoint":
            about = {"status": endpoints[0].status, "sla_target": endpoints[0].sla_target}
        rows.append({**identity, **about, **stats, **uptimes})
    return rows


def uptime(
    items: Items, end: datetime, now: datetime, reads: Reads | None = None
) -> list[UptimeRow]:
    """Per item: time-weighted uptime and check success rate over 24 h, 7 d and 30 d,
    with the checks in each: the SLA route's reads (coverage, then one rollup statement
    for the three periods, index-only on PostgreSQL)."""
    end = min(end, now)
    reads = reads or Reads(items, now)
    windows = _uptime_windows(end)
    reads.figures(windows)
    rates = [reads.latency(within, histograms=False) for within in windows]
    covered = reads.coverage(Window(end - PERIODS["30d"], end))
    rows: list[UptimeRow] = []
    for key, identity, endpoints in items.rows():
        day, week, month = (found.get(key, Latency()).figures() for found in rates)
        checks = [day["checks"], week["checks"], month["checks"]]
        row: UptimeRow = {
            **identity,
            **_uptimes(covered, endpoints, end, checks),
            "success_rate_24h": day["success_rate"],
            "success_rate_7d": week["success_rate"],
            "success_rate_30d": month["success_rate"],
        }
        rows.append(row)
    return rows


def _tier(bucket: str) -> type[Rollup]:
    return next(tier for tier in TIERS if tier.width == BUCKETS[bucket])


def response_time(
    items: Items,
    window: Window,
    bucket: str,
    reads: Reads | None = None,
    *,
    p95: bool = True,
) -> list[SeriesRow]:
    """Per item: a series of {t, avg_ms, min_ms, max_ms, p95_ms, count} per bucket; without
    `p95` its `p95_ms` is null and the rows read are a seventh of the size (sparklines)."""
    width = BUCKETS[bucket]
    points = (reads or Reads(items, window.end)).series(_tier(bucket), window, p95)
    return [
        {**identity, "points": selectors.series_points(points.get(key, {}), window, width)}
        for key, identity, _ in items.rows()
    ]


def _spread(intervals: Sequence[Interval], starts: list[datetime], width: timedelta) -> list[float]:
    """Seconds of the intervals falling in each bucket, in one pass over the intervals and
    one over the buckets (a difference array adds the whole buckets in between)."""
    seconds = [0.0] * len(starts)
    whole = [0] * (len(starts) + 1)
    if not starts:
        return seconds
    origin, span = starts[0], width.total_seconds()
    for start, end in intervals:
        first = int((start - origin).total_seconds() // span)
        last = int(((end - origin).total_seconds() - 1e-9) // span)
        first, last = max(first, 0), min(last, len(starts) - 1)
        if first > last:
            continue
        if first == last:
            seconds[first] += (
                min(end, starts[first] + width) - max(start, starts[first])
            ).total_seconds()
            continue
        seconds[first] += (starts[first] + width - max(start, starts[first])).total_seconds()
        seconds[last] += (min(end, starts[last] + width) - starts[last]).total_seconds()
        whole[first + 1] += 1
        whole[last] -= 1
    running = 0
    for index in range(len(starts)):
        running += whole[index]
        seconds[index] += running * span
    return seconds


def availability(
    items: Items, window: Window, bucket: str, now: datetime, reads: Reads | None = None
) -> list[AvailabilityRow]:
    """Per item: uptime % per bucket, and the incidents and maintenance inside the window
    (maintenance counts as neither up nor down time).

    A bucket's uptime is None when nothing was watched in it (before the first check,
    paused); every uptime is None when the window holds no check. A bucket is not asked
    for a check of its own: it may be shorter than the endpoint's interval."""
    width = BUCKETS[bucket]
    reads = reads or Reads(items, now)
    covered = reads.coverage(window)
    counts = reads.checks([window])
    starts = list(buckets(window, width))
    incidents = _incidents(items.endpoint_ids, window)
    rows: list[AvailabilityRow] = []
    for key, identity, endpoints in items.rows():
        watched = _spread([i for e in endpoints for i in covered[e.pk].watched], starts, width)
        down = _spread([i for e in endpoints for i in covered[e.pk].down], starts, width)
        overall = _sum_coverage(covered, endpoints)
        (checks,) = counts[key]
        members = {endpoint.pk for endpoint in endpoints}
        rows.append(
            {
                **identity,
                "checks": checks,
                "uptime": selectors.uptime_percent(*overall, checks),
                "downtime_s": round(overall[1], 3),
                "buckets": [
                    {
                        "t": start,
                        "uptime": selectors.uptime_percent(watched[i], down[i], checks),
                        "downtime_s": round(down[i], 3),
                    }
                    for i, start in enumerate(starts)
                ],
                "incidents": [i for i in incidents if i["endpoint"] in members],
                "maintenance": [
                    {"endpoint": e.pk, "starts_at": start, "ends_at": end}
                    for e in endpoints
                    for start, end in covered[e.pk].maintenance
                ],
            }
        )
    return rows


def _incidents(endpoint_ids: Sequence[UUID], window: Window) -> list[IncidentRow]:
    found = (
        Incident.objects.filter(endpoint_id__in=endpoint_ids, started_at__lt=window.end)
        .exclude(resolved_at__lte=window.start)
        .order_by("started_at", "id")
    )
    return [
        {
            "id": str(incident.pk),
            "endpoint": incident.measured_endpoint_id,
            "started_at": incident.started_at,
            "resolved_at": incident.resolved_at,
            "duration_seconds": incident.duration_seconds,
            "cause": incident.cause,
        }
        for incident in found
    ]


def errors(
    items: Items, window: Window, bucket: str, now: datetime, reads: Reads | None = None
) -> list[ErrorsRow]:
    """Per item: failures and error rate over the window, against the window just before
    it, per bucket, and the most frequent error causes."""
    width = BUCKETS[bucket]
    reads = reads or Reads(items, now)
    now_figures = reads.latency(window, histograms=False)
    before = reads.latency(window.previous(), histograms=False)
    points = reads.series(_tier(bucket), window, histograms=False)
    causes = _causes(items, window)
    rows: list[ErrorsRow] = []
    for key, identity, _ in items.rows():
        current = now_figures.get(key, Latency()).figures()
        previous = before.get(key, Latency()).figures()
        change = None
        if current["error_rate"] is not None and previous["error_rate"] is not None:
            change = round(current["error_rate"] - previous["error_rate"], 4)
        found = points.get(key, {})
        trend: list[ErrorPoint] = []
        for start in buckets(window, width):
            stats = found.get(start) or Latency()
            rate = round(100 * stats.failures / stats.count, 4) if stats.count else None
            trend.append(
                {"t": start, "checks": stats.count, "failures": stats.failures, "error_rate": rate}
            )
        rows.append(
            {
                **identity,
                "checks": current["checks"],
                "failures": current["failures"],
                "error_rate": current["error_rate"],
                "previous_error_rate": previous["error_rate"],
                "error_rate_change": change,
                "trend": trend,
                "top_errors": causes.get(key, []),
            }
        )
    return rows


TOP_ERRORS = 10


def _causes(items: Items, window: Window) -> dict[UUID, list[Cause]]:
    """Top error texts per item, from raw failed checks (one grouped query)."""
    owners = items.owners
    rows = (
        CheckResult.objects.filter(
            endpoint_id__in=list(owners),
            ok=False,
            checked_at__gte=window.start,
            checked_at__lt=window.end,
        )
        .values("endpoint_id", "error")
        .order_by()
        .annotate(count=Count("id"))
    )
    counts: dict[UUID, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for row in rows:
        counts[owners[row["endpoint_id"]]][row["error"]] += row["count"]
    return {
        owner: [
            Cause(error=error, count=count)
            for error, count in sorted(found.items(), key=lambda pair: (-pair[1], pair[0]))
        ][:TOP_ERRORS]
        for owner, found in counts.items()
    }


def sla(
    items: Items,
    window: Window,
    now: datetime,
    targets: Sequence[float] | None,
    reads: Reads | None = None,
) -> list[SlaRow]:
    """Per item: uptime over the window and each SLA tier's budget side by side; with no
    check in the window (or nothing watched), no uptime and no standing."""
    reads = reads or Reads(items, now)
    covered = reads.coverage(window)
    counts = reads.checks([window])
    rows: list[SlaRow] = []
    for key, identity, endpoints in items.rows():
        watched, down = _sum_coverage(covered, endpoints)
        (checks,) = counts[key]
        figures: SlaFigures = {
            "checks": checks,
            "uptime": selectors.uptime_percent(watched, down, checks),
            "watched_s": round(watched, 3),
            "downtime_s": round(down, 3),
            "tiers": selectors.sla_tiers(watched, down, targets, checks),
        }
        target: SlaTarget = {}
        if items.group_by == "endpoint":
            target = {"sla_target": endpoints[0].sla_target}
        rows.append({**identity, **target, **figures})
    return rows


# Endpoints one comparison holds, on the API and on the page.
MAX_COMPARED = 10


def compare(
    endpoints: Sequence[Endpoint],
    window: Window,
    bucket: str,
    now: datetime,
    *,
    series_p95: bool = True,
) -> list[CompareRow]:
    """Several endpoints side by side: summary figures, SLA at their own target, series
    (without `series_p95`, their points' `p95_ms` is null: the page draws averages)."""
    items = Items("endpoint", endpoints)
    reads = Reads(items, now)
    summaries = summary(items, window, now, reads)  # first: its 30 days cover the SLA window
    series = {
        row["endpoint"]: row["points"]
        for row in response_time(items, window, bucket, reads, p95=series_p95)
    }
    slas = {row["endpoint"]: row for row in sla(items, window, now, None, reads)}
    rows: list[CompareRow] = []
    for row in summaries:
        own = [t for t in slas[row["endpoint"]]["tiers"] if t["target"] == row["sla_target"]]
        rows.append({**row, "sla": own[0], "points": series[row["endpoint"]]})
    return rows
