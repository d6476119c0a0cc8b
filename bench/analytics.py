"""Analytics queries over rollups against the same figures from raw checks, on PostgreSQL.

A throwaway database (`healthmon_bench_analytics_<pid>`) gets one day of checks of 10,000
endpoints at a 30 s interval (28.8 M raw rows; `--scale` for fewer endpoints), their
5-minute, hourly and daily rollups, and 30 earlier days of hourly and daily rollups and
incidents (how the data is made: `bench/_analytics_data.py`). Tenants hold 1,000 endpoints
in projects of 100; for the all-in-one figures every project is moved to one organization.
At the start the 5-minute and hourly rows built with SQL are checked against
`analytics.services.rollups_rebuild` for a sample of endpoints (rolled back).

Then, per metric, the report function the API calls (`analytics.reports`) runs for varying
endpoints, projects or organizations; the database time (time spent in `cursor.execute`,
summed over the report's queries) and the wall time are printed as p50/p95, beside a
plain SQL query over `monitoring_checkresult` computing the same figure:

- endpoint 24 h summary: `reports.summary` for one endpoint (latency, rates and uptime
  over 24 h / 7 d / 30 d); raw: count, failures, avg/min/max and `percentile_cont`
  p50/p95/p99 of the endpoint's checks;
- endpoint 24 h response-time series: `reports.response_time`, 5-minute buckets; raw: the
  same per `date_bin('5 minutes')` with `percentile_cont(0.95)`;
- project 30-day uptime: `reports.uptime` grouped by project (100 endpoints: time-weighted
  uptime and success rates over 24 h / 7 d / 30 d), and `reports.sla` over 30 days (the
  time-weighted uptime alone), timed by turns per project, which goes first alternating
  (both read the project's daily rows: timed one after the other, the second read them
  warm); raw: the count-based success rate of the project's checks over 30 days (a naive
  uptime; raw checks exist for one day only, so the raw query reads 1/30 of what it would
  over a real month: the ratio is a lower bound);
- 30-day summary of all endpoints of an organization: `reports.summary` over every
  endpoint of a 1,000-endpoint tenant, then of one organization holding all of them; raw:
  per endpoint as for the endpoint summary (over the one day there is).

Also: `GET /api/v1/analytics/summary` through DRF's test client with a JWT, pages of 50
endpoints (24 h; wall time); ingest through `pipeline.checks.checks_record` in batches
of 200 outcomes for 200 distinct fresh endpoints, in one process and in two at once, then
in one process for endpoints that hold the raw day (results/s, rollup upkeep included);
retention: `analytics.services.retention_run` dropping the raw day's partitions (the raw
day is loaded into its days' partitions), beside the batched row delete it replaced, run
on an unpartitioned copy of the same rows for 20 s and extrapolated.

The data is bulk-loaded past PostgreSQL's cache, so each report's first read of its rows
comes from the OS's page cache (a server just restarted). `--prewarm` reads the reports'
tables into PostgreSQL's cache first (`pg_prewarm`), as on a server that wrote them itself
and has the README's `shared_buffers` (run it with `tuned_server.py`; the line it prints
says whether they fit).

    .venv/bin/python bench/analytics.py                  # 10,000 endpoints: 20-32 min, 17 GB
    .venv/bin/python bench/analytics.py --scale 0.01     # 100 endpoints: ~2 min
    .venv/bin/python bench/analytics.py --quick          # --scale 0.1, fewer runs: ~4 min
"""

import argparse
import contextlib
import os
import random
import sys
import time
import warnings
from collections.abc import Iterator, Sequence

import psycopg
from _analytics_data import Progress
from _analytics_reads import (
    Metric,
    Timing,
    endpoint_metrics,
    measure_api,
    move_projects,
    org_metric,
    project_metrics,
)
from _analytics_world import World, build, load_world, table_sizes, verify_rollups
from _analytics_writes import (
    BATCH,
    INGEST_ENDPOINTS,
    fold_start,
    ingester,
    measure_fold,
    measure_ingest,
    measure_retention,
    print_fold,
    print_ingest,
)
from _support import (
    CPUS,
    PG_ADMIN_URL,
    app_environment,
    database_tuning,
    load_average,
    migrate,
    percentile,
    pg_url,
    print_table,
    run_benchmark,
    setup_django,
    throwaway_database,
)

GOALS_MS = {
    "summary": 2.0,
    "series": 5.0,
    "uptime": 5.0,
    "sla": 5.0,
    "org": 100.0,
    "org_all": 100.0,
}
GOAL_RATIO = 20
GOAL_API_MS = 50.0


def parse_args() -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="1.0: 10,000 endpoints")
    parser.add_argument("--quick", action="store_true", help="--scale 0.1, fewer repetitions")
    parser.add_argument("--smoke", action="store_true", help="a run of a few seconds: does it work")
    parser.add_argument("--reps", type=int, default=100, help="per endpoint/project metric")
    parser.add_argument("--org-reps", type=int, default=20, help="per 1,000-endpoint tenant")
    parser.add_argument("--all-reps", type=int, default=5, help="for the all-in-one org")
    parser.add_argument("--api-reps", type=int, default=100, help="API pages per layout")
    parser.add_argument(
        "--raw-budget", type=float, default=30.0, help="seconds per raw comparator (>= 3 runs)"
    )
    parser.add_argument("--ingest-results", type=int, default=100_000, help="per ingest run")
    parser.add_argument("--skip-ingest", action="store_true")
    parser.add_argument("--skip-retention", action="store_true")
    parser.add_argument(
        "--only",
        choices=["ingest"],
        help="measure only this part (the data is still built, at --scale)",
    )
    parser.add_argument("--explain", action="store_true", help="print EXPLAIN ANALYZE plans")
    parser.add_argument(
        "--tuned",
        action="store_true",
        help="the README's PostgreSQL settings that need no restart, on the bench database",
    )
    parser.add_argument(
        "--prewarm",
        action="store_true",
        help="read the tables the reports read into PostgreSQL's cache first (pg_prewarm)",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep the database at the end")
    parser.add_argument("--reuse", metavar="NAME", help="measure a database kept by --keep")
    # Internal: run as one ingest process.
    parser.add_argument("--as-ingester", metavar="FILE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.smoke:
        args.scale, args.reps, args.org_reps, args.all_reps = 0.002, 2, 1, 1
        args.api_reps, args.raw_budget, args.ingest_results = 2, 2.0, 1_000
    elif args.quick:
        args.scale, args.reps, args.org_reps, args.all_reps = 0.1, 50, 10, 3
        args.api_reps, args.raw_budget, args.ingest_results = 50, 15.0, 40_000
    return args


# --- Database and data ----------------------------------------------------------------------


@contextlib.contextmanager
def database(args: argparse.Namespace) -> Iterator[str]:
    """A fresh database (dropped at the end unless --keep), or the one --reuse names."""
    if args.reuse:
        yield pg_url(args.reuse)
    elif args.keep:
        name = f"healthmon_bench_analytics_{os.getpid()}"
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        yield pg_url(name)
        print(f'\nkept: --reuse {name}  (drop it with: DROP DATABASE "{name}")')
    else:
        with throwaway_database("healthmon_bench_analytics") as url:
            yield url


# --- Output --------------------------------------------------------------------------------


def metric_rows(metrics: Sequence[Metric]) -> list[list[str]]:
    """One table row per metric."""
    rows = []
    for m in metrics:
        goal = GOALS_MS[m.key]
        ratio = m.raw.ms("db", 95) / m.rollups.ms("db", 95)
        ok = m.rollups.ms("db", 95) <= goal and ratio >= GOAL_RATIO
        rows.append(
            [
                m.title,
                str(len(m.rollups.db)),
                f"{m.rollups.ms('db', 50):.2f} / {m.rollups.ms('db', 95):.2f}",
                f"{percentile(m.rollups.queries, 50):.0f}",
                f"{m.rollups.ms('wall', 50):.2f} / {m.rollups.ms('wall', 95):.2f}",
                str(len(m.raw.db)),
                f"{m.raw.ms('db', 50):,.1f} / {m.raw.ms('db', 95):,.1f}",
                f"{m.raw.ms('db', 50) / m.rollups.ms('db', 50):,.0f}x / {ratio:,.0f}x",
                f"<= {goal:g} ms, >= {GOAL_RATIO}x",
                "meets" if ok else "MISSES",
            ]
        )
    return rows


def print_metrics(metrics: Sequence[Metric]) -> None:
    """The metric table and the notes under it."""
    headers = [
        "metric",
        "n",
        "db p50 / p95 ms",
        "queries",
        "wall p50 / p95 ms",
        "raw n",
        "raw db p50 / p95 ms",
        "raw / rollups p50 / p95",
        "goal (db p95)",
        "verdict",
    ]
    print()
    print_table(headers, metric_rows(metrics))
    for m in metrics:
        if m.note:
            print(f"  {m.title}: {m.note}")


def print_api(world: World, api: dict[str, Timing]) -> None:
    """Wall and database time of the API pages."""
    rows = []
    for name, timing in api.items():
        p95 = timing.ms("wall", 95)
        size = world.layout.tenant_size if name == "tenant" else world.layout.endpoints
        rows.append(
            [
                f"GET /analytics/summary, 24 h, page of 50 ({size:,}-endpoint org)",
                str(len(timing.wall)),
                f"{timing.ms('wall', 50):.1f} / {p95:.1f}",
                f"{timing.ms('db', 50):.1f} / {timing.ms('db', 95):.1f}",
                f"{percentile(timing.queries, 50):.0f}",
                "meets" if p95 <= GOAL_API_MS else "MISSES",
            ]
        )
    print()
    print_table(
        [
            "API",
            "n",
            "wall p50 / p95 ms",
            "db p50 / p95 ms",
            "queries",
            f"goal p95 <= {GOAL_API_MS:g} ms",
        ],
        rows,
    )


def settle_rollups() -> None:
    """VACUUM the rollup tables, as their autovacuum settings (analytics migration 0004) do
    within a minute of the rows `verify_rollups` rewrote and rolled back: until then their
    pages are not all-visible, and the index-only reads fetch those rows from the heap."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM analytics_rollup_5m, analytics_rollup_1h, analytics_rollup_1d")


# What the reports read, besides the raw checks (their comparators' table is left cold).
REPORT_TABLES = (
    "analytics_rollup_5m",
    "analytics_rollup_1h",
    "analytics_rollup_1d",
    "monitoring_statuschange",
    "monitoring_incident",
    "monitoring_endpoint",
    "accounts_project",
    "monitoring_maintenancewindow",
)


def prewarm() -> str:
    """Read the reports' tables and their indexes into PostgreSQL's shared buffers
    (`pg_prewarm`), as on a server that wrote them itself: ingest and the fold write the
    rollups through its cache, where this script bulk-loads them past it (`COPY` and
    `INSERT ... SELECT` use a small ring of buffers). A line saying what was read."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        cursor.execute(
            "SELECT sum(pg_prewarm(c.oid)) * current_setting('block_size')::bigint,"
            " pg_size_bytes(current_setting('shared_buffers'))"
            " FROM pg_class c WHERE c.relkind IN ('r', 'i')"
            " AND (c.oid = ANY(%(t)s::regclass[]) OR c.oid IN"
            " (SELECT indexrelid FROM pg_index WHERE indrelid = ANY(%(t)s::regclass[])))",
            {"t": list(REPORT_TABLES)},
        )
        read, buffers = (int(value) for value in cursor.fetchone())
    fits = "fits in" if read <= buffers else "DOES NOT FIT in"
    return (
        f"prewarmed: {read / 2**20:,.0f} MB of the reports' tables and indexes "
        f"({fits} shared_buffers, {buffers / 2**20:,.0f} MB); raw checks left cold"
    )


def read_metrics(world: World, args: argparse.Namespace, progress: Progress) -> None:
    """Measure and print the read metrics and the API (everything but the writes)."""
    compared = verify_rollups(world)
    progress.say(f"SQL-built rollups equal rollups_rebuild's ({compared:,} rows compared)")
    settle_rollups()
    progress.say("rollup tables vacuumed (the check above rewrote rows of the raw day)")
    if args.prewarm:
        progress.say(prewarm())
    rng = random.Random(args.seed)
    metrics = endpoint_metrics(world, args, rng)
    metrics += project_metrics(world, args, rng)
    progress.say("endpoint and project metrics measured")
    metrics.append(
        org_metric(world, args, world.tenants, args.org_reps, "org", "org 30-day summary")
    )
    progress.say("tenant metric measured")
    api = {"tenant": measure_api(world, world.tenants[0], args.api_reps, rng)}
    tenants = {p.pk: p.organization_id for p in world.projects}
    move_projects(world.projects, lambda project: world.all_org.pk)
    try:
        metrics.append(
            org_metric(
                world,
                args,
                [world.all_org],
                args.all_reps,
                "org_all",
                "org 30-day summary, all in one org",
            )
        )
        api["all"] = measure_api(world, world.all_org, args.api_reps, rng)
    finally:
        move_projects(world.projects, lambda project: tenants[project.pk])
    progress.say("all-in-one metric and API measured")
    print_metrics(metrics)
    print_api(world, api)


def benchmark(args: argparse.Namespace) -> None:
    """Build or reuse the data, then measure and print."""
    began = time.perf_counter()
    # No collected static files here: whitenoise says so once per middleware set-up.
    warnings.filterwarnings("ignore", message="No directory at", category=UserWarning)
    print(f"CPUs: {CPUS}; load average before the run: {load_average()}")
    with database(args) as url:
        print(database_tuning(url, args.tuned))
        extra = {"ALLOWED_HOSTS": "testserver"}
        if args.reuse:
            with psycopg.connect(url) as conn:
                extra["FIELD_ENCRYPTION_KEYS"] = conn.execute(
                    "SELECT meta FROM bench_meta"
                ).fetchone()[0]["keys"]
        app_environment(url, **extra)
        if not args.reuse:
            migrate()
        setup_django()
        from django.db import connection

        if not args.reuse:
            build(url, args.scale, began)
        world = load_world()
        # The fold's watermark at the data's end, where a running fold keeps it near now:
        # reads scan their tails, ingest writes the five-minute tier (`analytics.fold`).
        fold_start(world)
        progress = Progress(began)
        if args.reuse:
            print(f"layout: {world.layout.describe()}")
        print()
        print_table(["table", "rows", "size with indexes", "of which indexes"], table_sizes())
        print()
        if args.only != "ingest":
            read_metrics(world, args, progress)
        ingest = []
        if not args.skip_ingest:
            for processes in (1, 2):
                ingest.append(measure_ingest(args, world, processes))
                progress.say(f"ingest with {processes} process(es) measured")
            # Endpoints in steady state hold history; these have the raw day (and are not
            # read again: the new checks come an hour after it).
            size = min(INGEST_ENDPOINTS, len(world.endpoints) // BATCH * BATCH)
            if size:
                ids = [str(e.pk) for e in world.endpoints[:size]]
                groups = [[ids[g : g + BATCH] for g in range(0, size, BATCH)]]
                ingest.append(measure_ingest(args, world, 1, groups))
                progress.say("ingest into endpoints with history measured")
            fold = measure_fold(world, sum(run["results"] for run in ingest))
            progress.say("the fold of the ingested checks measured")
            print_ingest(ingest, fold)
            print()
            print_fold(fold)
        if not args.skip_retention and args.only is None:
            retention = measure_retention(url, world, progress)
            print()
            print_table(["retention", "time", "rows"], retention)
        print(f"\ntotal time {time.perf_counter() - began:.0f} s")
        connection.close()


def main() -> int:
    """Run the benchmark, or one ingest process of it."""
    args = parse_args()
    if args.as_ingester:
        return ingester(args.as_ingester)
    return run_benchmark(benchmark, args)


if __name__ == "__main__":
    sys.exit(main())
