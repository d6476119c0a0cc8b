"""A public status page and its summary.json under load, beside a bare Django view, and the
page rendered cold.

Serves the app with gunicorn (2 sync workers by default, production settings) over a
throwaway PostgreSQL database, with Django's cache in Redis as in production (`--cache-url`;
`locmemcache://` for the `make run` default), and loads three routes with wrk, printing
requests/s and latency p50/p99 of each, then the ratios to the bare view (goal >= 0.7) and the
p99 goal (<= 20 ms):

1. `GET /healthz`                    a bare view answering without the database or the cache;
2. `GET /status/<slug>`              a public page of 50 components in 5 sections, 90 days of
                                     daily uptime bars each, response-time sparklines, an open
                                     incident with updates, 14 days of history;
3. `GET /status/<slug>/summary.json` the same page as Statuspage-style JSON.

Then the page rendered cold: the cache emptied before each of N renders through Django's
test client in one process loaded as gunicorn loads it (`healthmon.wsgi`) that has served the
page once (middleware, selectors, template), median and p95 (goal <= 50 ms).

The database is dropped at the end, also on an error or Ctrl-C. Needs PostgreSQL on
127.0.0.1:5432, Redis on 127.0.0.1:6379 (unless `--cache-url locmemcache://`) and wrk.

    .venv/bin/python bench/status_pages.py [--components 50] [--days 90] [--duration 10]
    .venv/bin/python bench/status_pages.py --smoke   # a run of a few seconds: does it work
"""

import argparse
import os
import re
import shutil
import subprocess
import sys

from _support import BIN, ROOT, free_port, run_benchmark, throwaway_database
from api_auth import add_load_arguments, app_env, get, run_wrk, serve
from pings import manage_shell

GOAL = 0.7
P99_GOAL_MS = 20.0
COLD_GOAL_MS = 50.0
SLUG = "bench-status"
# What every browser and feed reader sends: the page's gzip copy is served (made once per
# render), as a reader gets it.
BROWSER = ("Accept-Encoding: gzip",)

SETUP = """
import random
from datetime import timedelta

import django
from django.utils import timezone
from accounts.services import organization_create
from analytics.models import DayRollup, HourRollup
from monitoring.models import Endpoint, Incident, IncidentUpdate
from monitoring.services import endpoint_create
from monitoring.validation import validate_config
from statuspages.models import Component, Section, StatusPage

random.seed(7)
org, project = organization_create(name="Bench")
config = validate_config("http", {{}})
endpoints = [
    endpoint_create(
        project=project, name=f"Service {{i}}", type="http",
        target=f"https://service{{i}}.example.com/health", interval_seconds=60,
        timeout_seconds=10, config=config,
    )
    for i in range({components})
]
Endpoint.objects.update(status="up")
page = StatusPage.objects.create(
    organization=org, name="Bench", slug="{slug}", title="Bench status",
    uptime_days={days}, show_response_times=True,
)
sections = [Section.objects.create(page=page, name=f"Area {{n}}", position=n) for n in range(5)]
Component.objects.bulk_create(
    Component(page=page, section=sections[i % 5], endpoint=e, position=i)
    for i, e in enumerate(endpoints)
)
now = timezone.now()
today = now.replace(hour=0, minute=0, second=0, microsecond=0)
hour = now.replace(minute=0, second=0, microsecond=0)
days, hours = [], []
for e in endpoints:
    for d in range({days}):
        failures = random.choice([0] * 20 + [1, 3, 60])
        days.append(DayRollup(
            endpoint=e, bucket=today - timedelta(days=d), count=1440, failures=failures,
            timed=1440 - failures, sum_ms=(1440 - failures) * 120.0, min_ms=40.0, max_ms=900.0,
        ))
    for h in range(24):
        hours.append(HourRollup(
            endpoint=e, bucket=hour - timedelta(hours=h), count=60, failures=0, timed=60,
            sum_ms=60 * random.uniform(80, 200), min_ms=40.0, max_ms=900.0,
        ))
DayRollup.objects.bulk_create(days, batch_size=5000)
HourRollup.objects.bulk_create(hours, batch_size=5000)
# An open incident with two updates, and a fortnight of resolved ones.
Endpoint.objects.filter(pk=endpoints[3].pk).update(status="down")
open_incident = Incident.objects.create(
    organization=org, endpoint=endpoints[3], started_at=now - timedelta(minutes=20),
    cause="connection refused",
)
for state in ("investigating", "identified"):
    IncidentUpdate.objects.create(
        incident=open_incident, state=state, message="We are on it.",
        message_html="<p>We are on it.</p>",
    )
for d in range(1, 14):
    Incident.objects.create(
        organization=org, endpoint=endpoints[d], started_at=now - timedelta(days=d, hours=1),
        resolved_at=now - timedelta(days=d), state="resolved", cause="timeout",
    )
print("BENCH_DJANGO=" + django.get_version())
"""

COLD = """
import statistics
import time
import healthmon.wsgi  # the web process as gunicorn loads it (its garbage collector settled)
from django.core.cache import cache
from django.test import Client
from statuspages.cache import local_forget
client = Client(HTTP_X_FORWARDED_PROTO="https", HTTP_HOST="127.0.0.1")
client.get("/status/{slug}")  # a process that served once: templates compiled, modules loaded
times = []
for _ in range({renders}):
    cache.clear()
    local_forget()  # what this process keeps too: nothing cached anywhere
    started = time.perf_counter()
    response = client.get("/status/{slug}")
    times.append((time.perf_counter() - started) * 1000)
    assert response.status_code == 200, response.status_code
times.sort()
print(f"BENCH_MEDIAN={{statistics.median(times)}}")
print(f"BENCH_P95={{times[int(0.95 * (len(times) - 1))]}}")
print(f"BENCH_BYTES={{len(response.content)}}")
"""


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--components", type=int, default=50, help="components on the page")
    parser.add_argument("--days", type=int, default=90, help="uptime days shown (30-365)")
    parser.add_argument("--renders", type=int, default=40, help="cold renders timed")
    add_load_arguments(parser)
    parser.set_defaults(cache_url="redis://127.0.0.1:6379/7")
    parser.add_argument("--smoke", action="store_true", help="a run of a few seconds: does it work")
    args = parser.parse_args()
    if args.smoke:
        args.duration, args.warmup, args.renders = 1, 0, 3
    return args


def figures(out: str) -> dict[str, str]:
    return dict(re.findall(r"^BENCH_(\w+)=(\S+)$", out, re.M))


def benchmark(args: argparse.Namespace) -> None:
    with throwaway_database("healthmon_bench_status") as database_url:
        env = app_env(database_url, args.cache_url)
        subprocess.run(
            [str(BIN / "python"), "manage.py", "migrate", "--noinput", "-v0"],
            cwd=ROOT,
            env=env,
            check=True,
        )
        subprocess.run(  # the page links hashed static files, as in a deployment
            [str(BIN / "python"), "manage.py", "collectstatic", "--noinput", "-v0"],
            cwd=ROOT,
            env=env,
            check=True,
        )
        setup = SETUP.format(components=args.components, days=args.days, slug=SLUG)
        version = figures(manage_shell(env, setup))["DJANGO"]
        measure(args, env, version)


def measure(args: argparse.Namespace, env: dict[str, str], version: str) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    routes = [
        ("bare view", f"{base}/healthz"),
        ("status page", f"{base}/status/{SLUG}"),
        ("summary.json", f"{base}/status/{SLUG}/summary.json"),
    ]
    results = {}
    with serve(env, args.workers, port):
        for name, url in routes:
            status, body = get(url)
            if status != 200:
                raise RuntimeError(f"{name}: expected HTTP 200, got {status}: {body[:300]!r}")
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"Python {sys.version.split()[0]}, Django {version}, load average {load}")
        print(f"gunicorn: {args.workers} sync workers; cache {args.cache_url}; ", end="")
        print(f"{args.components} components x {args.days} days; ", end="")
        print(f"wrk -t{args.threads} -c{args.connections} -d{args.duration}s\n", flush=True)
        for name, url in routes:
            if args.warmup:
                run_wrk(args, url, args.warmup, headers=BROWSER)
            results[name] = run_wrk(args, url, args.duration, headers=BROWSER)
    print(f"{'route':<16}{'req/s':>10}{'p50 ms':>10}{'p99 ms':>10}{'errors':>10}{'x bare':>10}")
    bare = results["bare view"]["rps"]
    for name, r in results.items():
        ratio = r["rps"] / bare
        print(f"{name:<16}{r['rps']:>10.1f}{r['p50']:>10.2f}{r['p99']:>10.2f}", end="")
        print(f"{r['errors']:>10}{ratio:>10.2f}")
        if r["errors"]:
            raise RuntimeError(f"{name}: {r['errors']} non-2xx answers: figures not valid")
    print()
    for name in ("status page", "summary.json"):
        r = results[name]
        ratio = r["rps"] / bare
        speed = "meets" if ratio >= GOAL else "BELOW"
        tail = "meets" if r["p99"] <= P99_GOAL_MS else "ABOVE"
        print(f"{name}: {ratio:.2f} x bare ({speed} the goal >= {GOAL}), ", end="")
        print(f"p99 {r['p99']:.2f} ms ({tail} the goal <= {P99_GOAL_MS:.0f} ms)")
    cold(args, env)


def cold(args: argparse.Namespace, env: dict[str, str]) -> None:
    """The page rendered with the cache emptied before each render, in one process."""
    out = figures(manage_shell(env, COLD.format(renders=args.renders, slug=SLUG)))
    median, p95 = float(out["MEDIAN"]), float(out["P95"])
    verdict = "meets" if p95 <= COLD_GOAL_MS else "ABOVE"
    print(f"cold render ({args.components} components x {args.days} days, ", end="")
    print(f"{int(out['BYTES']) // 1024} kB): median {median:.1f} ms, p95 {p95:.1f} ms ", end="")
    print(f"({verdict} the goal <= {COLD_GOAL_MS:.0f} ms), over {args.renders} renders")


def main() -> int:
    args = parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk is not on PATH: install it with `apt-get install -y wrk` (Debian/Ubuntu).")
    return run_benchmark(benchmark, args)


if __name__ == "__main__":
    sys.exit(main())
