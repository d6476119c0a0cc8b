"""Cost of alerts on PostgreSQL: the notification outbox at ingest, delivery attempts, the
delivery sweep, and maintenance windows in the SLA report.

A throwaway database `healthmon_alerts_<pid>` is created and migrated; everything runs in
this process (Django set up against that database), in four parts:

1. ingest: `checks_record` of a batch of 200 endpoints (failure_threshold 1) that all fail,
   opening 200 incidents at once ("down"), then all succeed, resolving them ("recover"),
   then succeed again, moving nothing ("steady"), in three organizations side by side: no
   channels; 3 organization-wide webhooks and 1 email channel; the same plus 2 maintenance
   windows over the project (everything suppressed). `queue` is a no-op that counts, so
   only the writes are measured; the time inside `notifications_queue` is shown apart.
   Queries, deliveries and the size of the outbox INSERT are counted in an untimed round;
2. delivery: `delivery_attempt` one after the other against a local receiver (a
   ThreadingHTTPServer in a subprocess, on the helper core) answering 204, then 500 (a
   retry is scheduled), then 500 on a delivery's last attempt (it gives up and counts
   against its channel): signed webhooks, loopback allowed by PROBE_ALLOWED_NETWORKS
   (private networks otherwise refused); beside them `send_once` alone (no database) and
   the same POST through one reused `requests` session;
3. the sweep: `deliveries_dispatch` over 100,000 deliveries of which 20,000 pending: 500
   due, none due, and all 20,000 due but held (a burst just queued), with EXPLAIN ANALYZE
   of its query; the lookup each resolving batch makes (`suppressed_openings`) and the
   release of held openings every sweep makes (`openings_release`) on that outbox, and
   part 1's batches again with the outbox that large;
4. maintenance in analytics: `reports.sla` (and `maintenance_intervals` apart) and
   `GET /api/v1/analytics/sla` (Django's test client, an API key) for a page of 50
   endpoints over 30 days, with 0, 5 and 50 weekly organization-wide maintenance windows,
   and 50 windows on one endpoint each;
5. the incident storm: 1,000 endpoints down at once with 3 channels each, the 3,000
   notifications delivered by real Celery workers to local receivers, beside a bare loop
   posting the same bodies (`bench/incident_storm.py`, run as a child process: it starts
   its own workers and database; `--no-storm` leaves it out).

Needs PostgreSQL on 127.0.0.1:5432 (user postgres, trust auth). The database and the
receiver are gone at the end, also on an error, Ctrl-C or SIGTERM.

    .venv/bin/python bench/alerts.py [--runs 20] [--attempts 1000] [--quick] [--no-storm]
"""

import argparse
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from _alerts_delivery import measure_delivery
from _alerts_reads import OUTBOX, measure_sla, measure_sweep
from _support import (
    CPUS,
    HELPER_CPU,
    MEASURED_CPU,
    app_environment,
    database_backend_pid,
    load_average,
    migrate,
    percentile,
    pin,
    print_table,
    run_benchmark,
    setup_django,
    throwaway_database,
    up_endpoint,
)

PHASES = (("down", False), ("recover", True), ("steady", True))
OUTBOX_INSERT = 'INSERT INTO "monitoring_delivery"'


class Collector:
    """Stands in for `alerts.delivery.queue`: counts the ids, queues nothing."""

    def __init__(self) -> None:
        self.sent = 0

    def __call__(self, delivery_ids: Sequence[str]) -> None:
        self.sent += len(delivery_ids)


def ms(values: Sequence[float], share: float) -> str:
    return f"{percentile(values, share):.1f}"


# --- 1. ingest --------------------------------------------------------------------------------


def _ingest_world(size: int) -> list[tuple[str, list[uuid.UUID]]]:
    """Three organizations of `size` up endpoints: no channels, channels, channels and
    maintenance covering the project now."""
    from django.utils import timezone

    from accounts.services import organization_create
    from alerts.models import MaintenanceWindow
    from alerts.services import channel_create, maintenance_window_save
    from monitoring.models import Endpoint

    now = timezone.now()
    created = now - timedelta(days=3)
    worlds = []
    for label, channels, windows in (
        ("no channels", False, False),
        ("3 webhooks + 1 email", True, False),
        ("same + 2 maintenance windows", True, True),
    ):
        org, project = organization_create(name=label)
        endpoints = []
        for i in range(size):
            target = f"https://service{i}.example.com/health"
            endpoint = up_endpoint(project, f"Service {i:03d}", target, 60, created, created)
            endpoint.failure_threshold = 1
            endpoints.append(endpoint)
        Endpoint.objects.bulk_create(endpoints)
        for i in range(3 if channels else 0):
            url = f"https://hooks{i}.example.com/services/T000/B000/secret{i}"
            channel_create(organization=org, name=f"Hook {i}", kind="webhook", config={"url": url})
        if channels:
            config = {"addresses": ["oncall@example.com"], "to_members": True}
            channel_create(organization=org, name="On call", kind="email", config=config)
        if windows:
            # Maintenance is judged at each event's time, and the batches' checks start two
            # days ago: a one-off window over them, and a weekly one whose third occurrence is.
            for name, start, recurrence in (
                ("Migration", now - timedelta(days=3), ""),
                ("Weekly patching", now - timedelta(days=17), "weekly"),
            ):
                maintenance_window_save(
                    window=MaintenanceWindow(organization=org),
                    name=name,
                    starts_at=start,
                    ends_at=start + timedelta(days=4),
                    recurrence=recurrence,
                    projects=[project],
                )
        worlds.append((label, [endpoint.pk for endpoint in endpoints]))
    return worlds


def _outcomes(ids: list[uuid.UUID], at: Any, ok: bool) -> list[Any]:
    from monitoring.checks import CheckOutcome
    from monitoring.probes import ProbeResult

    result = ProbeResult(
        ok=ok,
        response_time_ms=42.0,
        status_detail="HTTP 200" if ok else "HTTP 503",
        error="" if ok else "HTTP 503",
        started_at=at.timestamp(),
    )
    return [CheckOutcome(pk, at, at, result) for pk in ids]


@dataclass
class Counted:
    """What one batch did, from a round that counts rather than times."""

    queries: int
    deliveries: int
    tasks: int
    still_open: int
    insert_kb: float  # the SQL text of the outbox INSERT


class TimedQueue:
    """Wraps `notifications_queue` where `checks_record` calls it: the ms of its last call."""

    def __init__(self, queue: Callable[..., int]) -> None:
        self.queue, self.last = queue, 0.0

    def __call__(self, **kwargs: Any) -> int:
        t0 = time.perf_counter()
        try:
            return self.queue(**kwargs)
        finally:
            self.last = (time.perf_counter() - t0) * 1000


class Ingest:
    """The three organizations and their batches, each batch a minute after the last."""

    def __init__(self, size: int, collector: Collector) -> None:
        from django.utils import timezone

        import pipeline.checks

        self.size, self.collector = size, collector
        self.worlds = _ingest_world(size)
        self.next_at = timezone.now() - timedelta(days=2)
        self.queue = TimedQueue(pipeline.checks.notifications_queue)
        pipeline.checks.notifications_queue = self.queue

    def _batch(self, ids: list[uuid.UUID], ok: bool) -> list[Any]:
        self.next_at += timedelta(minutes=1)
        return _outcomes(ids, self.next_at, ok)

    def counted(self, ids: list[uuid.UUID], ok: bool) -> Counted:
        """One batch, untimed, with what it did counted."""
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        from alerts.models import Delivery
        from monitoring.models import Incident
        from pipeline.checks import checks_record

        outcomes = self._batch(ids, ok)
        rows, sent = Delivery.objects.count(), self.collector.sent
        with CaptureQueriesContext(connection) as captured:
            checks_record(outcomes=outcomes)
        insert = [q["sql"] for q in captured if q["sql"].startswith(OUTBOX_INSERT)]
        return Counted(
            len(captured),
            Delivery.objects.count() - rows,
            self.collector.sent - sent,
            Incident.objects.open().filter(endpoint_id__in=ids).count(),
            sum(map(len, insert)) / 1024,
        )

    def timed(self, ids: list[uuid.UUID], ok: bool) -> tuple[float, float]:
        """One batch: ms in all, ms in notifications_queue."""
        from pipeline.checks import checks_record

        outcomes = self._batch(ids, ok)
        t0 = time.perf_counter()
        stored = checks_record(outcomes=outcomes)
        elapsed = (time.perf_counter() - t0) * 1000
        if stored != len(ids):
            raise RuntimeError(f"stored {stored} of {len(ids)} checks")
        return elapsed, self.queue.last


def measure_ingest(ingest: Ingest, runs: int) -> None:
    """Down, recover and steady batches of the three organizations, interleaved."""
    counted: dict[tuple[str, str], Counted] = {}
    for label, ids in ingest.worlds:  # a round that counts, untimed
        for phase, ok in PHASES:
            done = counted[label, phase] = ingest.counted(ids, ok)
            if done.still_open != (len(ids) if phase == "down" else 0):
                raise RuntimeError(f"{label}, {phase}: {done.still_open} incidents open")
    times: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for _ in range(runs):
        for label, ids in ingest.worlds:
            for phase, ok in PHASES:
                times.setdefault((label, phase), []).append(ingest.timed(ids, ok))
    base = ingest.worlds[0][0]
    rows = []
    for phase, _ in PHASES:
        for label, _ids in ingest.worlds:
            done, whole = counted[label, phase], [t for t, _ in times[label, phase]]
            extra = percentile(whole, 50) - percentile([t for t, _ in times[base, phase]], 50)
            rows.append(
                [
                    f"{phase}: {label}",
                    ms(whole, 50),
                    ms(whole, 95),
                    f"{extra:+.1f}",
                    ms([q for _, q in times[label, phase]], 50),
                    done.queries,
                    f"{done.queries - counted[base, phase].queries:+d}",
                    done.deliveries,
                    done.tasks,
                    f"{done.insert_kb:.0f}",
                ]
            )
    print(f"\n1. ingest: checks_record of a batch of {ingest.size} endpoints, {runs} runs (ms)")
    print("   down: all fail, an incident opens for each; recover: all succeed, each resolves;")
    print("   steady: all succeed again, nothing moves. queue: of it, in notifications_queue;")
    print("   tasks: delivery ids handed to queue (a no-op); SQL KB: the outbox INSERT's text")
    headers = ["batch", "p50", "p95", "Δp50", "queue", "queries", "Δq", "deliveries", "tasks"]
    print_table([*headers, "SQL KB"], rows)
    steady = [counted[label, "steady"].queries for label, _ in ingest.worlds]
    verdict = "none" if len(set(steady)) == 1 else "SOME"
    print(f"   extra queries when nothing moves, with channels and windows: {verdict} {steady}")


def measure_ingest_again(ingest: Ingest, runs: int) -> None:
    """The channels' organization again, now that the outbox is large."""
    label, ids = ingest.worlds[1]
    times: dict[str, list[tuple[float, float]]] = {}
    for _ in range(runs):
        for phase, ok in PHASES:
            times.setdefault(phase, []).append(ingest.timed(ids, ok))
    print(f"\n   the same batches, {label}, with {OUTBOX:,}+ rows in the outbox, {runs} runs:")
    rows = [
        [
            f"{phase}: {label}",
            ms([t for t, _ in found], 50),
            ms([t for t, _ in found], 95),
            ms([q for _, q in found], 50),
        ]
        for phase, found in times.items()
    ]
    print_table(["batch", "p50 ms", "p95 ms", "queue p50"], rows)


# --- main -------------------------------------------------------------------------------------


def benchmark(args: argparse.Namespace) -> None:
    runs = 1 if args.smoke else 5 if args.quick else args.runs
    attempts = 20 if args.smoke else 200 if args.quick else args.attempts
    if args.smoke:
        args.endpoints = 10
    if CPUS > 1:
        pin(0, MEASURED_CPU)
    print(f"CPUs: {CPUS}; load average {load_average()}")
    with throwaway_database("healthmon_alerts") as url:
        app_environment(url, ALLOWED_HOSTS="testserver")
        migrate()
        setup_django()
        from alerts import delivery, services

        collector = Collector()
        services.queue = delivery.queue = collector  # measure the writes: queue no task
        if CPUS > 1:
            # Its server process shares the helper core with the receiver, not this one.
            pin(database_backend_pid(), HELPER_CPU)
            print(f"this process on core {MEASURED_CPU}; its PostgreSQL backend and the ", end="")
            print(f"receiver on core {HELPER_CPU}")
        ingest = Ingest(args.endpoints, collector)
        measure_ingest(ingest, runs)
        measure_delivery(attempts)
        measure_sweep(runs)
        measure_ingest_again(ingest, runs)
        measure_sla(runs)
        print(f"\nload average after: {load_average()}")
    if not args.no_storm:
        storm(args)


def storm(args: argparse.Namespace) -> None:
    """Part 5: the incident storm, in a child process of its own (its workers, its database)."""
    print("\n== 5. incident storm (bench/incident_storm.py) ==", flush=True)
    mode = ["--smoke"] if args.smoke else ["--quick"] if args.quick else []
    script = Path(__file__).with_name("incident_storm.py")
    subprocess.run([sys.executable, str(script), *mode], check=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--endpoints", type=int, default=200, help="endpoints per batch")
    parser.add_argument("--runs", type=int, default=20, help="runs of each batch, sweep, report")
    parser.add_argument("--attempts", type=int, default=1000, help="delivery attempts per case")
    parser.add_argument("--quick", action="store_true", help="5 runs, 200 attempts")
    parser.add_argument("--smoke", action="store_true", help="a run of a few seconds: does it work")
    parser.add_argument("--no-storm", action="store_true", help="leave out part 5, the storm")
    return run_benchmark(benchmark, parser.parse_args())


if __name__ == "__main__":
    raise SystemExit(main())
