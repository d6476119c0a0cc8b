"""Healthy probes' throughput when 10% of the targets hang until the probe timeout.

Healthy targets: one nginx worker on four loopback ports; hanging targets: a TCP listener
that accepts, reads and never answers (both pinned to the last core; this process to the
first). Every tenth probe goes to a hanging target. Healthy probes/s, with 0% and with 10%
hanging, in two ways of running the engine:

1. worker batches   one `asyncio.run(run_batch(...))` per batch of PROBE_BATCH_SIZE (200),
                    one batch after the other, as one worker process runs `run_checks`;
2. one long batch   every probe in one `run_batch` at a given concurrency (200, as in a
                    batch; 500, the PROBE_CONCURRENCY default; 2000): what the event loop
                    itself allows without the batch barrier.

Healthy throughput = healthy probes / time from the start to the last healthy probe's end
(completion times from a wrapper around `monitoring.probes.runner.run_probe`).
Goal: with 10% hanging, healthy throughput within 10% of normal (ratio >= 0.9).

    .venv/bin/python bench/hanging.py [--quick] [--healthy 3600] [--timeout 2]
"""

import argparse
import asyncio
import sys
import time

from _support import (
    CPUS,
    HELPER_CPU,
    MEASURED_CPU,
    app_environment,
    load_average,
    pin,
    print_table,
    run_benchmark,
    set_gc,
    setup_django,
)
from _targets import hanging_targets, nginx_targets

GOAL = 0.9
HANG_EVERY = 10  # every tenth probe: 10% of the targets


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer probes (about a third)")
    parser.add_argument("--smoke", action="store_true", help="a run of a few seconds: does it work")
    parser.add_argument("--healthy", type=int, default=3600, help="healthy probes, batch mode")
    parser.add_argument(
        "--healthy-long", type=int, default=18_000, help="healthy probes, one-batch mode"
    )
    parser.add_argument("--timeout", type=float, default=2.0, help="probe timeout, seconds")
    parser.add_argument("--batch", type=int, default=200, help="probes per worker batch")
    parser.add_argument("--concurrency", type=int, default=500, help="run_batch concurrency")
    parser.add_argument(
        "--threads",
        default="16",
        help="comma-separated thread counts for the threads-pool worker runs ('' to skip)",
    )
    parser.add_argument(
        "--long-concurrency",
        default="200,500,2000",
        help="comma-separated concurrencies for the one-batch mode",
    )
    parser.add_argument(
        "--gc",
        choices=["freeze", "untouched", "off"],
        default="freeze",
        help="cyclic garbage collector: as a worker (freeze, the default), untouched or off",
    )
    args = parser.parse_args()
    if args.smoke:
        args.healthy, args.healthy_long, args.timeout = 200, 400, 0.5
        args.threads, args.long_concurrency = "4", "200"
    elif args.quick:
        args.healthy //= 3
        args.healthy_long //= 3
    return args


def make_tasks(healthy: list[str], hanging: list[str], count: int, share: bool, timeout: float):
    """`count` healthy probes, plus one hanging probe after every nine when `share`."""
    from monitoring.probes import ProbeTask
    from monitoring.validation import validate_config

    config = validate_config("http", {})
    tasks, n = [], 0
    while n < count:
        if share and len(tasks) % HANG_EVERY == HANG_EVERY - 1:
            url = hanging[len(tasks) % len(hanging)]
        else:
            url, n = healthy[n % len(healthy)], n + 1
        tasks.append(ProbeTask("http", url, config, timeout))
    return tasks


class Recorder:
    """Wraps run_probe to note when each healthy probe ends."""

    def __init__(self, hanging: list[str]) -> None:
        from monitoring.probes import runner

        self.runner, self.original, self.hanging = runner, runner.run_probe, set(hanging)
        self.ends: list[float] = []
        self.failed_healthy = 0
        self.hung_ok = 0

    async def run_probe(self, task, context):
        result = await self.original(task, context)
        if task.target in self.hanging:
            self.hung_ok += result.ok
        else:
            self.ends.append(time.perf_counter())
            self.failed_healthy += not result.ok
        return result

    def __enter__(self) -> "Recorder":
        self.runner.run_probe = self.run_probe
        return self

    def __exit__(self, *exc: object) -> None:
        self.runner.run_probe = self.original


def run_worker_batches(tasks: list, hanging: list[str], batch: int, concurrency: int):
    from monitoring.probes import run_batch

    with Recorder(hanging) as recorder:
        started, cpu0 = time.perf_counter(), time.process_time()
        for i in range(0, len(tasks), batch):
            asyncio.run(run_batch(tasks[i : i + batch], concurrency=concurrency))
        cpu = time.process_time() - cpu0
    return recorder, started, cpu


def run_threaded_batches(
    tasks: list, hanging: list[str], batch: int, concurrency: int, threads: int
):
    """Batches taken by `threads` threads, each with its own event loop: a worker started
    with `--pool=threads --concurrency=<threads>`."""
    import queue
    import threading

    from monitoring.probes import run_batch

    pending: queue.SimpleQueue = queue.SimpleQueue()
    for i in range(0, len(tasks), batch):
        pending.put(tasks[i : i + batch])

    def work() -> None:
        while True:
            try:
                chunk = pending.get_nowait()
            except queue.Empty:
                return
            asyncio.run(run_batch(chunk, concurrency=concurrency))

    with Recorder(hanging) as recorder:
        started, cpu0 = time.perf_counter(), time.process_time()
        workers = [threading.Thread(target=work) for _ in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        cpu = time.process_time() - cpu0
    return recorder, started, cpu


def run_two_lanes(tasks: list, hanging: list[str], batch: int, concurrency: int):
    """The dispatcher's two lanes in steady state: targets whose last check failed (the
    hanging ones) are batched apart and run by another worker (here a thread, sharing this
    process's CPU); the healthy lane's batches run one after the other, as on a prefork
    worker process."""
    import threading

    from monitoring.probes import run_batch

    hung = set(hanging)
    slow = [task for task in tasks if task.target in hung]
    fast = [task for task in tasks if task.target not in hung]

    def slow_lane() -> None:
        for i in range(0, len(slow), batch):
            asyncio.run(run_batch(slow[i : i + batch], concurrency=concurrency))

    with Recorder(hanging) as recorder:
        started, cpu0 = time.perf_counter(), time.process_time()
        other = threading.Thread(target=slow_lane)
        other.start()
        for i in range(0, len(fast), batch):
            asyncio.run(run_batch(fast[i : i + batch], concurrency=concurrency))
        cpu = time.process_time() - cpu0
        other.join()
    return recorder, started, cpu


def run_one_batch(tasks: list, hanging: list[str], concurrency: int):
    from monitoring.probes import run_batch

    with Recorder(hanging) as recorder:
        started, cpu0 = time.perf_counter(), time.process_time()
        asyncio.run(run_batch(tasks, concurrency=concurrency))
        cpu = time.process_time() - cpu0
    return recorder, started, cpu


def measure(label: str, run, healthy: list[str], hanging: list[str], count: int, args):
    """Healthy probes/s with 0% then 10% hanging; one table row per case."""
    rows, rates = [], []
    for share in (False, True):
        tasks = make_tasks(healthy, hanging, count, share, args.timeout)
        recorder, started, cpu = run(tasks, hanging)
        span = max(recorder.ends) - started
        rate = len(recorder.ends) / span
        rates.append(rate)
        hung = len(tasks) - len(recorder.ends)
        rows.append(
            [
                label,
                "10%" if share else "0%",
                len(recorder.ends),
                hung,
                f"{span:.2f}",
                f"{rate:,.0f}",
                f"{cpu:.2f}",
                recorder.failed_healthy,
            ]
        )
        if recorder.hung_ok:
            raise RuntimeError(f"{recorder.hung_ok} probes of hanging targets succeeded")
        print(f"{label}, {'10%' if share else '0%'} hanging: {rate:,.0f} healthy/s", flush=True)
    return rows, rates[1] / rates[0]


def benchmark(args: argparse.Namespace) -> None:
    app_environment("sqlite://:memory:")
    setup_django()
    set_gc(args.gc)
    with nginx_targets() as healthy_targets, hanging_targets() as hanging_targets_:
        pin(0, MEASURED_CPU)
        healthy, hanging = healthy_targets.urls, hanging_targets_.urls
        print(f"CPUs: {CPUS}; this process pinned to core {MEASURED_CPU}, ", end="")
        print(f"nginx and the hanging listener to core {HELPER_CPU}")
        print(f"load average before the run: {load_average()} (other work skews figures)")
        print(
            f"timeout {args.timeout:g} s, every {HANG_EVERY}th probe to a hanging target, ", end=""
        )
        print(f"garbage collector: {args.gc}\n")
        from monitoring.probes import run_batch

        asyncio.run(run_batch(make_tasks(healthy, hanging, 200, False, args.timeout), 200))
        rows, ratios = [], {}

        def batches(tasks, hanging_):
            return run_worker_batches(tasks, hanging_, args.batch, args.concurrency)

        label = f"worker batches of {args.batch}, concurrency {args.concurrency}"
        found, ratios[label] = measure(label, batches, healthy, hanging, args.healthy, args)
        rows += found

        def lanes(tasks, hanging_):
            return run_two_lanes(tasks, hanging_, args.batch, args.concurrency)

        label = f"two lanes, batches of {args.batch}"
        found, ratios[label] = measure(label, lanes, healthy, hanging, args.healthy, args)
        rows += found
        for threads in (int(t) for t in args.threads.split(",") if t):

            def threaded(tasks, hanging_, threads=threads):
                return run_threaded_batches(tasks, hanging_, args.batch, args.concurrency, threads)

            label = f"worker batches of {args.batch} in {threads} threads"
            found, ratios[label] = measure(label, threaded, healthy, hanging, args.healthy, args)
            rows += found
        for concurrency in (int(c) for c in args.long_concurrency.split(",") if c):

            def one(tasks, hanging_, concurrency=concurrency):
                return run_one_batch(tasks, hanging_, concurrency)

            label = f"one batch, concurrency {concurrency}"
            found, ratios[label] = measure(label, one, healthy, hanging, args.healthy_long, args)
            rows += found
    print()
    headers = ["engine run", "hanging", "healthy", "hung", "span s", "healthy/s", "CPU s"]
    print_table([*headers, "healthy failed"], rows)
    print()
    for label, ratio in ratios.items():
        verdict = "meets" if ratio >= GOAL else "BELOW"
        print(f"{label}: 10%/0% = {ratio:.2f} ({verdict} the goal of >= {GOAL})")


def main() -> int:
    return run_benchmark(benchmark, parse_args())


if __name__ == "__main__":
    sys.exit(main())
