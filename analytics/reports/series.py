"""The reports over time: response time, availability with incidents, errors with their
causes, and the comparison of endpoints."""

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta
from uuid import UUID

from django.db.models import Count

from analytics import selectors
from analytics.latency import Latency
from analytics.models import TIERS, Rollup
from analytics.reports.reads import Items, Reads
from analytics.reports.tables import sla, summary
from analytics.rows import (
    AvailabilityRow,
    Cause,
    CompareRow,
    ErrorPoint,
    ErrorsRow,
    IncidentRow,
    SeriesRow,
)
from analytics.windows import BUCKETS, buckets
from healthmon.intervals import Interval, Window
from monitoring.models import CheckResult, Endpoint, Incident


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
        overall = selectors.coverage_seconds(covered[endpoint.pk] for endpoint in endpoints)
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
