"""Heartbeat pings/s through gunicorn, beside a bare Django view, and pings lost.

Serves the app with gunicorn (2 sync workers by default) over a throwaway PostgreSQL database
and loads two routes with wrk, printing requests/s and latency p50/p99 of each, the ratio
pings/bare (goal >= 0.5), p99 at 1,000 pings/s (goal <= 25 ms), and the lost count: pings
answered `OK` minus pings stored.

1. `GET /healthz`          a bare view answering without the database (the stack's ceiling);
2. `GET /ping/<uuid>`      success pings, round-robin over N heartbeats (a wrk Lua script),
                           so no heartbeat passes PING_RATE_PER_SECOND (left at its default),
                           flat out, then paced to at most 1,000/s (each wrk connection
                           pausing between its requests).

The heartbeats are `up`, as a healthy fleet is: each ping is the one-statement path. At the
end the deadline loop processes what the load left pending, timed (pings/s it turns into
checks), and none may be left.

A 429 or any non-2xx counts as an error, not as a ping answered. The database is dropped at
the end, also on an error or Ctrl-C. Needs PostgreSQL on 127.0.0.1:5432 and wrk.

    .venv/bin/python bench/pings.py [--heartbeats 1000] [--duration 10] [--connections 16]
    .venv/bin/python bench/pings.py --smoke   # a run of a few seconds: does it work
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _support import BIN, ROOT, free_port, run_benchmark, throwaway_database
from api_auth import add_load_arguments, app_env, get, run_wrk, serve

GOAL = 0.5
RATE = 1000  # pings/s of the paced run
P99_GOAL_MS = 25.0

SETUP = """
from datetime import timedelta

import django
from django.utils import timezone
from accounts.services import organization_create
from monitoring.models import Endpoint
from monitoring.services import endpoint_create
from monitoring.validation import validate_config

org, project = organization_create(name="Bench")
config = validate_config("heartbeat", {{"grace_seconds": 3600}})
for i in range({count}):
    endpoint_create(
        project=project, name=f"Job {{i}}", type="heartbeat", target="",
        config=config, failure_threshold=1,
    )
# A healthy fleet: every heartbeat pinged before, so `up` with its deadlines a period on.
now = timezone.now()
Endpoint.objects.update(
    status="up", last_checked_at=now, streak_ok=True, streak_length=1, streak_started_at=now,
    late_after=now + timedelta(days=1), alert_after=now + timedelta(days=1, hours=1),
)
for key in Endpoint.objects.values_list("ping_key", flat=True):
    print(f"BENCH_KEY={{key}}")
print("BENCH_DJANGO=" + django.get_version())
"""

COUNT = """
from monitoring.models import Ping
print(f"BENCH_PINGS={Ping.objects.count()}")
"""

# What beat does every 2 s, timed, run until nothing is pending: the pings become checks.
PROCESS = """
import time
from django.utils import timezone
from monitoring.models import CheckResult, Ping
from pipeline.heartbeats import heartbeat_deadlines_run
pending = Ping.objects.filter(pending=True).count()
started = time.perf_counter()
for _ in range(20):  # each run processes for at most PROCESS_SECONDS, then flips
    heartbeat_deadlines_run(now=timezone.now())
    if not Ping.objects.filter(pending=True).exists():
        break
print(f"BENCH_SECONDS={time.perf_counter() - started}")
print(f"BENCH_PENDING={pending}")
print(f"BENCH_LEFT={Ping.objects.filter(pending=True).count()}")
print(f"BENCH_CHECKS={CheckResult.objects.count()}")
"""

LUA = """
local keys = {%s}
local i = 0
request = function()
  i = i + 1
  return wrk.format("GET", "/%s/" .. keys[(i %% #keys) + 1])
end
"""
# The same requests at a fixed rate: each connection waits this long between its requests.
PACED = """
delay = function()
  return %d
end
"""


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heartbeats", type=int, default=1000, help="heartbeats pinged")
    add_load_arguments(parser)
    parser.add_argument("--quick", action="store_true", help="short run: 3 s per route")
    parser.add_argument("--smoke", action="store_true", help="a run of a few seconds: does it work")
    args = parser.parse_args()
    if args.quick:
        args.duration, args.warmup = 3, 1
    if args.smoke:
        # enough heartbeats that none passes its rate limit at ~1,500 pings/s
        args.duration, args.warmup, args.heartbeats = 1, 0, 500
    return args


def manage_shell(env: dict[str, str], code: str) -> str:
    return subprocess.run(
        [str(BIN / "python"), "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env=env,
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    ).stdout


def stored_pings(env: dict[str, str]) -> int:
    return int(re.search(r"^BENCH_PINGS=(\d+)$", manage_shell(env, COUNT), re.M).group(1))


def benchmark(args: argparse.Namespace) -> None:
    with throwaway_database("healthmon_bench_pings") as database_url:
        env = app_env(database_url, args.cache_url)
        subprocess.run(
            [str(BIN / "python"), "manage.py", "migrate", "--noinput", "-v0"],
            cwd=ROOT,
            env=env,
            check=True,
        )
        out = manage_shell(env, SETUP.format(count=args.heartbeats))
        keys = re.findall(r"^BENCH_KEY=(\S+)$", out, re.M)
        django_version = re.search(r"^BENCH_DJANGO=(\S+)$", out, re.M).group(1)
        with tempfile.TemporaryDirectory(prefix="bench-pings-") as folder:
            script = Path(folder, "pings.lua")
            script.write_text(LUA % (", ".join(f'"{key}"' for key in keys), "ping"))
            floor = Path(folder, "floor.lua")
            floor.write_text(LUA % (", ".join(f'"{key}"' for key in keys), "floor"))
            measure(args, env, keys, (script, floor), django_version)


def measure(
    args: argparse.Namespace,
    env: dict[str, str],
    keys: list[str],
    scripts: tuple[Path, Path],
    version: str,
) -> None:
    script, floor_script = scripts
    port = free_port()
    env = {**env, "PYTHONPATH": str(ROOT / "bench")}
    base = f"http://127.0.0.1:{port}"
    paced = script.with_name("paced.lua")
    # Each connection pauses between its requests (wrk's `delay`): 16 connections pausing
    # 11 ms, plus ~5 ms answering, offer ~1,000 pings/s. More connections only queue up in
    # front of the 2 sync workers, which take one connection at a time.
    paced.write_text(script.read_text() + PACED % (1000 * args.connections // RATE - 5))
    with serve(env, args.workers, port, app="_pings_floor:application"):
        for url in (f"{base}/healthz", f"{base}/ping/{keys[0]}", f"{base}/floor/{keys[0]}"):
            status, body = get(url)
            if status != 200:
                raise RuntimeError(f"{url}: expected HTTP 200, got {status}: {body[:300]!r}")
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"Python {sys.version.split()[0]}, Django {version}, load average {load}")
        print(f"gunicorn: {args.workers} sync workers; {len(keys)} heartbeats, all up; ", end="")
        print(f"wrk -t{args.threads} -c{args.connections} -d{args.duration}s\n", flush=True)
        if args.warmup:
            run_wrk(args, f"{base}/healthz", args.warmup)
            run_wrk(args, f"{base}/", args.warmup, script=script)
        bare = run_wrk(args, f"{base}/healthz", args.duration)
        floor = run_wrk(args, f"{base}/", args.duration, script=floor_script)
        time.sleep(1)  # let the requests wrk left in flight finish
        before = stored_pings(env)
        pings = run_wrk(args, f"{base}/", args.duration, script=script)
        steady = run_wrk(args, f"{base}/", args.duration, script=paced)
        time.sleep(1)
        stored = stored_pings(env) - before
    print(f"{'route':<24}{'req/s':>10}{'p50 ms':>10}{'p99 ms':>10}{'errors':>10}")
    rows = (
        ("bare view", bare),
        ("floor: one INSERT", floor),
        ("pings, flat out", pings),
        (f"pings at <= {RATE}/s", steady),
    )
    for name, r in rows:
        print(f"{name:<24}{r['rps']:>10.1f}{r['p50']:>10.2f}{r['p99']:>10.2f}{r['errors']:>10}")
    ratio = pings["rps"] / bare["rps"]
    verdict = "meets" if ratio >= GOAL else "BELOW"
    print(f"\npings/bare: {ratio:.2f}  ({verdict} the goal >= {GOAL})")
    print(f"floor/bare: {floor['rps'] / bare['rps']:.2f} (a durable write's cost here), ", end="")
    print(f"pings/floor: {pings['rps'] / floor['rps']:.2f} (healthmon's own code)")
    verdict = "meets" if steady["p99"] <= P99_GOAL_MS else "ABOVE"
    print(f"p99 at {steady['rps']:.0f} pings/s: {steady['p99']:.2f} ms", end="")
    print(f"  ({verdict} the goal <= {P99_GOAL_MS:.0f} ms)")
    answered = pings["ok"] + steady["ok"]
    lost = max(answered - stored, 0)
    print(f"pings answered OK: {answered}, stored: {stored}, lost: {lost}")
    if lost:
        raise RuntimeError(f"{lost} pings answered OK were not stored")
    processed(env)


def processed(env: dict[str, str]) -> None:
    """One run of the deadline loop over what the load left pending, timed."""
    out = manage_shell(env, PROCESS)
    figures = dict(re.findall(r"^BENCH_(\w+)=(\S+)$", out, re.M))
    pending, seconds = int(figures["PENDING"]), float(figures["SECONDS"])
    rate = pending / seconds if seconds else 0.0
    print(f"deadline loop: {pending} pending pings processed in {seconds:.2f} s ", end="")
    print(f"({rate:.0f} pings/s), {figures['LEFT']} left; checks stored: {figures['CHECKS']}")
    if int(figures["LEFT"]):
        raise RuntimeError(f"{figures['LEFT']} pings left pending after a loop run")


def main() -> int:
    args = parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk is not on PATH: install it with `apt-get install -y wrk` (Debian/Ubuntu).")
    return run_benchmark(benchmark, args)


if __name__ == "__main__":
    sys.exit(main())
