"""Reads measured by the analytics benchmark (it is no benchmark): the report functions the
API calls (`analytics.reports`) per endpoint, project and organization, each beside a plain
SQL query over the raw checks computing the same figure, and the summary API's pages; the
database time of a call summed over its queries. Django must be set up."""

import argparse
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from _analytics_world import DAY, DbClock, World
from _support import percentile


@dataclass
class Timing:
    """Per call: database seconds, wall seconds, queries; and what each call returned."""

    db: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)
    queries: list[int] = field(default_factory=list)
    results: list[Any] = field(default_factory=list)

    def ms(self, which: str, share: float) -> float:
        """A percentile of the database or wall time, in ms."""
        return percentile(getattr(self, which), share) * 1000


def measure(
    calls: Sequence[Callable[[], Any]],
    budget: float | None = None,
    least: int = 3,
    warm: bool = True,
) -> Timing:
    """Run the calls in turn (after an untimed warm-up call unless told not to), stopping
    early once the budget is spent and `least` calls ran."""
    if warm:
        calls[0]()
    timing, began = Timing(), time.perf_counter()
    for call in calls:
        timed(call, timing)
        spent = time.perf_counter() - began
        if budget is not None and len(timing.db) >= least and spent > budget:
            break
    return timing


def timed(call: Callable[[], Any], timing: Timing) -> None:
    """Run one call and add its database time, wall time, queries and result to `timing`."""
    from django.db import connection

    clock = DbClock()
    with connection.execute_wrapper(clock):
        wall = time.perf_counter()
        result = call()
        wall = time.perf_counter() - wall
    timing.db.append(clock.seconds)
    timing.wall.append(wall)
    timing.queries.append(clock.queries)
    timing.results.append(result)


def measure_pair(
    first: Sequence[Callable[[], Any]], second: Sequence[Callable[[], Any]]
) -> tuple[Timing, Timing]:
    """Time two reports over the same items by turns, the one going first alternating: a
    report that reads pages the other has just brought into PostgreSQL's cache does so
    as often as the other. (Timed one after the other, the second reads warm.)"""
    first[0]()
    second[0]()
    timings = (Timing(), Timing())
    for n, pair in enumerate(zip(first, second, strict=True)):
        for which in (0, 1) if n % 2 == 0 else (1, 0):
            timed(pair[which], timings[which])
    return timings


def raw_query(sql: str, params: Sequence[Any]) -> Callable[[], list[tuple]]:
    """A plain SQL query as a call."""
    from django.db import connection

    def call() -> list[tuple]:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()

    return call


def explain(title: str, call: Callable[[], Any]) -> None:
    """Print EXPLAIN (ANALYZE, BUFFERS) of every query a call makes."""
    from django.db import connection

    clock = DbClock()
    clock.log = []
    with connection.execute_wrapper(clock):
        call()
    print(f"\n--- EXPLAIN: {title} ({len(clock.log)} queries) ---")
    with connection.cursor() as cursor:
        for sql, params in clock.log:
            if not sql.lstrip().upper().startswith("SELECT"):
                continue
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
            print(sql[:300] + (" …" if len(sql) > 300 else ""))
            print("\n".join("    " + row[0] for row in cursor.fetchall()))


# --- The metric queries -------------------------------------------------------------------

RAW_SUMMARY = """
SELECT c.endpoint_id, count(*), count(*) FILTER (WHERE NOT ok),
       avg(response_time_ms) FILTER (WHERE ok), min(response_time_ms) FILTER (WHERE ok),
       max(response_time_ms) FILTER (WHERE ok),
       percentile_cont(0.5) WITHIN GROUP (ORDER BY response_time_ms) FILTER (WHERE ok),
       percentile_cont(0.95) WITHIN GROUP (ORDER BY response_time_ms) FILTER (WHERE ok),
       percentile_cont(0.99) WITHIN GROUP (ORDER BY response_time_ms) FILTER (WHERE ok)
FROM monitoring_checkresult c {join}
WHERE {where} AND c.checked_at >= %s AND c.checked_at < %s
GROUP BY c.endpoint_id
"""
RAW_SERIES = """
SELECT date_bin('5 minutes', checked_at, TIMESTAMPTZ 'epoch') AS t, count(*),
       count(*) FILTER (WHERE NOT ok), avg(response_time_ms) FILTER (WHERE ok),
       min(response_time_ms) FILTER (WHERE ok), max(response_time_ms) FILTER (WHERE ok),
       percentile_cont(0.95) WITHIN GROUP (ORDER BY response_time_ms) FILTER (WHERE ok)
FROM monitoring_checkresult
WHERE endpoint_id = %s AND checked_at >= %s AND checked_at < %s
GROUP BY 1 ORDER BY 1
"""
RAW_UPTIME = """
SELECT 100.0 * count(*) FILTER (WHERE c.ok) / nullif(count(*), 0)
FROM monitoring_checkresult c JOIN monitoring_endpoint e ON e.id = c.endpoint_id
WHERE e.project_id = %s AND c.checked_at >= %s AND c.checked_at < %s
"""
ORG_JOIN = (
    "JOIN monitoring_endpoint e ON e.id = c.endpoint_id "
    "JOIN accounts_project p ON p.id = e.project_id"
)


@dataclass
class Metric:
    """One measured metric: the report's timing and the raw query's."""

    key: str
    title: str
    rollups: Timing
    raw: Timing
    note: str = ""


def pick(rng: random.Random, items: Sequence[Any], count: int) -> list[Any]:
    """`count` items, distinct while there are enough."""
    if count <= len(items):
        return rng.sample(list(items), count)
    return [rng.choice(items) for _ in range(count)]


def compare(
    args: argparse.Namespace,
    key: str,
    title: str,
    calls: Sequence[Callable[[], Any]],
    raw_calls: Sequence[Callable[[], Any]],
    least: int = 3,
) -> Metric:
    """Time the report calls, then the raw queries (within the budget)."""
    rollups = measure(calls, least=1)
    # A raw query of many seconds is not run once more to warm up.
    raw = measure(raw_calls, args.raw_budget, least=least, warm=least >= 3)
    if args.explain:
        explain(title, calls[0])
        explain("raw: " + title, raw_calls[0])
    return Metric(key, title, rollups, raw)


def endpoint_metrics(world: World, args: argparse.Namespace, rng: random.Random) -> list[Metric]:
    """The endpoint's 24 h summary and response-time series."""
    from analytics import reports
    from analytics.reports import Items
    from healthmon.intervals import Window

    day = Window(world.end - DAY, world.end)
    chosen = pick(rng, world.endpoints, args.reps)
    raw_sql = RAW_SUMMARY.format(join="", where="c.endpoint_id = %s")
    summary = compare(
        args,
        "summary",
        "endpoint 24 h summary",
        [lambda e=e: reports.summary(Items("endpoint", [e]), day, world.end) for e in chosen],
        [raw_query(raw_sql, [e.pk, day.start, day.end]) for e in chosen],
    )
    summary.note = agreement(summary.rollups, summary.raw)
    series = compare(
        args,
        "series",
        "endpoint 24 h response-time series (5 min)",
        [lambda e=e: reports.response_time(Items("endpoint", [e]), day, "5m") for e in chosen],
        [raw_query(RAW_SERIES, [e.pk, day.start, day.end]) for e in chosen],
    )
    return [summary, series]


def project_metrics(world: World, args: argparse.Namespace, rng: random.Random) -> list[Metric]:
    """A project's 30-day uptime: the uptime route, and the SLA route (incidents only)."""
    from analytics import reports
    from analytics.reports import Items
    from healthmon.intervals import Window

    month = Window(world.end - timedelta(days=30), world.end)
    members: dict[Any, list[Any]] = {}
    for endpoint in world.endpoints:
        members.setdefault(endpoint.project_id, []).append(endpoint)
    projects = pick(rng, world.projects, args.reps)
    size = len(members[projects[0].pk])
    uptime_calls = [
        lambda p=p: reports.uptime(Items("project", members[p.pk], [p]), world.end, world.end)
        for p in projects
    ]
    sla_calls = [
        lambda p=p: reports.sla(Items("project", members[p.pk], [p]), month, world.end, None)
        for p in projects
    ]
    # Both routes read the project's daily rows: by turns, so that neither is timed on
    # pages the other has just read more often than the other (the goal compares them).
    uptime_timing, sla_timing = measure_pair(uptime_calls, sla_calls)
    raw_calls = [raw_query(RAW_UPTIME, [p.pk, month.start, month.end]) for p in projects]
    raw = measure(raw_calls, args.raw_budget)
    title = f"project 30-day uptime, %s route ({size} endpoints)"
    if args.explain:
        explain(title % "uptime", uptime_calls[0])
        explain(title % "SLA", sla_calls[0])
        explain("raw: " + title % "uptime", raw_calls[0])
    uptime = Metric("uptime", title % "uptime", uptime_timing, raw)
    uptime.note = uptime_note(uptime.rollups, uptime.raw)
    return [uptime, Metric("sla", title % "SLA", sla_timing, raw)]


def agreement(rollups: Timing, raw: Timing) -> str:
    """How the report's figures compare with the exact ones from raw checks."""
    pairs = list(zip(rollups.results, raw.results, strict=False))
    checks = sum(r[0]["checks"] == q[0][1] and r[0]["failures"] == q[0][2] for r, q in pairs)
    avg = max(abs(r[0]["avg_ms"] - q[0][3]) for r, q in pairs)
    p95 = sorted(abs(r[0]["p95_ms"] / q[0][7] - 1) for r, q in pairs)
    return (
        f"checks and failures equal to the raw counts in {checks}/{len(pairs)} runs; avg within "
        f"{avg:.4f} ms; histogram p95 vs exact percentile_cont: median {p95[len(p95) // 2]:.1%}, "
        f"max {p95[-1]:.1%} off"
    )


def uptime_note(rollups: Timing, raw: Timing) -> str:
    """The figures side by side: they differ by design."""
    uptime = [row[0]["uptime_30d"] for row in rollups.results]
    success = [float(row[0][0]) for row in raw.results]
    return (
        f"mean time-weighted 30-day uptime {sum(uptime) / len(uptime):.3f} %; mean raw "
        f"count-based success rate {sum(success) / len(success):.3f} % (its one raw day)"
    )


def org_metric(
    world: World, args: argparse.Namespace, orgs: Sequence[Any], reps: int, key: str, title: str
) -> Metric:
    """The 30-day summary of every endpoint of an organization, one row per endpoint."""
    from analytics import reports
    from analytics.reports import Items
    from healthmon.intervals import Window
    from monitoring.models import Endpoint

    month = Window(world.end - timedelta(days=30), world.end)
    members = {
        org.pk: list(Endpoint.objects.for_org(org).without_secrets().order_by("name"))
        for org in orgs
    }
    order = [orgs[n % len(orgs)] for n in range(reps)]
    sql = RAW_SUMMARY.format(join=ORG_JOIN, where="p.organization_id = %s")
    return compare(
        args,
        key,
        f"{title} ({len(members[order[0].pk]):,} endpoints)",
        [
            lambda o=o: reports.summary(Items("endpoint", members[o.pk]), month, world.end)
            for o in order
        ],
        [raw_query(sql, [o.pk, month.start, month.end]) for o in order],
        least=3 if key == "org" else 1,
    )


def move_projects(projects: Sequence[Any], org_of: Callable[[Any], Any]) -> None:
    """Give each project the organization id `org_of(project)` (in SQL: nothing else moves)."""
    from accounts.models import Project

    for project in projects:
        Project.objects.filter(pk=project.pk).update(organization_id=org_of(project))


# --- API -----------------------------------------------------------------------------------


def measure_api(world: World, org: Any, reps: int, rng: random.Random) -> Timing:
    """`GET /api/v1/analytics/summary` pages of 50 endpoints (24 h), as the org's owner."""
    from rest_framework.test import APIClient

    from accounts.tokens import issue_access_token
    from monitoring.models import Endpoint

    client = APIClient()
    client.credentials(
        HTTP_AUTHORIZATION=f"Bearer {issue_access_token(world.owners[org.pk]).token}"
    )
    count = Endpoint.objects.for_org(org).count()
    pages = -(-count // 50)

    def call(page: int) -> int:
        # No `to`: the last 24 h up to now, as a dashboard asks.
        response = client.get("/api/v1/analytics/summary", {"page": page})
        if response.status_code != 200:
            raise RuntimeError(
                f"/analytics/summary: HTTP {response.status_code}: {response.content[:300]!r}"
            )
        body = response.json()
        if body["count"] != count or len(body["results"]) != min(50, count - (page - 1) * 50):
            raise RuntimeError("/analytics/summary: unexpected page")
        return len(body["results"])

    return measure([lambda p=p: call(p) for p in pick(rng, range(1, pages + 1), reps)])
