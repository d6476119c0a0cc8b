"""The heartbeat deadline loop at 10,000 heartbeat endpoints, on real wall-clock time.

A throwaway PostgreSQL database gets 10,000 enabled heartbeat endpoints, all `up`, their
deadlines written directly: `late_after` spread evenly over a 30 s window that opens a few
seconds after the start, `alert_after` a 10 s grace later (the API would refuse a grace under
60 s; only the deadlines matter here). This process then runs the loop as beat does: the
task function `pipeline.tasks.run_heartbeat_deadlines` on every tick `start + k x 2 s` (a
pass that overruns its tick is followed by the next one at once, as one worker process
runs beat's queued tasks; ticks older than the task's 5 s expiry are dropped), until every
heartbeat is down.

An observer process (psycopg, no Django) polls the status history every 0.1 s and notes
when each `up -> late` and `late -> down` change becomes visible to another connection:
the moment its transaction committed, to within the poll. Per endpoint, the delay from its
deadline to that moment is printed as p50 / p99 / max, late and down apart. Beside them,
measured in the same run: a bare loop ticking every 2 s in the observer, doing nothing (the
delay from a deadline to its first tick: the floor any 2 s loop has), the delay to the
first pass of the real loop that started after the deadline, and the time of one pass
with nothing due (10 passes before the window opens). At the end every endpoint must have
exactly one incident: missing or duplicate incidents are errors (the script fails).

Goal: p99 from deadline to flip <= 5 s (printed as met or NOT met). The database and the
observer are removed at the end, also on an error or Ctrl-C.

    .venv/bin/python bench/deadlines.py [--quick] [--smoke] [--endpoints 10000]
        [--window 30] [--grace 10] [--tick 2.0]
"""

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import UUID, uuid4

import psycopg
from _support import (
    BIN,
    CPUS,
    app_environment,
    load_average,
    migrate,
    percentile,
    print_table,
    run_benchmark,
    setup_django,
    stop,
    throwaway_database,
)

GOAL_SECONDS = 5.0
# The window opens this long after the start: the loop's first passes see nothing due.
LEAD_SECONDS = 4.0
EMPTY_PASSES = 10
POLL_SECONDS = 0.1
# Beat's deadline task expires 5 s after it is sent (healthmon/settings/workers.py).
EXPIRES_SECONDS = 5.0
# Endpoints are made with deadlines this far ahead, then moved to the run's start.
PARKED = timedelta(days=1)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000 endpoints, a 15 s window")
    parser.add_argument("--smoke", action="store_true", help="a run of a few seconds: does it work")
    parser.add_argument("--endpoints", type=int, default=10_000)
    parser.add_argument("--window", type=float, default=30, help="seconds the deadlines span")
    parser.add_argument("--grace", type=float, default=10, help="seconds from late to down")
    parser.add_argument("--tick", type=float, default=2.0, help="seconds between passes")
    # Internal: run as the observer.
    parser.add_argument("--as-observer", metavar="FILE", help=argparse.SUPPRESS)
    parser.add_argument("--database-url", help=argparse.SUPPRESS)
    parser.add_argument("--start", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--stop-file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.smoke:
        args.endpoints, args.window, args.grace = 200, 4, 2
    elif args.quick:
        args.endpoints, args.window, args.grace = 2000, 15, 6
    return args


# --- The observer -----------------------------------------------------------------------

# Status history rows newer than a watermark. Their ids are UUIDv7 made when the row was
# built, before its commit; the loop's transactions follow each other, so a row committed
# later has a later id, save within one millisecond: the watermark is moved back 50 ms and
# rows already seen are skipped.
CHANGES = """
SELECT c.id, c.endpoint_id, c.to_status FROM monitoring_statuschange c
WHERE c.id > %s AND c.to_status IN ('late', 'down') ORDER BY c.id
"""


def observer(args: argparse.Namespace) -> int:
    """Note when each flip becomes visible, and tick a bare 2 s loop beside it."""
    ticks: list[float] = []

    def bare_loop() -> None:
        k = 0
        while not Path(args.stop_file).exists():
            delay = args.start + k * args.tick - time.time()
            if delay > 0:
                time.sleep(delay)
            ticks.append(time.time())
            k += 1

    threading.Thread(target=bare_loop, daemon=True).start()
    seen: dict[str, dict[str, float]] = {}
    known: set[UUID] = set()
    mark = UUID(int=0)
    with psycopg.connect(args.database_url, autocommit=True) as connection:
        last = False
        while not last:
            last = Path(args.stop_file).exists()  # then one more poll: the loop has ended
            rows = connection.execute(CHANGES, [mark]).fetchall()
            visible = time.time()
            for pk, endpoint, status in rows:
                if pk not in known:
                    known.add(pk)
                    seen.setdefault(str(endpoint), {}).setdefault(status, visible)
            if rows:
                newest = max(pk for pk, _, _ in rows)
                mark = max(mark, UUID(int=max(0, newest.int - (50 << 80))))
            if not last:
                time.sleep(POLL_SECONDS)
    Path(args.as_observer).write_text(json.dumps({"seen": seen, "ticks": ticks}))
    return 0


# --- Data -------------------------------------------------------------------------------


def create_heartbeats(count: int) -> None:
    """`count` up heartbeats whose deadlines are parked a day ahead, one window wide."""
    from django.utils import timezone

    from accounts.services import organization_create
    from monitoring.models import Endpoint, EndpointStatus
    from monitoring.targets import mask_config
    from monitoring.validation import validate_config

    _, project = organization_create(name="Bench")
    config = validate_config("heartbeat", {"grace_seconds": 60})
    now = timezone.now()
    last_ping = now - timedelta(seconds=60)
    Endpoint.objects.bulk_create(
        (
            Endpoint(
                project=project,
                name=f"Job {i}",
                type="heartbeat",
                target="",
                target_masked="",
                config=config,
                config_masked=mask_config(config),
                interval_seconds=60,
                timeout_seconds=10,
                failure_threshold=1,
                recovery_threshold=1,
                ping_key=uuid4(),
                status=EndpointStatus.UP,
                streak_ok=True,
                streak_length=1,
                streak_started_at=last_ping,
                watch_started_at=last_ping,
                last_checked_at=last_ping,
                late_after=now + PARKED,
                alert_after=now + PARKED,
                created_at=last_ping,
                updated_at=last_ping,
            )
            for i in range(count)
        ),
        batch_size=1000,
    )


def move_deadlines(args: argparse.Namespace) -> tuple[float, dict[str, tuple[float, float]]]:
    """Open the window LEAD_SECONDS after a start on the next whole second: `late_after`
    spread evenly over it, `alert_after` a grace later. Returns the start and each
    endpoint's two deadlines (epoch seconds)."""
    from django.db import connection

    from monitoring.models import Endpoint

    start = float(int(time.time()) + 2)
    opens = datetime.fromtimestamp(start + LEAD_SECONDS, UTC)
    table = connection.ops.quote_name(Endpoint._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH ranked AS (
                SELECT id, (row_number() OVER (ORDER BY id) - 1) * %s::float8 AS offset_s
                FROM {table}
                WHERE type = 'heartbeat'
            )
            UPDATE {table} e
            SET late_after = %s::timestamptz + ranked.offset_s * interval '1 second',
                alert_after = %s::timestamptz + (ranked.offset_s + %s::float8) * interval '1 second'
            FROM ranked WHERE ranked.id = e.id
            RETURNING e.id, e.late_after, e.alert_after
            """,
            [args.window / args.endpoints, opens, opens, args.grace],
        )
        rows = cursor.fetchall()
    return start, {str(pk): (late.timestamp(), down.timestamp()) for pk, late, down in rows}


# --- The loop ---------------------------------------------------------------------------


def empty_passes() -> list[float]:
    """The time of passes with nothing due, back to back (seconds)."""
    from pipeline.tasks import run_heartbeat_deadlines

    times = []
    for _ in range(EMPTY_PASSES):
        began = time.perf_counter()
        flipped = run_heartbeat_deadlines()
        times.append(time.perf_counter() - began)
        if flipped != [0, 0]:
            raise RuntimeError(f"a pass with nothing due flipped {flipped}")
    return times


def run_loop(args: argparse.Namespace, start: float, last_deadline: float) -> list[dict]:
    """Call the task on every tick until nothing is left up or late (or 30 s past the last
    deadline); each pass's start, duration and (late, down) counts."""
    from monitoring.models import Endpoint, EndpointStatus
    from pipeline.tasks import run_heartbeat_deadlines

    pending = Endpoint.objects.filter(status__in=[EndpointStatus.UP, EndpointStatus.LATE])
    passes = []
    k = 0
    while time.time() < last_deadline + 30:
        delay = start + k * args.tick - time.time()
        if delay > 0:
            time.sleep(delay)
        began = time.time()
        late, down = run_heartbeat_deadlines()
        passes.append({"start": began, "seconds": time.time() - began, "late": late, "down": down})
        k += 1
        while start + k * args.tick < time.time() - EXPIRES_SECONDS:
            k += 1  # beat's task for that tick has expired unrun
        if began > last_deadline and not pending.exists():
            break
    time.sleep(3 * POLL_SECONDS)  # the observer's next poll sees the last pass's flips
    return passes


# --- Analysis ---------------------------------------------------------------------------


def spread(values: list[float]) -> str:
    if not values:
        return "-"
    return " / ".join(f"{percentile(values, share):.2f}" for share in (50, 99, 100))


def first_after(moments: list[float], deadline: float) -> float | None:
    """The first of the sorted `moments` at or after `deadline`."""
    from bisect import bisect_left

    i = bisect_left(moments, deadline)
    return moments[i] if i < len(moments) else None


def delays(deadlines: list[float], moments: list[float]) -> list[float]:
    found = [(first_after(moments, d), d) for d in deadlines]
    return [moment - d for moment, d in found if moment is not None]


def incidents_per_endpoint() -> tuple[int, int, int]:
    """(endpoints with one incident, with none, with two or more)."""
    from django.db.models import Count

    from monitoring.models import Endpoint

    counts = Counter(Endpoint.objects.annotate(n=Count("incidents")).values_list("n", flat=True))
    return counts[1], counts[0], sum(v for n, v in counts.items() if n > 1)


def analyse(
    deadlines: dict[str, tuple[float, float]],
    observed: dict,
    passes: list[dict],
    empty: list[float],
) -> bool:
    seen = observed["seen"]
    late = [seen[pk]["late"] - d[0] for pk, d in deadlines.items() if "late" in seen.get(pk, {})]
    down = [seen[pk]["down"] - d[1] for pk, d in deadlines.items() if "down" in seen.get(pk, {})]
    every = [d for pair in deadlines.values() for d in pair]
    bare = delays(sorted(every), sorted(observed["ticks"]))
    cadence = delays(sorted(every), sorted(p["start"] for p in passes))
    busy = [p["seconds"] for p in passes if p["late"] or p["down"]]
    print()
    print_table(
        ["delay from deadline (s)", "endpoints", "p50 / p99 / max"],
        [
            ["deadline -> late committed", len(late), spread(late)],
            ["deadline -> down committed (incident open)", len(down), spread(down)],
            ["baseline: bare 2 s loop, deadline -> first tick", len(bare), spread(bare)],
            ["the real loop, deadline -> first pass started", len(cadence), spread(cadence)],
        ],
    )
    print()
    print_table(
        ["loop passes (s)", "passes", "p50 / p99 / max"],
        [
            [f"nothing due ({len(deadlines)} heartbeats up)", len(empty), spread(empty)],
            ["during the run, all", len(passes), spread([p["seconds"] for p in passes])],
            ["during the run, flipping something", len(busy), spread(busy)],
        ],
    )
    one, none, duplicated = incidents_per_endpoint()
    flips = (sum(p["late"] for p in passes), sum(p["down"] for p in passes))
    print()
    print(f"flips counted by the task: {flips[0]} late, {flips[1]} down; ", end="")
    print(f"seen by the observer: {len(late)} late, {len(down)} down")
    print(f"incidents: {one} endpoints with one, {none} with none, {duplicated} with two or more")
    for name, values in (("late", late), ("down", down)):
        p99 = percentile(values, 99)
        met = len(values) == len(deadlines) and p99 <= GOAL_SECONDS
        print(
            f"deadline -> {name} p99 {p99:.2f} s "
            f"(goal <= {GOAL_SECONDS:g} s, {'met' if met else 'NOT met'})"
        )
    if none or duplicated:
        print(f"ERROR: {none} endpoints without an incident, {duplicated} with duplicates")
    return not (none or duplicated)


# --- The run ----------------------------------------------------------------------------


@contextlib.contextmanager
def observing(database_url: str, start: float, tick: float, folder: str):
    """The observer process, stopped (its findings read) when the block ends."""
    out, stop_file = Path(folder, "observer.json"), Path(folder, "stop")
    command = [str(BIN / "python"), __file__, "--as-observer", str(out)]
    command += ["--database-url", database_url, "--start", repr(start), "--tick", repr(tick)]
    command += ["--stop-file", str(stop_file)]
    process = subprocess.Popen(command, env=dict(os.environ))
    found: dict = {}
    try:
        yield found
        stop_file.touch()
        if process.wait(timeout=30) != 0:
            raise RuntimeError(f"the observer exited with {process.returncode}")
        found.update(json.loads(out.read_text()))
    finally:
        stop_file.touch()
        stop(process)


def benchmark(args: argparse.Namespace) -> None:
    print(f"CPUs: {CPUS}; load average before the run: {load_average()}")
    with throwaway_database("healthmon_bench_deadlines") as database_url:
        app_environment(database_url)
        migrate()
        setup_django()
        made = time.perf_counter()
        create_heartbeats(args.endpoints)
        print(f"{args.endpoints} heartbeats created in {time.perf_counter() - made:.1f} s")
        empty = empty_passes()
        start, deadlines = move_deadlines(args)
        last = max(d for pair in deadlines.values() for d in pair)
        print(
            f"late deadlines over {args.window:g} s from {LEAD_SECONDS:g} s after the start, "
            f"down {args.grace:g} s after each; a pass every {args.tick:g} s"
        )
        sys.stdout.flush()
        with (
            tempfile.TemporaryDirectory(prefix="bench-deadlines-") as folder,
            observing(database_url, start, args.tick, folder) as observed,
        ):
            passes = run_loop(args, start, last)
        ok = analyse(deadlines, observed, passes, empty)
        print(f"load average after the run: {load_average()}")
        from django.db import connection

        connection.close()
    if not ok:
        raise RuntimeError("an endpoint has no incident or more than one (above)")


def main() -> int:
    args = parse_args()
    if args.as_observer:
        return observer(args)
    return run_benchmark(benchmark, args)


if __name__ == "__main__":
    sys.exit(main())
