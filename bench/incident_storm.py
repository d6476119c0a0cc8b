"""An incident storm: 1,000 endpoints going down at once with 3 channels each, delivered by
real Celery workers on PostgreSQL and Redis, beside a bare loop posting the same bodies.

A throwaway database `healthmon_storm_<pid>` is created and migrated; the broker and the
cache are Redis db 5 (emptied first). Local receivers (`_storm_receiver.py`, one asyncio
process per port, keep-alive, answering 204) count every POST by path and
`X-Healthmon-Delivery` id, so a repeat shows as a duplicate. For each worker pool asked
(`--pools prefork:2,threads:8`: pool and concurrency), in an organization of its own:

1. the storm: `pipeline.checks.checks_record` of failed checks for all endpoints
   (`failure_threshold` 1), in batches of `--batch` as the probe workers store them; each
   commit opens its incidents and queues their deliveries (2 signed webhooks and a
   Slack-shaped channel, organization-wide) to a `celery -A healthmon worker` started
   for the run. Measured: deliveries seen at the receivers (and duplicates), `Delivery`
   rows delivered and attempts written, time from the first incident's commit to the last
   POST received, and CPU seconds from /proc of the worker (all its processes), of the
   receivers, of this process (the ingest) and of the rest of the machine (PostgreSQL,
   Redis); deliveries/s per worker CPU-second is the figure the goal is about;
2. the baseline, the same bodies and headers to the same receivers from this process: one
   reused `requests` session, then the bare transport (`alerts.transport.post_json`, as
   each attempt calls it), both one after the other; per CPU-second of this process.

Goal: >= 500 deliveries/s per worker core, 0 duplicates, every delivery delivered.

Needs PostgreSQL on 127.0.0.1:5432 (user postgres, trust) and Redis on 127.0.0.1:6379.
The database, workers and receivers are gone at the end, also on an error or Ctrl-C.

    .venv/bin/python bench/incident_storm.py [--endpoints 1000] [--pools prefork:2,threads:8]
        [--receivers 2] [--batch 100] [--quick] [--smoke]
"""

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import redis
from _storm_profile import caught_tasks, run_tasks
from _support import (
    BIN,
    CPUS,
    ROOT,
    app_environment,
    cpu_seconds,
    load_average,
    migrate,
    print_table,
    run_benchmark,
    setup_django,
    stop,
    throwaway_database,
    tree_cpu_seconds,
    up_endpoint,
)

REDIS_URL = "redis://127.0.0.1:6379/5"
RECEIVER = Path(__file__).with_name("_storm_receiver.py")
GOAL_PER_CORE = 500
KINDS = ("webhook", "webhook", "slack")


# --- receivers ------------------------------------------------------------------------------


@dataclass
class Receivers:
    """Receiver processes, one port each."""

    ports: list[int]
    processes: list[subprocess.Popen]

    def _call(self, port: int, method: str, path: str) -> bytes:
        request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.read()

    def stats(self) -> dict[str, float]:
        """Counts summed over the receivers (first: earliest, last: latest POST)."""
        found = [json.loads(self._call(port, "GET", "/_stats")) for port in self.ports]
        total = {key: sum(f[key] for f in found) for key in ("posts", "unique", "duplicates")}
        total["connections"] = sum(f["connections"] for f in found)
        total["first"] = min((f["first"] for f in found if f["first"]), default=0.0)
        total["last"] = max(f["last"] for f in found)
        return total

    def reset(self) -> None:
        for port in self.ports:
            self._call(port, "POST", "/_reset")

    def cpu_seconds(self) -> float:
        return sum(tree_cpu_seconds(process.pid) for process in self.processes)


@contextlib.contextmanager
def receivers(count: int) -> Iterator[Receivers]:
    processes: list[subprocess.Popen] = []
    try:
        ports = []
        for _ in range(count):
            process = subprocess.Popen(
                [sys.executable, str(RECEIVER), "0"], stdout=subprocess.PIPE, text=True
            )
            processes.append(process)
            line = process.stdout.readline().split() if process.stdout else []
            if not line:
                raise RuntimeError("a receiver did not start")
            ports.append(int(line[0]))
        yield Receivers(ports, processes)
    finally:
        for process in processes:
            stop(process)


# --- the world and the worker ---------------------------------------------------------------


def make_world(label: str, size: int, ports: list[int]) -> tuple[list[Any], list[str]]:
    """An organization of `size` up endpoints and 3 organization-wide channels, each on a
    receiver port of its own where there are enough: (endpoint ids, channel URLs)."""
    from django.utils import timezone

    from accounts.services import organization_create
    from alerts.services import channel_create
    from monitoring.models import Endpoint

    created = timezone.now() - timedelta(days=1)
    org, project = organization_create(name=f"Storm {label}")
    endpoints = []
    for i in range(size):
        target = f"https://service{i}.example.com/health"
        endpoint = up_endpoint(project, f"Service {i:04d}", target, 60, created, created)
        endpoint.failure_threshold = 1
        endpoints.append(endpoint)
    Endpoint.objects.bulk_create(endpoints)
    urls = []
    for i, kind in enumerate(KINDS):
        url = f"http://127.0.0.1:{ports[i % len(ports)]}/{label}/{kind}{i}"
        channel_create(organization=org, name=f"{kind} {i}", kind=kind, config={"url": url})
        urls.append(url)
    return [endpoint.pk for endpoint in endpoints], urls


@contextlib.contextmanager
def worker(pool: str, concurrency: int, log: Path) -> Iterator[subprocess.Popen]:
    """A `celery -A healthmon worker` on the default queue, ready when this yields."""
    from healthmon.celery import app

    name = f"storm-{pool}-{time.monotonic_ns()}@localhost"
    command = [str(BIN / "celery"), "-A", "healthmon", "worker", "-Q", "celery", "-n", name]
    command += [f"--pool={pool}", f"--concurrency={concurrency}", "--loglevel=WARNING"]
    with log.open("w") as out:
        # INFO, as deployed: a line per attempt (`delivery_attempt`) is part of the cost.
        env = {**os.environ, "LOG_LEVEL": "INFO"}
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=out)
    try:
        deadline = time.monotonic() + 60
        while not app.control.ping(destination=[name], timeout=0.5):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the worker did not start: {log.read_text()[-2000:]}")
        time.sleep(1.0)  # every pool process up and idle
        yield process
    finally:
        stop(process, timeout=30)


def database_cpu(before: dict[int, float] | None = None) -> dict[int, float]:
    """CPU seconds of each PostgreSQL backend serving this database now (less `before`'s)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
        pids = [pid for (pid,) in cursor.fetchall()]
    before = before or {}
    return {pid: cpu_seconds(pid) - before.get(pid, 0.0) for pid in pids}


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine spent busy (not idle or waiting), from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    busy = sum(fields) - fields[3] - fields[4]
    return busy / os.sysconf("SC_CLK_TCK")


# --- 1. the storm ---------------------------------------------------------------------------


def failed_outcomes(ids: list[Any], at: Any) -> list[Any]:
    from monitoring.checks import CheckOutcome
    from monitoring.probes import ProbeResult

    result = ProbeResult(
        ok=False,
        response_time_ms=10000.0,
        status_detail="HTTP 503",
        error="HTTP 503",
        started_at=at.timestamp(),
    )
    return [CheckOutcome(pk, at, at, result) for pk in ids]


def trigger(ids: list[Any], batch: int) -> float:
    """Failed checks for every endpoint through `checks_record`, `batch` a call, as the
    probe workers store them; the wall-clock time the first call committed."""
    from django.utils import timezone

    from pipeline.checks import checks_record

    at, first_commit = timezone.now(), 0.0
    for n in range(0, len(ids), batch):
        checks_record(outcomes=failed_outcomes(ids[n : n + batch], at))
        first_commit = first_commit or time.time()
    return first_commit


def in_process(label: str, size: int, sink: Receivers, args: argparse.Namespace) -> list:
    """The storm's tasks run one after the other in this process (no Celery, no broker):
    [label, seen, duplicates, wall s, CPU s], and cProfile's top lines with --profile."""
    ids, _ = make_world(label, size, sink.ports)
    tasks = caught_tasks(lambda: trigger(ids, args.batch))
    sink.reset()
    wall, cpu, _ = run_tasks(tasks, profile=False)
    seen = sink.stats()
    if args.profile:
        ids, _ = make_world(f"{label}-profiled", size, sink.ports)
        tasks = caught_tasks(lambda: trigger(ids, args.batch))
        print(f"\ncProfile of the tasks of {size} endpoints run here, by cumulative CPU time:")
        print(run_tasks(tasks, profile=True)[2])
    label = f"delivery tasks in-process ({len(tasks)})"
    return [label, int(seen["unique"]), int(seen["duplicates"]), wall, cpu]


@dataclass
class Storm:
    """What one storm did and cost."""

    label: str
    expected: int
    seen: dict[str, float]
    delivered: int
    attempts: int
    ingest_s: float
    first_commit: float
    worker_cpu: float
    receivers_cpu: float
    ingest_cpu: float
    database_cpu: float
    machine_cpu: float

    @property
    def span(self) -> float:
        """Seconds from the first incident's commit to the last POST received."""
        return self.seen["last"] - self.first_commit

    def row(self) -> list[object]:
        per_core = self.seen["unique"] / self.worker_cpu if self.worker_cpu else 0.0
        rest = self.machine_cpu - self.worker_cpu - self.receivers_cpu - self.ingest_cpu
        rest -= self.database_cpu
        return [
            self.label,
            f"{int(self.seen['unique'])}/{self.expected}",
            int(self.seen["duplicates"]),
            f"{self.delivered}/{self.attempts}",
            f"{self.ingest_s:.2f}",
            f"{self.span:.2f}",
            f"{self.seen['unique'] / self.span:.0f}",
            f"{self.worker_cpu:.2f}",
            f"{per_core:.0f}",
            f"{self.receivers_cpu:.2f}",
            f"{self.ingest_cpu:.2f}",
            f"{self.database_cpu:.2f}",
            f"{rest:.2f}",
        ]


def _wait_for(sink: Receivers, expected: int, timeout: float) -> dict[str, float]:
    deadline = time.monotonic() + timeout
    while (seen := sink.stats())["unique"] < expected:
        if time.monotonic() > deadline:
            print(f"   timed out: {seen['unique']} of {expected} seen")
            break
        time.sleep(0.05)
    return seen


def storm(label: str, pool: str, concurrency: int, size: int, sink: Receivers, args) -> Storm:
    """One storm through a fresh worker of this pool; figures once every delivery arrived
    (and half a second more, for late duplicates)."""
    from alerts.models import Delivery, DeliveryAttempt, DeliveryStatus

    ids, _ = make_world(label, size, sink.ports)
    expected = size * len(KINDS)
    sink.reset()
    with worker(pool, concurrency, Path(args.logs) / f"worker-{label}.log") as process:
        cpu0, sink0, busy0 = (
            tree_cpu_seconds(process.pid),
            sink.cpu_seconds(),
            machine_busy_seconds(),
        )
        database0 = database_cpu()
        own0, started, first_commit = time.process_time(), time.perf_counter(), 0.0
        first_commit = trigger(ids, args.batch)
        ingest_s, ingest_cpu = time.perf_counter() - started, time.process_time() - own0
        _wait_for(sink, expected, timeout=args.timeout)
        time.sleep(0.5)
        seen = sink.stats()
        worker_cpu, busy = tree_cpu_seconds(process.pid) - cpu0, machine_busy_seconds() - busy0
        receivers_cpu = sink.cpu_seconds() - sink0
        database = sum(database_cpu(database0).values())
    rows = Delivery.objects.filter(channel__organization__name=f"Storm {label}")
    delivered = rows.filter(status=DeliveryStatus.DELIVERED).count()
    attempts = DeliveryAttempt.objects.filter(delivery__in=rows).count()
    return Storm(
        label, expected, seen, delivered, attempts, ingest_s, first_commit,
        worker_cpu, receivers_cpu, ingest_cpu, database, busy,
    )  # fmt: skip


# --- 2. the baseline ------------------------------------------------------------------------


def prepared_posts(label: str) -> list[tuple[str, bytes, dict[str, str]]]:
    """(URL, body, headers) of every delivery of a storm, as an attempt would send them."""
    from alerts import messages
    from alerts.delivery import EVENT_HEADER, ID_HEADER, SIGNATURE_HEADER, signature
    from alerts.models import ChannelKind, Delivery, NotificationChannel

    mine = NotificationChannel.objects.filter(organization__name=f"Storm {label}")
    channels = {channel.pk: channel for channel in mine}
    posts = []
    for delivery in Delivery.objects.filter(channel_id__in=list(channels)):
        channel = channels[delivery.channel_id]
        headers = {EVENT_HEADER: delivery.event, ID_HEADER: str(delivery.event_id)}
        if channel.kind == ChannelKind.WEBHOOK:
            body = messages.encode(delivery.payload)
            headers[SIGNATURE_HEADER] = signature(channel.secret, body)
        else:
            body = messages.encode(messages.chat_body(channel.kind, delivery.payload))
        posts.append((channel.config["url"], body, headers))
    return posts


def baseline(posts: list[tuple[str, bytes, dict[str, str]]], sink: Receivers) -> list[list]:
    """The same POSTs one after the other from this process: a reused session, then the
    bare transport."""
    import requests

    from alerts.transport import post_json

    rows = []
    with requests.Session() as session:
        session.trust_env = False

        def reused(url: str, body: bytes, headers: dict[str, str]) -> None:
            head = {"Content-Type": "application/json", **headers}
            session.post(url, data=body, headers=head, timeout=10).raise_for_status()

        def transport(url: str, body: bytes, headers: dict[str, str]) -> None:
            if not post_json(url, body, headers, 10).ok:
                raise RuntimeError("the bare transport failed a POST")

        for label, send in (("requests, one reused session", reused), ("post_json", transport)):
            sink.reset()
            wall, cpu = time.perf_counter(), time.process_time()
            for post in posts:
                send(*post)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            seen = sink.stats()
            rows.append([label, int(seen["unique"]), int(seen["duplicates"]), wall, cpu])
    return rows


# --- main -----------------------------------------------------------------------------------


def report(storms: list[Storm], bare: list[list], receivers_count: int) -> None:
    print(f"\n1. storm: deliveries through Celery workers ({receivers_count} receiver processes)")
    headers = ["worker pool", "seen", "dups", "delivered/attempts", "ingest s", "span s"]
    headers += ["per s", "worker CPU s", "per CPU-s", "recv CPU", "ingest CPU", "PG CPU"]
    headers.append("rest CPU")
    print_table(headers, [s.row() for s in storms])
    print("   span: first incident committed -> last POST received; PG CPU: this database's")
    print("   backends; rest CPU: the machine's busy seconds meanwhile less all those (Redis,")
    print("   and anything else running on the machine)")
    print("\n2. baseline: the same bodies from this process, one after the other; then the")
    print("   storm's delivery tasks run in this process (no Celery) on a world of their own")
    rows = []
    for label, unique, dups, wall, cpu in bare:
        rows.append([label, unique, dups, f"{wall:.2f}", f"{unique / wall:.0f}", f"{cpu:.2f}"])
        rows[-1].append(f"{unique / cpu:.0f}")
    print_table(["loop", "seen", "dups", "wall s", "per s", "CPU s", "per CPU-s"], rows)
    floor = bare[0][1] / bare[0][4]
    print("\nratios and goals (per CPU-s of the sender):")
    for s in storms:
        per_core = s.seen["unique"] / s.worker_cpu
        ok = per_core >= GOAL_PER_CORE and not s.seen["duplicates"] and s.delivered == s.expected
        print(
            f"   {s.label}: {per_core:.0f} deliveries/s per worker core, "
            f"{per_core / floor:.2f}x the reused-session loop; goal >= {GOAL_PER_CORE}, "
            f"0 duplicates, all delivered: {'met' if ok else 'MISSED'}"
        )


def benchmark(args: argparse.Namespace) -> None:
    size = 20 if args.smoke else 300 if args.quick else args.endpoints
    pools = [p.split(":") for p in args.pools.split(",")]
    if args.smoke:
        pools = pools[:1]
    print(f"CPUs: {CPUS}; load average {load_average()}; {size} endpoints x {len(KINDS)} channels")
    redis.Redis.from_url(REDIS_URL).flushdb()
    Path(args.logs).mkdir(parents=True, exist_ok=True)
    with throwaway_database("healthmon_storm") as url:
        app_environment(url, CACHE_URL=REDIS_URL, CELERY_BROKER_URL=REDIS_URL)
        migrate()
        setup_django()
        with receivers(1 if args.smoke else args.receivers) as sink:
            storms = [storm(f"{pool}{n}", pool, int(n), size, sink, args) for pool, n in pools]
            bare = baseline(prepared_posts(storms[0].label), sink)
            bare.append(in_process("inproc", size, sink, args))
        report(storms, bare, len(sink.ports))
        failed = [s.label for s in storms if s.seen["unique"] < s.expected or s.seen["duplicates"]]
        if failed:
            raise RuntimeError(f"deliveries missing or repeated in: {', '.join(failed)}")
    print(f"\nload average after: {load_average()}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--endpoints", type=int, default=1000, help="endpoints going down")
    parser.add_argument("--pools", default="prefork:2,threads:8", help="pool:concurrency,...")
    parser.add_argument("--receivers", type=int, default=2, help="receiver processes")
    parser.add_argument("--batch", type=int, default=100, help="checks per checks_record call")
    parser.add_argument("--timeout", type=float, default=180, help="seconds to wait per storm")
    parser.add_argument("--logs", default="/tmp/healthmon-storm", help="worker logs go here")
    parser.add_argument("--profile", action="store_true", help="cProfile the in-process tasks")
    parser.add_argument("--quick", action="store_true", help="300 endpoints")
    parser.add_argument("--smoke", action="store_true", help="20 endpoints, one pool: does it work")
    return run_benchmark(benchmark, parser.parse_args())


if __name__ == "__main__":
    raise SystemExit(main())
