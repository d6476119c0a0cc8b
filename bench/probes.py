"""HTTP probes/s of the probe engine on one worker process, beside a bare asyncio loop and
one Celery task per probe.

Targets: one nginx worker answering `200 ok` on four loopback ports, pinned to the last core;
the measured process is pinned to the first one. Printed side by side, in one run:

1. engine       `run_batch` in batches, one `asyncio.run` per batch as a worker's
                `run_checks` does (defaults: PROBE_BATCH_SIZE 200, PROBE_CONCURRENCY 500);
2. bare loop    plain aiohttp, one event loop, one session, fresh connections, the same
                concurrency: the ceiling, no engine;
3. worker path  `pipeline.checks.checks_run` per batch on a throwaway PostgreSQL
                database: decrypting targets, probing, storing results and statuses;
4. naive        one Celery task per probe (`requests.get`), a real prefork worker with
                concurrency 2 on Redis db 14, from its own Celery app (`_probes_naive.py`).

The process freezes its start-up objects out of the garbage collector first, as a worker
process does (healthmon/celery.py); `--gc untouched` measures without that.

5. kinds         TCP, DNS (a dnslib server on the helper core) and HTTP with 5 assertions
                through the engine, per CPU-second beside plain HTTP (`_probe_kinds.py`).

Goals: >= 3,000 HTTP probes/s per worker core, engine >= 0.5x the bare loop and >= 5x
the naive design; TCP >= 2x HTTP, DNS >= HTTP, HTTP with 5 assertions within 10% of HTTP.
Everything it starts (nginx, the Celery worker, the database, its Redis
keys) is stopped or removed at the end, also on an error or Ctrl-C.

    .venv/bin/python bench/probes.py [--quick] [--probes 20000] [--endpoints 2000]
"""

import argparse
import asyncio
import sys
import time
from datetime import UTC, datetime, timedelta

from _probe_kinds import measure_kinds, report_kinds
from _probes_naive import measure_naive, run_naive_worker
from _probes_report import Figure, report
from _support import (
    CPUS,
    HELPER_CPU,
    MEASURED_CPU,
    app_environment,
    cpu_seconds,
    database_backend_pid,
    http_endpoint,
    load_average,
    migrate,
    pin,
    run_benchmark,
    set_gc,
    setup_django,
    throwaway_database,
)
from _targets import nginx_targets

# --- Arguments --------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a quarter of every count")
    parser.add_argument("--smoke", action="store_true", help="a run of a few seconds: does it work")
    parser.add_argument("--probes", type=int, default=20_000, help="engine and bare-loop probes")
    parser.add_argument("--batch", type=int, default=200, help="probes per asyncio.run batch")
    parser.add_argument("--concurrency", type=int, default=500, help="run_batch concurrency")
    parser.add_argument("--timeout", type=float, default=5.0, help="probe timeout, seconds")
    parser.add_argument("--endpoints", type=int, default=2000, help="worker-path endpoints")
    parser.add_argument("--rounds", type=int, default=3, help="worker-path rounds (1st + rest)")
    parser.add_argument("--naive-tasks", type=int, default=3000, help="tasks for the naive run")
    parser.add_argument("--naive-concurrency", type=int, default=2, help="prefork processes")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/14", help="naive broker")
    parser.add_argument("--repeat", type=int, default=2, help="engine/bare runs, best kept")
    parser.add_argument(
        "--gc",
        choices=["freeze", "untouched", "off"],
        default="freeze",
        help="cyclic garbage collector of this process: freeze start-up objects as a worker "
        "does (healthmon/celery.py, the default), leave it untouched, or turn it off",
    )
    parser.add_argument("--kind-probes", type=int, default=10_000, help="probes per kind")
    parser.add_argument("--skip-kinds", action="store_true", help="no TCP/DNS/assertions table")
    parser.add_argument("--skip-worker-path", action="store_true")
    parser.add_argument("--skip-naive", action="store_true")
    parser.add_argument("--naive-worker", metavar="QUEUE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.smoke:
        args.probes, args.endpoints, args.naive_tasks, args.rounds = 400, 100, 100, 2
        args.repeat, args.kind_probes = 1, 400
    elif args.quick:
        args.probes //= 4
        args.endpoints //= 4
        args.naive_tasks //= 4
        args.kind_probes //= 4
        args.rounds = min(args.rounds, 2)
    return args


# --- Measurements -----------------------------------------------------------------------


def engine_tasks(urls: list[str], count: int, timeout: float) -> list:
    from monitoring.probes import ProbeTask
    from monitoring.validation import validate_config

    config = validate_config("http", {})
    return [ProbeTask("http", urls[i % len(urls)], config, timeout) for i in range(count)]


def measure_engine(args: argparse.Namespace, urls: list[str], targets_cpu) -> Figure:
    from monitoring.probes import run_batch

    tasks = engine_tasks(urls, args.probes, args.timeout)
    asyncio.run(run_batch(tasks[: args.batch], concurrency=args.concurrency))  # warm-up
    helper0, started, cpu0 = targets_cpu(), time.perf_counter(), time.process_time()
    ok = 0
    for i in range(0, len(tasks), args.batch):
        results = asyncio.run(run_batch(tasks[i : i + args.batch], concurrency=args.concurrency))
        ok += sum(result.ok for result in results)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu0
    figure = Figure(f"engine: run_batch, {args.batch}/asyncio.run", len(tasks), ok, wall, cpu)
    figure.helpers["nginx"] = targets_cpu() - helper0
    return figure


async def bare_loop(urls: list[str], count: int, concurrency: int, timeout: float) -> int:
    import aiohttp

    limit = asyncio.Semaphore(concurrency)
    connector = aiohttp.TCPConnector(force_close=True, limit=0)
    client_timeout = aiohttp.ClientTimeout(total=timeout)
    async with aiohttp.ClientSession(connector=connector, timeout=client_timeout) as session:

        async def one(url: str) -> bool:
            async with limit:
                try:
                    async with session.get(url) as response:
                        return response.status == 200
                except (aiohttp.ClientError, TimeoutError):
                    return False

        results = await asyncio.gather(*(one(urls[i % len(urls)]) for i in range(count)))
    return sum(results)


def measure_bare(args: argparse.Namespace, urls: list[str], targets_cpu) -> Figure:
    concurrency = min(args.batch, args.concurrency)
    asyncio.run(bare_loop(urls, args.batch, concurrency, args.timeout))  # warm-up
    helper0, started, cpu0 = targets_cpu(), time.perf_counter(), time.process_time()
    ok = asyncio.run(bare_loop(urls, args.probes, concurrency, args.timeout))
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu0
    figure = Figure(f"bare aiohttp loop, {concurrency} at once", args.probes, ok, wall, cpu)
    figure.helpers["nginx"] = targets_cpu() - helper0
    return figure


def create_endpoints(urls: list[str], count: int, timeout: float) -> list:
    from accounts.services import organization_create
    from monitoring.models import Endpoint

    _, project = organization_create(name="Bench")
    endpoints = [
        http_endpoint(
            project,
            f"Service {i}",
            urls[i % len(urls)],
            30,
            max(1, round(timeout)),
            next_check_at=None,
        )
        for i in range(count)
    ]
    Endpoint.objects.bulk_create(endpoints, batch_size=1000)
    return [endpoint.pk for endpoint in endpoints]


def measure_worker_path(args: argparse.Namespace, urls: list[str], targets_cpu) -> list[Figure]:
    """checks_run per batch, as run_checks does; the probe phase timed by wrapping run_batch."""
    from django.conf import settings

    from monitoring.checks import probe as monitoring_probe
    from monitoring.models import CheckResult, StatusChange
    from pipeline import checks as pipeline

    ids = create_endpoints(urls, args.endpoints, args.timeout)
    backend = database_backend_pid()
    pin(backend, HELPER_CPU)  # this connection's server process shares the targets' core
    size = settings.PROBE_BATCH_SIZE
    phases = {"probing": 0.0, "recording": 0.0}
    run_batch, checks_record = monitoring_probe.run_batch, pipeline.checks_record

    async def timed_run_batch(tasks, concurrency):
        started = time.perf_counter()
        try:
            return await run_batch(tasks, concurrency=concurrency)
        finally:
            phases["probing"] += time.perf_counter() - started

    def timed_checks_record(*, outcomes):
        started = time.perf_counter()
        try:
            return checks_record(outcomes=outcomes)
        finally:
            phases["recording"] += time.perf_counter() - started

    monitoring_probe.run_batch, pipeline.checks_record = timed_run_batch, timed_checks_record
    # Every slot in the past: a probe handed over ahead of its slot waits for it.
    base = datetime.now(tz=UTC).replace(microsecond=0) - timedelta(seconds=30 * args.rounds + 60)
    figures = []
    try:
        for round_ in range(args.rounds):
            slots = [(pk, base + timedelta(seconds=30 * round_)) for pk in ids]
            phases.update(probing=0.0, recording=0.0)
            helper0, db0 = targets_cpu(), cpu_seconds(backend)
            started, cpu0 = time.perf_counter(), time.process_time()
            stored = sum(
                pipeline.checks_run(slots=slots[i : i + size]) for i in range(0, len(slots), size)
            )
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu0
            ok = CheckResult.objects.filter(scheduled_for=slots[0][1], ok=True).count()
            if stored != len(ids):
                raise RuntimeError(f"round {round_ + 1}: stored {stored} of {len(ids)} results")
            label = "first checks (pending -> up)" if round_ == 0 else f"round {round_ + 1}"
            figure = Figure(f"worker path: checks_run, {label}", stored, ok, wall, cpu)
            figure.helpers["nginx"] = targets_cpu() - helper0
            figure.helpers["postgres"] = cpu_seconds(backend) - db0
            figure.phases = {
                "loading": wall - phases["probing"] - phases["recording"],
                **phases,
            }
            figures.append(figure)
        changes = StatusChange.objects.count()
        print(f"worker path: {changes} status changes recorded (one per endpoint expected)")
    finally:
        monitoring_probe.run_batch, pipeline.checks_record = run_batch, checks_record
    return figures


def benchmark(args: argparse.Namespace) -> None:
    figures: dict[str, Figure] = {}
    with throwaway_database("healthmon_bench_probes") as database_url:
        app_environment(
            database_url,
            PROBE_CONCURRENCY=str(args.concurrency),
            PROBE_BATCH_SIZE=str(args.batch),
        )
        if not args.skip_worker_path:
            migrate()
        setup_django()
        set_gc(args.gc)
        with nginx_targets() as targets:
            pin(0, MEASURED_CPU)
            print(f"CPUs: {CPUS}; this process pinned to core {MEASURED_CPU}, ", end="")
            print(f"nginx (1 worker) to core {HELPER_CPU}")
            print(f"load average before the run: {load_average()} (other work skews figures)")
            print(f"targets: {', '.join(targets.urls)}")
            print(f"batch {args.batch}, concurrency {args.concurrency}, ", end="")
            print(f"timeout {args.timeout:g} s, garbage collector: {args.gc}\n", flush=True)
            cpu = targets.cpu_seconds
            # Alternated, best of `--repeat`: other work on the machine only slows a run down.
            for rep in range(1, args.repeat + 1):
                for key, measure in (("engine", measure_engine), ("bare", measure_bare)):
                    figure = measure(args, targets.urls, cpu)
                    print(f"{key} run {rep}: {figure.rate:,.0f} probes/s", flush=True)
                    if key not in figures or figure.rate > figures[key].rate:
                        figures[key] = figure
            if not args.skip_worker_path:
                for n, figure in enumerate(measure_worker_path(args, targets.urls, cpu), 1):
                    figures[f"worker{n}"] = figure
                    print(f"worker path round {n}: {figure.rate:,.0f} probes/s", flush=True)
                from django.db import connection

                connection.close()
            if not args.skip_naive:
                figures["naive"] = measure_naive(args, targets.urls, cpu)
                print(f"naive: {figures['naive'].rate:,.0f} probes/s", flush=True)
            kinds = []
            if not args.skip_kinds:
                pin(0, MEASURED_CPU)
                kinds = measure_kinds(targets.urls, cpu, args.kind_probes, args.batch, args.timeout)
    report(figures, args)
    if kinds:
        report_kinds(kinds)


def main() -> int:
    args = parse_args()
    if args.naive_worker:
        run_naive_worker(args.naive_concurrency, args.naive_worker)
        return 0
    return run_benchmark(benchmark, args)


if __name__ == "__main__":
    sys.exit(main())
