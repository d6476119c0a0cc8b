"""Render time and size of the server-drawn SVG charts (`analytics.charts`).

Each chart kind is drawn from made-up but realistic data, the same every run (seeded):

- response time: 24 h of 30 s buckets (2,880 points) with empty buckets, a 20-minute outage
  (every check failed) and about 1% failed checks; downsampled to 288 five-minute columns,
  and once more with downsampling off (`max_columns=2880`) to show what it saves;
- availability: 30 days of hourly buckets (720 bars) with 20 incidents, one still open and
  one begun before the range;
- comparison: 10 series of 288 five-minute points over 24 h;
- sparkline: the 2,880-point day.

Each is rendered a few times to warm up, then `--runs` times; p50/p95/max of the wall time
per render (ms), the median CPU time per render (less swayed by other work on the machine)
and the SVG's size (KB) are printed, and the response-time chart's p95 is checked against
the goal (well under 50 ms). No database, no server: pure functions.

    .venv/bin/python bench/charts.py [--runs 200] [--quick]
"""

import argparse
import math
import os
import platform
import random
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from _support import MEASURED_CPU, ROOT, load_average, percentile, pin, print_table, run_benchmark

GOAL_MS = 50
END = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
NO_SUCCESS = {"avg_ms": None, "min_ms": None, "max_ms": None, "p95_ms": None}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="measured renders per chart")
    parser.add_argument("--warmup", type=int, default=10, help="renders before measuring")
    parser.add_argument("--quick", action="store_true", help="50 runs")
    parser.add_argument("--smoke", action="store_true", help="a run of a few seconds: does it work")
    args = parser.parse_args()
    if args.smoke:
        args.runs, args.warmup = 3, 1
    elif args.quick:
        args.runs = 50
    return args


def response_points(rng: random.Random, start: datetime, step: int, count: int) -> list[dict]:
    """A day of one endpoint: a daily swell, noise, a slow spell, empty buckets, an outage."""
    points = []
    for i in range(count):
        t = start + timedelta(seconds=step * i)
        hours = i * step / 3600
        if rng.random() < 0.005:  # the worker missed the slot: no check at all
            points.append({"t": t, **NO_SUCCESS, "count": 0, "failures": 0})
            continue
        if 14 <= hours < 14 + 1 / 3:  # the outage: checks ran and all failed
            points.append({"t": t, **NO_SUCCESS, "count": step // 30, "failures": step // 30})
            continue
        base = 120 + 60 * math.sin(hours / 24 * 2 * math.pi) + (300 if 9 <= hours < 9.5 else 0)
        avg = base * rng.lognormvariate(0, 0.25)
        points.append(
            {
                "t": t,
                "avg_ms": avg,
                "min_ms": avg * rng.uniform(0.7, 1.0),
                "max_ms": avg * rng.uniform(1.0, 1.6),
                "p95_ms": avg * rng.uniform(1.0, 1.5),
                "count": step // 30,
                "failures": int(rng.random() < 0.01),
            }
        )
    return points


def availability_data(rng: random.Random, start: datetime) -> tuple[list[dict], list[dict]]:
    """720 hourly buckets and 20 incidents over 30 days (one open, one begun before)."""
    incidents = []
    for n in range(20):
        began = start + timedelta(hours=rng.uniform(-6 if n == 0 else 0, 29 * 24))
        length = timedelta(minutes=rng.uniform(1, 180))
        resolved = None if n == 19 else began + length
        if n == 19:
            began = END - timedelta(hours=3)
        incidents.append(
            {
                "id": f"{n:08x}-0000-4000-8000-000000000000",
                "started_at": began,
                "resolved_at": resolved,
                "duration_seconds": None if resolved is None else length.total_seconds(),
                "cause": rng.choice(["connection refused", "timeout after 10 s", "HTTP 503"]),
            }
        )
    buckets = []
    for h in range(30 * 24):
        t0 = start + timedelta(hours=h)
        t1 = t0 + timedelta(hours=1)
        down = sum(
            max(0.0, (min(i["resolved_at"] or END, t1) - max(i["started_at"], t0)).total_seconds())
            for i in incidents
        )
        uptime = None if 200 <= h < 205 else 100 * (1 - min(down, 3600) / 3600)  # paused
        buckets.append({"t": t0, "uptime": uptime, "downtime_s": 0.0 if uptime is None else down})
    return buckets, incidents


def measure(
    render: Callable[[], Any], runs: int, warmup: int
) -> tuple[list[float], list[float], int]:
    """Wall and CPU times of `runs` renders in ms, and the size of the SVG in bytes."""
    for _ in range(warmup):
        markup = render()
    wall, cpu = [], []
    for _ in range(runs):
        began, began_cpu = time.perf_counter(), time.process_time()
        markup = render()
        cpu.append((time.process_time() - began_cpu) * 1000)
        wall.append((time.perf_counter() - began) * 1000)
    return wall, cpu, len(str(markup).encode())


def benchmark(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "healthmon.settings")
    from analytics import charts

    pin(0, MEASURED_CPU)
    rng = random.Random(20261121)  # reproducible made-up data
    day, month = END - timedelta(hours=24), END - timedelta(days=30)
    fine = response_points(rng, day, 30, 2880)
    buckets, incidents = availability_data(rng, month)
    series = [(f"service-{n:02d}", response_points(rng, day, 300, 288)) for n in range(10)]
    cases = {
        "response time (2,880 pts)": lambda: charts.response_time_chart(fine, start=day, end=END),
        "response time, no downsampling": lambda: charts.response_time_chart(
            fine, start=day, end=END, max_columns=2880
        ),
        "availability (720 bars, 20 incidents)": lambda: charts.availability_chart(
            buckets, incidents, start=month, end=END
        ),
        "comparison (10 x 288 pts)": lambda: charts.comparison_chart(series, start=day, end=END),
        "sparkline (2,880 pts)": lambda: charts.sparkline(fine),
    }
    print(f"Python {platform.python_version()}, {args.runs} runs after {args.warmup} warm-up")
    print(f"load average before the run: {load_average()}\n")
    rows, figures = [], {}
    for name, render in cases.items():
        wall, cpu, size = measure(render, args.runs, args.warmup)
        figures[name] = wall
        times = [percentile(wall, 50), percentile(wall, 95), max(wall), percentile(cpu, 50)]
        rows.append([name, *(f"{t:.2f}" for t in times), f"{size / 1024:.1f}"])
    print_table(["chart", "p50 ms", "p95 ms", "max ms", "CPU p50 ms", "SVG KB"], rows)
    p95 = percentile(figures["response time (2,880 pts)"], 95)
    verdict = "meets" if p95 < GOAL_MS else "MISSES"
    print(f"\nresponse time, 2,880 points: p95 {p95:.2f} ms {verdict} the goal (< {GOAL_MS} ms)")


def main() -> int:
    return run_benchmark(benchmark, parse_args())


if __name__ == "__main__":
    sys.exit(main())
