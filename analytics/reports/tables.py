"""The reports of one row per item: summary (latency, rates, uptimes), uptime and SLA."""

from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

from analytics import selectors
from analytics.latency import Latency
from analytics.reports.reads import Items, Reads
from analytics.rows import (
    EndpointFacts,
    SlaFigures,
    SlaRow,
    SlaTarget,
    SummaryRow,
    UptimeRow,
    Uptimes,
)
from analytics.selectors import Coverage
from analytics.windows import PERIODS, UPTIME_PERIODS
from healthmon.intervals import Window
from monitoring.models import Endpoint

# The spans every uptime figure covers (UPTIME_PERIODS), ending at the end of a report's range.


def _uptime_windows(end: datetime) -> list[Window]:
    return [Window(end - PERIODS[period], end) for period in UPTIME_PERIODS]


def _uptimes(
    covered: dict[UUID, Coverage], endpoints: Sequence[Endpoint], end: datetime, checks: list[int]
) -> Uptimes:
    """Uptime over each of UPTIME_PERIODS to `end`, None where it holds no check."""
    spans = selectors.coverage_seconds_in(
        (covered[endpoint.pk] for endpoint in endpoints), _uptime_windows(end)
    )
    day, week, month = (
        selectors.uptime_percent(watched, down, count)
        for (watched, down), count in zip(spans, checks, strict=True)
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
    for the three periods' checks and failures, index-only on PostgreSQL)."""
    end = min(end, now)
    reads = reads or Reads(items, now)
    rates = reads.rates(_uptime_windows(end))
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
        watched, down = selectors.coverage_seconds(covered[endpoint.pk] for endpoint in endpoints)
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
