"""The dispatcher under 10,000 endpoints at a 30 s interval, on real wall-clock time.

A throwaway PostgreSQL database gets 10,000 enabled HTTP endpoints (interval 30 s), their
first slots spread evenly over 30 s from the start of the run. The real dispatcher,
`monitoring.scheduler.dispatch(now=..., batch_size=200)`, runs once per tick (1 s, as the
beat schedule does) for 90 s of wall time; `monitoring.scheduler.send_batch` is replaced by an
in-process collector that notes when each batch is handed over. From 30 s to 60 s a second
dispatcher process runs on the same ticks, to show that no slot is ever claimed twice.

Printed: claim time per tick p50/p99 (the whole `dispatch` call), hand-over time against
each slot (the dispatcher claims up to `scheduler.LOOKAHEAD` ahead, so most slots are
handed over early: lateness = max(0, hand-over - slot), and the margin left before the
slot for the broker and a worker), slots claimed against expected (missed, duplicated,
off-phase) and the CPU of the dispatchers and of their PostgreSQL server processes as a
share of all cores. Goals: p99 lag <= 50 ms, no missed checks, under half of the cores.

Then, in the same run, probe locations: two more phases of `--locations-duration` seconds
each, one dispatcher, every batch also sent for real to the broker (kombu's memory
transport, or Redis with `--end-to-end`): first with the endpoints probed from the default
location alone, then from `--locations` (3) named locations that are online, so each claim
goes out three times. Printed per phase: claim-and-send time per tick, the dispatcher's CPU
per tick (and its PostgreSQL server's), items sent per location and any sent twice. Goal:
the dispatcher's CPU per tick with three locations at most 1.5 times the single-location
figure.

With `--end-to-end` the collector also sends each batch for real, through Redis (db 14), to
a prefork Celery worker of the project (2 processes) that probes local nginx targets and
stores the results: the lag is then each stored check's own start minus its slot.
The database, the processes and the Redis keys are removed at the end, also on Ctrl-C.

    .venv/bin/python bench/scheduler.py [--quick] [--endpoints 10000] [--duration 90]
        [--tick 1.0] [--second-from 30 --second-to 60] [--end-to-end]
        [--locations 3] [--locations-duration 30] [--vacuum-every 30]

At 100,000 endpoints the table's rows are rewritten every 30 s: when the server runs no
autovacuum (this machine's has `autovacuum = off`) the main run VACUUMs the endpoints every
`--vacuum-every` seconds in its stead and counts that CPU with the dispatcher's.
"""

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import redis
from _scheduler_locations import analyse_locations, location_slugs, locations_run
from _scheduler_report import analyse
from _scheduler_world import EPOCH, create_endpoints, micros, move_first_slots
from _support import (
    BIN,
    CPUS,
    ROOT,
    app_environment,
    cpu_seconds,
    database_backend_pid,
    load_average,
    migrate,
    run_benchmark,
    setup_django,
    stop,
    throwaway_database,
    tree_cpu_seconds,
)
from _targets import nginx_targets


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000 endpoints for 35 s")
    parser.add_argument("--smoke", action="store_true", help="a run of a few seconds: does it work")
    parser.add_argument("--endpoints", type=int, default=10_000)
    parser.add_argument("--duration", type=float, default=90, help="seconds of ticks")
    parser.add_argument("--tick", type=float, default=1.0, help="seconds between dispatches")
    parser.add_argument("--batch-size", type=int, default=200, help="slots per sent batch")
    parser.add_argument("--second-from", type=float, default=30, help="2nd dispatcher starts")
    parser.add_argument("--second-to", type=float, default=60, help="2nd dispatcher stops")
    parser.add_argument("--no-second", action="store_true", help="one dispatcher only")
    parser.add_argument(
        "--end-to-end", action="store_true", help="send the batches to a real Celery worker"
    )
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/14", help="its broker")
    parser.add_argument(
        "--vacuum-every",
        type=float,
        default=30,
        help="VACUUM the endpoints this often when the server has autovacuum off (0: never)",
    )
    parser.add_argument("--locations", type=int, default=3, help="named probe locations")
    parser.add_argument(
        "--locations-duration", type=float, default=30, help="seconds of each locations phase"
    )
    # Internal: run as the second dispatcher.
    parser.add_argument("--as-second", metavar="FILE", help=argparse.SUPPRESS)
    parser.add_argument("--start", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.smoke:
        args.endpoints, args.duration = 200, 6
        args.second_from, args.second_to = 2, 4
        args.locations_duration = 4
    elif args.quick:
        args.endpoints, args.duration = 2000, 35
        args.second_from, args.second_to = 10, 25
        args.locations_duration = 15
    return args


def run_dispatcher(
    args: argparse.Namespace, start: float, begin: float, end: float, for_real: bool = False
) -> dict:
    """Dispatch on every tick `start + k * tick` inside [start + begin, start + end).

    Returns the ticks (time, claim seconds, slots) and the claims (endpoint id, slot in
    epoch microseconds, hand-over wall time), with this process's CPU and its database
    server's, and the items sent per location. With `--end-to-end` (or `for_real`) each
    batch is also sent for real.
    """
    from django.utils import timezone

    from monitoring import scheduler

    claims: list[tuple[str, int, float]] = []
    per_location: Counter[str] = Counter()
    seen: Counter[tuple[str, str, str]] = Counter()
    send = scheduler.send_batch

    def collect(items: list[list], slow: bool = False, location: str | None = None) -> None:
        handed = time.time()
        where = location or "default"
        per_location[where] += len(items)
        seen.update((pk, slot, where) for pk, slot, *_ in items)
        if location is None or location == first_location:  # each claim once, not per place
            claims.extend(
                (pk, micros(datetime.fromisoformat(slot)), handed) for pk, slot, *_ in items
            )
        if args.end_to_end or for_real:
            if location is None:
                send(items, slow)
            else:
                send(items, slow, location)

    first_location = location_slugs(args.locations)[0] if args.locations else None
    scheduler.send_batch = collect
    backend = database_backend_pid()
    scheduler.dispatch(now=timezone.now() - timedelta(days=1), batch_size=args.batch_size)
    per_location.clear()
    seen.clear()
    claims.clear()
    ticks = []
    k = max(0, int((begin + args.tick - 1e-9) // args.tick))
    cpu0, db0, wall0 = time.process_time(), cpu_seconds(backend), start + k * args.tick
    while start + k * args.tick < start + end:
        delay = start + k * args.tick - time.time()
        if delay > 0:
            time.sleep(delay)
        began = time.perf_counter()
        now = timezone.now()
        sent = scheduler.dispatch(now=now, batch_size=args.batch_size)
        ticks.append((micros(now), time.perf_counter() - began, sent))
        k += 1
    scheduler.send_batch = send
    return {
        "ticks": ticks,
        "claims": claims,
        "cpu": time.process_time() - cpu0,
        "db_cpu": cpu_seconds(backend) - db0,
        "wall": time.time() - wall0,
        "per_location": dict(per_location),
        "sent_twice": sum(n - 1 for n in seen.values() if n > 1),
    }


@contextlib.contextmanager
def vacuum_stand_in(every: float) -> Iterator[dict]:
    """VACUUM the endpoint table every `every` s from a connection of its own when the
    server runs no autovacuum (this machine's has `autovacuum = off`), as autovacuum would
    once the dispatcher's dead rows pass its threshold; yields its CPU figures."""
    import threading

    import psycopg

    figures = {"runs": 0, "cpu": 0.0, "autovacuum": True}
    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as vacuum:
        figures["autovacuum"] = vacuum.execute("SHOW autovacuum").fetchone()[0] == "on"
        if figures["autovacuum"] or every <= 0:
            yield figures
            return
        stop, pid = threading.Event(), vacuum.info.backend_pid
        before = cpu_seconds(pid)

        def loop() -> None:
            while not stop.wait(every):
                vacuum.execute("VACUUM monitoring_endpoint")
                figures["runs"] += 1

        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        try:
            yield figures
        finally:
            stop.set()
            thread.join()
            figures["cpu"] = cpu_seconds(pid) - before


def second_dispatcher(args: argparse.Namespace) -> int:
    setup_django()
    result = run_dispatcher(args, args.start, args.second_from, args.second_to)
    Path(args.as_second).write_text(json.dumps(result))
    return 0


# --- End to end: a real worker ----------------------------------------------------------


@contextlib.contextmanager
def project_worker() -> Iterator[subprocess.Popen]:
    """`celery -A healthmon worker -Q celery`, prefork x2; its log shown on errors."""
    command = [str(BIN / "celery"), "-A", "healthmon", "worker", "-Q", "celery"]
    command += ["--pool=prefork", "--concurrency=2", "--loglevel=WARNING"]
    command += ["--without-gossip", "--without-mingle", "--without-heartbeat"]
    with tempfile.TemporaryFile("w+") as log:
        worker = subprocess.Popen(command, cwd=ROOT, env=dict(os.environ), stdout=log, stderr=log)
        try:
            yield worker
        except Exception:
            log.seek(0)
            sys.stderr.write("--- worker log ---\n" + log.read()[-3000:])
            raise
        finally:
            stop(worker, timeout=30)


def wait_for_worker(worker: subprocess.Popen, url: str) -> str:
    """Send one check of a spare endpoint and wait for its result: the worker is up."""
    from django.utils import timezone

    from monitoring import scheduler
    from monitoring.models import CheckResult, Endpoint

    pk = next(iter(create_endpoints(1, EPOCH, [url])))
    Endpoint.objects.filter(pk=pk).update(next_check_at=None)  # never dispatched
    scheduler.send_batch([[pk, timezone.now().isoformat()]])
    deadline = time.monotonic() + 60
    while not CheckResult.objects.filter(endpoint_id=pk).exists():
        if worker.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("the Celery worker did not run a check within 60 s")
        time.sleep(0.2)
    return pk


def collect_results(claimed: int, spare: str) -> list[tuple[datetime, datetime, bool]]:
    """Wait until every claimed slot has its result (60 s at most); return them."""
    from monitoring.models import CheckResult

    results = CheckResult.objects.exclude(endpoint_id=spare)
    deadline = time.monotonic() + 60
    while results.count() < claimed and time.monotonic() < deadline:
        time.sleep(0.5)
    return list(results.values_list("scheduled_for", "checked_at", "ok"))


# --- The run ----------------------------------------------------------------------------


def dispatch_run(args: argparse.Namespace, start: float) -> dict[str, dict]:
    """The main dispatcher here, the second one in a subprocess for part of the run."""
    print(f"CPUs: {CPUS}; load average before the run: {load_average()}")
    print(f"tick {args.tick:g} s for {args.duration:g} s of wall time", end="")
    with tempfile.TemporaryDirectory(prefix="bench-scheduler-") as folder:
        out, second = Path(folder, "second.json"), None
        if not args.no_second:
            print(f"; a second dispatcher from {args.second_from:g} s to {args.second_to:g} s")
            command = [str(BIN / "python"), __file__, "--as-second", str(out)]
            command += ["--start", repr(start), "--tick", repr(args.tick)]
            command += ["--second-from", repr(args.second_from)]
            command += ["--second-to", repr(args.second_to)]
            command += ["--batch-size", str(args.batch_size)]
            command += ["--end-to-end"] if args.end_to_end else []
            second = subprocess.Popen(command, env=dict(os.environ))
        else:
            print()
        sys.stdout.flush()
        try:
            with vacuum_stand_in(args.vacuum_every) as vacuumed:
                runs = {"main": run_dispatcher(args, start, 0, args.duration)}
            runs["main"]["vacuum"] = vacuumed
            if second is not None:
                if second.wait(timeout=60) != 0:
                    raise RuntimeError(f"the second dispatcher exited with {second.returncode}")
                runs["second"] = json.loads(out.read_text())
        finally:
            if second is not None:
                stop(second)
    return runs


def benchmark(args: argparse.Namespace) -> None:
    with contextlib.ExitStack() as stack:
        database_url = stack.enter_context(throwaway_database("healthmon_bench_scheduler"))
        broker = args.redis_url if args.end_to_end else "memory://"
        app_environment(database_url, CELERY_BROKER_URL=broker)
        migrate()
        setup_django()
        urls, end_to_end = [], None
        if args.end_to_end:
            urls = stack.enter_context(nginx_targets()).urls
            client = redis.Redis.from_url(args.redis_url)
            before = set(client.keys("*"))

            def clean_redis() -> None:
                created = set(client.keys("*")) - before
                if created:
                    client.delete(*created)
                client.close()

            stack.callback(clean_redis)
        created = time.perf_counter()
        first_slots = create_endpoints(args.endpoints, EPOCH, urls)
        print(f"{args.endpoints} endpoints created in {time.perf_counter() - created:.1f} s")
        if args.end_to_end:
            worker = stack.enter_context(project_worker())
            spare = wait_for_worker(worker, urls[0])
            print("end to end: a Celery worker of the project (prefork x2) checks nginx targets")
            worker_cpu = tree_cpu_seconds(worker.pid)
        start, first_slots = move_first_slots(first_slots)
        runs = dispatch_run(args, start)
        if args.end_to_end:
            results = collect_results(sum(len(r["claims"]) for r in runs.values()), spare)
            cpu = tree_cpu_seconds(worker.pid) - worker_cpu
            end_to_end = {"results": results, "cpu": cpu}
        analyse(args, first_slots, runs, end_to_end)
        if args.locations > 0:
            analyse_locations(args, locations_run(args, run_dispatcher))
        from django.db import connection

        connection.close()


def main() -> int:
    args = parse_args()
    if args.as_second:
        return second_dispatcher(args)
    return run_benchmark(benchmark, args)


if __name__ == "__main__":
    sys.exit(main())
