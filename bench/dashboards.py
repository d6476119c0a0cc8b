"""Server time of the dashboard pages on PostgreSQL, with their query counts.

A throwaway database `healthmon_dash_<pid>` is created, migrated and filled through the real
ingest path (`checks_record`, which maintains the rollups): one organization with N endpoints
(default 100, one overview page) checked every 60 s for 24 hours, and one endpoint checked
every 30 s (2,880 checks) with a 20-minute incident. Then each page is rendered in-process by
Django's test client (middleware, views, queries, templates and SVG charts: everything but
the network), warmed up, and measured R times:

- `/` overview, a page of 100 endpoints with a sparkline each, for 24 h, 7 d and 30 d, with
  its figures computed on every request (`DASHBOARD_CACHE_SECONDS=0`), and once more with
  them kept in the cache as a deployment does (30 s): the cost of a page everyone shares;
- `/endpoints/<id>`, the 30 s endpoint, for 24 h and 30 d;
- `/compare` of 10 endpoints over 24 h.

Prints p50 / p95 / max of the wall time in ms, the median CPU time of this process per page
(what a gunicorn worker spends on it: less swayed by other work on the machine than wall
time; PostgreSQL's own CPU is not in it), queries per page and HTML size, each page beside
its budgets: at most `queries` statements, and at most `cpu` ms of CPU (p50) on this 2-core
machine (issue 26 halved the load mix's dashboard CPU; the budgets keep it there). A page
over its query budget fails the script (also with `--smoke`); over its CPU budget, it fails
unless `--smoke` (whose few endpoints and runs mean nothing). `--profile N` prints each
page's N costliest functions (cProfile with a CPU clock, 10 more requests each). Needs
PostgreSQL on 127.0.0.1:5432 (user postgres, trust auth). The database is dropped at the end.

    .venv/bin/python bench/dashboards.py [--endpoints 100] [--runs 30] [--quick] [--profile 25]
"""

import argparse
import cProfile
import io
import pstats
import subprocess
import sys
import time
from datetime import timedelta

from _support import (
    BIN,
    ROOT,
    app_environment,
    load_average,
    migrate,
    percentile,
    print_table,
    run_benchmark,
    setup_django,
    throwaway_database,
)

BATCH = 500
# Budgets per page: (statements, CPU ms p50 of this process) with the default 100 endpoints.
# Statements are counted where they are executed (session and user included), as many as
# the pages sent before issue 26; CPU is about 1.5x what they took after it on this machine
# under a load average of 10-14 (other sessions at work: it was 20-30% less on the pages of
# the load mix, in-process), so that a page doing half as much again fails at such a load.
BUDGETS = {
    "overview 24 h": (17, 150),
    "overview 7 d": (16, 150),
    "overview 30 d": (15, 150),
    "endpoint page 24 h": (20, 80),
    "endpoint page 30 d": (19, 80),
    "compare 10": (15, 130),
    "overview 24 h cached": (9, 45),
}


def _fill(endpoints: int) -> tuple[object, list[object], object]:
    """The organization's owner, its endpoints, and the endpoint checked every 30 s."""
    from django.utils import timezone

    from accounts.models import User
    from accounts.services import organization_create
    from monitoring.checks import CheckOutcome
    from monitoring.models import Endpoint
    from monitoring.probes import ProbeResult
    from monitoring.services import endpoint_create
    from monitoring.validation import validate_config
    from pipeline.checks import checks_record

    org, project = organization_create(name="Bench")
    owner = User.objects.create_user(
        "bench@example.com", "bench-password-0001", organization=org, role="owner"
    )
    now = timezone.now()
    start = now - timedelta(hours=24, minutes=5)
    made = []
    for i in range(endpoints):
        endpoint = endpoint_create(
            project=project,
            name=f"Service {i:04d}",
            type="http",
            target=f"https://service{i}.example.com/health",
            interval_seconds=30 if i == 0 else 60,
            timeout_seconds=10,
            config=validate_config("http", {}),
        )
        made.append(endpoint)
    # Watched from the start of the data, as if created a day ago.
    Endpoint.objects.update(created_at=start, watch_started_at=start)
    outcomes = []
    t0 = time.perf_counter()
    stored = 0
    for n, endpoint in enumerate(made):
        step = 30 if n == 0 else 60
        moment = start
        while moment < now:
            minutes_ago = (now - moment).total_seconds() / 60
            ok = not (n == 0 and 300 <= minutes_ago < 320)
            ms = 40 + (hash((n, moment.minute)) % 120)
            result = ProbeResult(
                ok=ok,
                response_time_ms=float(ms),
                error="" if ok else "connection refused",
                error_detail="" if ok else "ConnectionRefusedError: Connect call failed",
                started_at=moment.timestamp(),
            )
            outcomes.append(CheckOutcome(endpoint.pk, moment, moment, result))
            moment += timedelta(seconds=step)
            if len(outcomes) >= BATCH:
                stored += checks_record(outcomes=outcomes)
                outcomes = []
    if outcomes:
        stored += checks_record(outcomes=outcomes)
    print(f"stored {stored:,} checks in {time.perf_counter() - t0:.0f} s")
    return owner, made, made[0]


def _measure(
    client: object, url: str, runs: int, cache_seconds: int = 0, profile: int = 0
) -> list[object]:
    """Warm up, then time `runs` requests; the overview's figures are computed on every one
    (`DASHBOARD_CACHE_SECONDS=0`) unless `cache_seconds` keeps them, as in a deployment."""
    from django.test.utils import override_settings

    with override_settings(DASHBOARD_CACHE_SECONDS=cache_seconds):
        figures = _timed(client, url, runs)
        if profile:
            _profile(client, url, profile)
    return figures


def _counted(client: object, url: str) -> tuple[object, int]:
    """One request, and the statements it sent (counted where they are executed: the
    test client's request signals clear `connection.queries` on the way)."""
    from django.db import connection

    sent: list[str] = []

    def count(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        sent.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count):
        response = client.get(url)
    return response, len(sent)


def _timed(client: object, url: str, runs: int) -> list[object]:
    for _ in range(3):
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
    times, cpu = [], []
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        client.get(url)
        cpu.append((time.process_time() - c0) * 1000)
        times.append((time.perf_counter() - t0) * 1000)
    response, queries = _counted(client, url)
    return [
        percentile(times, 50),
        percentile(times, 95),
        max(times),
        percentile(cpu, 50),
        queries,
        len(response.content) / 1024,
    ]


def _profile(client: object, url: str, top: int) -> None:
    """The page's costliest functions over 10 requests, by CPU time of their own."""
    profiler = cProfile.Profile(time.process_time)
    profiler.enable()
    for _ in range(10):
        client.get(url)
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumtime").print_stats(top)
    print(f"\n--- profile of {url} (10 requests, CPU seconds)\n{out.getvalue()}")


def _judge(rows: list[list[object]], smoke: bool) -> list[str]:
    """Each page against its budgets, as table cells; the pages over them."""
    over = []
    for row in rows:
        queries, cpu = row[5], row[4]
        allowed_queries, allowed_cpu = BUDGETS[row.pop()]
        verdicts = []
        if queries > allowed_queries:
            over.append(f"{row[0]}: {queries} queries, budget {allowed_queries}")
            verdicts.append("queries OVER")
        if cpu > allowed_cpu:
            if not smoke:
                over.append(f"{row[0]}: CPU {cpu:.1f} ms, budget {allowed_cpu} ms")
            verdicts.append("CPU OVER")
        row[1:5] = [f"{value:.1f}" for value in row[1:5]]
        row[6] = f"{row[6]:.0f}"
        row += [f"{allowed_queries} / {allowed_cpu}", ", ".join(verdicts) or "within"]
    return over


def benchmark(args: argparse.Namespace) -> None:
    endpoints = 3 if args.smoke else 20 if args.quick else args.endpoints
    runs = 2 if args.smoke else 10 if args.quick else args.runs
    with throwaway_database("healthmon_dash") as url:
        app_environment(url, ALLOWED_HOSTS="testserver")
        migrate()
        subprocess.run(  # the pages link hashed static files, as in a deployment
            [str(BIN / "python"), "manage.py", "collectstatic", "--noinput", "-v0"],
            cwd=ROOT,
            check=True,
        )
        setup_django()
        from django.test import Client

        owner, made, busy = _fill(endpoints)
        client = Client()
        client.force_login(owner)
        compared = "&".join(f"endpoints={endpoint.pk}" for endpoint in made[:10])
        pages = [
            (f"overview, {endpoints} endpoints, 24 h", "/?period=24h", "overview 24 h"),
            (f"overview, {endpoints} endpoints, 7 d", "/?period=7d", "overview 7 d"),
            (f"overview, {endpoints} endpoints, 30 d", "/?period=30d", "overview 30 d"),
            (
                "endpoint page, 30 s checks, 24 h",
                f"/endpoints/{busy.pk}?period=24h",
                "endpoint page 24 h",
            ),
            (
                "endpoint page, 30 s checks, 30 d",
                f"/endpoints/{busy.pk}?period=30d",
                "endpoint page 30 d",
            ),
            (f"compare {min(10, endpoints)} endpoints, 24 h", f"/compare?{compared}", "compare 10"),
        ]
        profile = args.profile
        rows = [
            [name, *_measure(client, path, runs, profile=profile), budget]
            for name, path, budget in pages
        ]
        rows.append(
            [
                f"overview, {endpoints} endpoints, 24 h, figures cached (30 s)",
                *_measure(client, "/?period=24h", runs, cache_seconds=30, profile=profile),
                "overview 24 h cached",
            ]
        )
        over = _judge(rows, args.smoke)
        print(f"\nserver time per page, {runs} runs each (ms); load average {load_average()}")
        headers = ["page", "p50", "p95", "max", "CPU p50", "queries", "KB"]
        print_table([*headers, "budget: queries / CPU ms", "verdict"], rows)
        if over:
            print("over budget: " + "; ".join(over), file=sys.stderr)
            raise RuntimeError(f"{len(over)} page(s) over budget")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--endpoints", type=int, default=100)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="20 endpoints, 10 runs")
    parser.add_argument("--smoke", action="store_true", help="a run of a few seconds: does it work")
    parser.add_argument(
        "--profile", type=int, default=0, metavar="N", help="print each page's N costliest calls"
    )
    return run_benchmark(benchmark, parser.parse_args())


if __name__ == "__main__":
    raise SystemExit(main())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--endpoints", type=int, default=100)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="20 endpoints, 10 runs")
    parser.add_argument("--smoke", action="store_true", help="a run of a few seconds: does it work")
    return run_benchmark(benchmark, parser.parse_args())


if __name__ == "__main__":
    raise SystemExit(main())
