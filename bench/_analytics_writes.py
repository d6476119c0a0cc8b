"""Writes measured by the analytics benchmark (it is no benchmark): ingest through
`checks_record` with rollup upkeep, and retention (dropping day partitions) beside the
batched row delete it replaced."""

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from _analytics_data import Progress, connect, in_parallel
from _analytics_world import DbClock, World
from _support import (
    BIN,
    cpu_seconds,
    database_backend_pid,
    percentile,
    print_table,
    set_gc,
    setup_django,
)

GOAL_INGEST = 20_000
BATCH = 200
INGEST_ENDPOINTS = 2_000  # per ingest process: ten batches
SCRIPT = Path(__file__).with_name("analytics.py")


def ingest_endpoints(processes: int, per_process: int) -> list[list[list[str]]]:
    """Fresh endpoints for each ingest process, in groups of 200 (one batch each)."""
    from accounts.services import organization_create
    from monitoring.models import Endpoint
    from monitoring.targets import mask_config, mask_target
    from monitoring.validation import validate_config

    _, project = organization_create(name=f"Ingest {uuid.uuid4().hex[:8]}")
    config = validate_config("http", {})
    made = Endpoint.objects.bulk_create(
        [
            Endpoint(
                project=project,
                name=f"Ingest {n:05d}",
                type="http",
                target=f"https://ingest{n}.example.com/health",
                target_masked=mask_target(f"https://ingest{n}.example.com/health"),
                config=config,
                config_masked=mask_config(config),
                interval_seconds=30,
                timeout_seconds=10,
            )
            for n in range(processes * per_process)
        ],
        batch_size=1000,
    )
    ids = [str(endpoint.pk) for endpoint in made]
    return [
        [
            ids[p * per_process + g : p * per_process + g + BATCH]
            for g in range(0, per_process, BATCH)
        ]
        for p in range(processes)
    ]


INGEST_KINDS = (
    ("FOR UPDATE", "endpoint lock"),
    ("FOR NO KEY UPDATE", "endpoint lock"),
    ('INSERT INTO "monitoring_checkresult"', "checks insert"),
    ('COPY "monitoring_checkresult"', "checks insert"),
    ('FROM "monitoring_checkresult"', "slot check"),
    ("analytics_rollup", "rollups"),
    ('UPDATE "monitoring_endpoint"', "endpoint update"),
)


def ingest_kind(sql: str) -> str:
    """Which part of ingest a statement belongs to (the lock's mark ends its statement)."""
    head = sql[:300] + sql[-40:]
    return next((kind for mark, kind in INGEST_KINDS if mark in head), "other")


def clock_copies(clock: DbClock) -> None:
    """Count the raw rows' COPY in the clock too: it runs on psycopg's cursor directly,
    which Django's execute wrappers do not see."""
    from monitoring.checks import store as checks

    copy = checks.checks_copy

    def timed_copy(**kwargs: Any) -> None:
        clock(lambda *_: copy(**kwargs), 'COPY "monitoring_checkresult"', None, False, None)

    checks.checks_copy = timed_copy


def ingester(path: str) -> int:
    """Run as one ingest process: a warm-up round, then the timed rounds on `go`."""
    setup_django()
    from django.db import connection

    from monitoring.checks import CheckOutcome
    from monitoring.probes.base import ProbeResult
    from pipeline import checks as pipeline
    from pipeline.checks import checks_record

    params = json.loads(Path(path).read_text())
    groups = [[uuid.UUID(pk) for pk in group] for group in params["groups"]]
    t0 = datetime.fromisoformat(params["t0"])
    rollup_seconds = [0.0]
    add = pipeline.rollups_add

    def timed_add(**kwargs: Any) -> None:
        began = time.perf_counter()
        add(**kwargs)
        rollup_seconds[0] += time.perf_counter() - began

    pipeline.rollups_add = timed_add

    def outcomes(r: int, group: list[uuid.UUID], g: int) -> list:
        made = []
        for j, pk in enumerate(group):
            n = g * BATCH + j
            slot = t0 + timedelta(seconds=30 * r, milliseconds=n * 7 % 30_000)
            # Isolated failures, and every 100th endpoint down for rounds 5 to 8.
            ok = (r * 31 + n) % 211 != 0 and not (n % 100 == 0 and 5 <= r <= 8)
            ms = 20 + (n * 13 + r * 7) % 300 + (n % 10) / 10 if ok else 10_000.0
            result = ProbeResult(
                ok,
                ms,
                "HTTP 200" if ok else "",
                "" if ok else "timed out after 10 s",
                started_at=slot.timestamp(),
            )
            made.append(CheckOutcome(pk, slot, slot + timedelta(milliseconds=4), result))
        return made

    for g, group in enumerate(groups):
        checks_record(outcomes=outcomes(0, group, g))
    set_gc("freeze")  # as a worker process does (healthmon/celery.py)
    rollup_seconds[0] = 0.0
    print("ready", flush=True)
    sys.stdin.readline()
    batches, clock = [], DbClock(ingest_kind)
    clock_copies(clock)
    backend = database_backend_pid()
    server0, cpu0 = cpu_seconds(backend), time.process_time()
    began = time.perf_counter()
    with connection.execute_wrapper(clock):
        for r in range(1, params["rounds"] + 1):
            for g, group in enumerate(groups):
                made = outcomes(r, group, g)
                at = time.perf_counter()
                stored = checks_record(outcomes=made)
                batches.append(time.perf_counter() - at)
                if stored != len(made):
                    raise RuntimeError(f"stored {stored} of {len(made)}")
    wall = time.perf_counter() - began
    cpu, server = time.process_time() - cpu0, cpu_seconds(backend) - server0
    result = {
        "cpu": cpu,
        "server_cpu": server,
        "results": len(batches) * BATCH,
        "wall": wall,
        "batches": batches,
        "began": time.time() - wall,
        "rollups": rollup_seconds[0],
        "db": clock.seconds,
        "by_kind": clock.by_kind,
    }
    Path(params["out"]).write_text(json.dumps(result))
    return 0


def measure_ingest(
    args: argparse.Namespace, world: World, processes: int, groups: list | None = None
) -> dict:
    """Ingest `--ingest-results` results with `processes` processes at once, each for its
    own 2,000 fresh endpoints, or for the groups of endpoints given."""
    label = f"{processes} process(es), fresh endpoints"
    if groups is None:
        groups = ingest_endpoints(processes, INGEST_ENDPOINTS)
    else:
        label = f"{processes} process, endpoints with a day of checks"
    per_process = sum(len(group) for group in groups[0])
    rounds = max(1, args.ingest_results // (per_process * processes))
    t0 = world.end + timedelta(hours=1)
    with tempfile.TemporaryDirectory(prefix="bench-analytics-") as folder:
        children, outs = [], []
        try:
            for p in range(processes):
                out = Path(folder, f"out{p}.json")
                spec = Path(folder, f"in{p}.json")
                spec.write_text(
                    json.dumps(
                        {
                            "groups": groups[p],
                            "t0": t0.isoformat(),
                            "rounds": rounds,
                            "out": str(out),
                        }
                    )
                )
                command = [str(BIN / "python"), str(SCRIPT), "--as-ingester", str(spec)]
                children.append(
                    subprocess.Popen(
                        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
                    )
                )
                outs.append(out)
            for child in children:
                if child.stdout is None or child.stdout.readline().strip() != "ready":
                    raise RuntimeError("an ingest process did not start")
            for child in children:
                assert child.stdin is not None
                child.stdin.write("go\n")
                child.stdin.flush()
            for child in children:
                if child.wait(timeout=1800) != 0:
                    raise RuntimeError(f"an ingest process exited with {child.returncode}")
        finally:
            for child in children:
                if child.poll() is None:
                    child.kill()
                    child.wait()
        runs = [json.loads(out.read_text()) for out in outs]
    began = min(run["began"] for run in runs)
    ended = max(run["began"] + run["wall"] for run in runs)
    results = sum(run["results"] for run in runs)
    return {
        "label": label,
        "results": results,
        "wall": ended - began,
        "runs": runs,
        "rate": results / (ended - began),
    }


GOAL_RETENTION_S = 2.0
OLD_DELETE_BUDGET_S = 20.0  # the batched row delete is timed this long, then extrapolated


def retention_kind(sql: str) -> str:
    """Which table a retention statement works on."""
    if "DROP TABLE" in sql or "LOCK TABLE" in sql or "pg_inherits" in sql or "regclass" in sql:
        return "check partitions"
    for table, kind in (
        ("monitoring_checkresult", "checks"),
        ("analytics_rollup_5m", "rollups 5m"),
        ("analytics_rollup_1h", "rollups 1h"),
    ):
        if table in sql:
            return kind + (" delete" if sql.lstrip().upper().startswith("DELETE") else " select")
    return "other"


def _day_copy(url: str, partitions: list[str]) -> tuple[int, float]:
    """`bench_day_copy`: the raw day as one unpartitioned table with the same indexes (as
    raw checks were kept before partitioning); returns its rows and the seconds it took."""
    began = time.perf_counter()
    with connect(url) as conn:
        conn.execute("SET session_replication_role = DEFAULT")
        conn.execute("CREATE TABLE bench_day_copy (LIKE monitoring_checkresult INCLUDING DEFAULTS)")
        for name in partitions:
            conn.execute(f"INSERT INTO bench_day_copy SELECT * FROM {name}")
        definitions = [
            row[0]
            for row in conn.execute(
                "SELECT indexdef FROM pg_indexes WHERE tablename = 'monitoring_checkresult'"
            )
        ]
        copies = [
            re.sub(
                r"INDEX (\S+) ON (ONLY )?(\S+)",
                f"INDEX bench_copy_{n} ON public.bench_day_copy",
                sql,
            )
            for n, sql in enumerate(definitions)
        ]
        in_parallel(url, [lambda c, sql=sql: c.execute(sql) for sql in copies])
        conn.execute("VACUUM (ANALYZE) bench_day_copy")
        rows = conn.execute("SELECT count(*) FROM bench_day_copy").fetchone()[0]
    return rows, time.perf_counter() - began


def _old_row_delete(url: str, budget: float) -> tuple[int, float]:
    """The batched delete raw retention did before partitioning (20,000 rows a statement,
    oldest ids first), on the copy, for at most `budget` seconds: (rows, seconds)."""
    deleted, began = 0, time.perf_counter()
    with connect(url) as conn:
        conn.execute("SET session_replication_role = DEFAULT")
        while time.perf_counter() - began < budget:
            count = conn.execute(
                "DELETE FROM bench_day_copy WHERE id IN "
                "(SELECT id FROM bench_day_copy ORDER BY id LIMIT 20000)"
            ).rowcount
            deleted += count
            if count < 20000:
                break
        seconds = time.perf_counter() - began
        conn.execute("DROP TABLE bench_day_copy")
    return deleted, seconds


def measure_retention(url: str, world: World, progress: Progress) -> list[list[str]]:
    """`retention_run` dropping the raw day's partitions, beside the batched row delete of
    the same rows from one unpartitioned table (timed for a while, then extrapolated)."""
    from django.conf import settings
    from django.db import connection

    from analytics.services import retention_run
    from monitoring.partitions import partition_name

    days = sorted({world.start.date(), (world.end - timedelta(microseconds=1)).date()})
    names = [partition_name(day) for day in days]
    copied, copy_seconds = _day_copy(url, names)
    progress.say(
        f"unpartitioned copy of the raw day ({copied:,} rows) made in {copy_seconds:.0f} s"
    )
    old_rows, old_seconds = _old_row_delete(url, OLD_DELETE_BUDGET_S)
    old_rate = old_rows / max(old_seconds, 1e-9)
    progress.say("old row delete timed; running retention_run")
    # The raw day ends within its last partition's day: retention past that day drops both.
    now = datetime.combine(days[-1], datetime.min.time(), world.end.tzinfo) + timedelta(
        days=1 + settings.RAW_RETENTION_DAYS
    )
    clock = DbClock(retention_kind)
    began = time.perf_counter()
    with connection.execute_wrapper(clock):
        deleted = retention_run(now=now)
    seconds = time.perf_counter() - began
    drop = clock.by_kind.get("check partitions", 0.0)
    default = clock.by_kind.get("checks select", 0) + clock.by_kind.get("checks delete", 0)
    return [
        ["retention_run, all of it", f"{seconds:.2f} s", json.dumps(deleted)],
        [
            "  raw checks: day partitions dropped",
            f"{drop:.2f} s",
            f"{deleted['check_days']} partition(s), {copied:,} rows; goal <= "
            f"{GOAL_RETENTION_S:.0f} s: {'meets' if drop <= GOAL_RETENTION_S else 'MISSES'}",
        ],
        ["  raw checks: DEFAULT partition rows", f"{default:.2f} s", f"{deleted['checks']:,} rows"],
        [
            "  5-minute rollups (unchanged)",
            f"{sum(v for k, v in clock.by_kind.items() if '5m' in k):.1f} s",
            f"{deleted['rollups_5m']:,} rows",
        ],
        [
            "before: batched row delete, same rows",
            f"{copied / max(old_rate, 1e-9):.1f} s"
            + (" (extrapolated)" if old_rows < copied else ""),
            f"{old_rows:,} rows deleted in {old_seconds:.1f} s, {old_rate:,.0f} rows/s; "
            "VACUUM after it not counted",
        ],
    ]


def fold_start(world: World) -> None:
    """Put the fold's watermark at the end of the built data (whose rows are in every
    tier): the ingest runs, an hour later, then write the five-minute tier only, as
    batches in steady state do (`analytics.fold`)."""
    from analytics.models import FiveMinuteRollup, RollupFold
    from analytics.windows import ceil

    RollupFold.objects.update_or_create(
        pk=1, defaults={"folded_to": ceil(world.end, FiveMinuteRollup.width)}
    )


def measure_fold(world: World, results: int) -> dict:
    """The fold of everything the ingest runs stored, as beat runs it (an hour of buckets
    a run), timed by the CPU of this process and of its PostgreSQL backend."""
    from django.db import connection

    from analytics.models import RollupFold
    from analytics.services import rollups_fold

    connection.ensure_connection()
    backend = database_backend_pid()
    server0, cpu0, began = cpu_seconds(backend), time.process_time(), time.perf_counter()
    folded, runs = 0, 0
    end = world.end + timedelta(hours=3)  # past the last ingested check
    while True:
        before = RollupFold.objects.get().folded_to
        folded += rollups_fold(now=end)
        runs += 1
        if RollupFold.objects.get().folded_to == before:
            break
    return {
        "rows": folded,
        "runs": runs,
        "wall": time.perf_counter() - began,
        "cpu": time.process_time() - cpu0,
        "server_cpu": cpu_seconds(backend) - server0,
        "results": results,
    }


def print_fold(fold: dict) -> None:
    """The fold's cost, per five-minute row folded and per result ingested."""
    per_result = (fold["cpu"] + fold["server_cpu"]) / fold["results"] * 1e6
    print_table(
        [
            "fold (beat, every minute)",
            "5-min rows",
            "runs",
            "wall s",
            "CPU s: client / server",
            "CPU µs per result ingested",
        ],
        [
            [
                "hourly and daily tiers from the 5-minute rows",
                f"{fold['rows']:,}",
                str(fold["runs"]),
                f"{fold['wall']:.2f}",
                f"{fold['cpu']:.2f} / {fold['server_cpu']:.2f}",
                f"{per_result:.1f}",
            ]
        ],
    )


def print_ingest(runs: Sequence[dict], fold: dict | None = None) -> None:
    """Results/s of each ingest run, and where its time went (share of the wall time);
    with the fold's cost per result, what both cores would ingest with it paid."""
    kinds = [*dict.fromkeys(kind for _, kind in INGEST_KINDS), "other"]
    rows = []
    for run in runs:
        batches = [b for r in run["runs"] for b in r["batches"]]
        wall = sum(r["wall"] for r in run["runs"])
        spent = {kind: sum(r["by_kind"].get(kind, 0.0) for r in run["runs"]) for kind in kinds}
        python = wall - sum(r["db"] for r in run["runs"])
        results = run["results"]
        client = sum(r["cpu"] for r in run["runs"]) / results * 1e6
        folding = (fold["cpu"] + fold["server_cpu"]) / fold["results"] * 1e6 if fold else 0.0
        server = sum(r["server_cpu"] for r in run["runs"]) / results * 1e6
        rows.append(
            [
                run["label"],
                f"{run['results']:,}",
                f"{run['wall']:.1f}",
                f"{run['rate']:,.0f}",
                f"{percentile(batches, 50) * 1000:.0f} / {percentile(batches, 95) * 1000:.0f}",
                f"{sum(r['rollups'] for r in run['runs']) / wall:.0%}",
                " / ".join(f"{spent[kind] / wall:.0%}" for kind in kinds),
                f"{python / wall:.0%}",
                f"{client:.0f} / {server:.0f}",
                f"{2e6 / (client + server):,.0f}",
                f"{2e6 / (client + server + folding):,.0f}",
                "meets" if run["rate"] >= GOAL_INGEST else "MISSES",
            ]
        )
    print()
    headers = ["ingest (batches of 200)", "results", "wall s", "results/s", "batch p50 / p95 ms"]
    headers += ["in rollups_add", "db: " + " / ".join(kinds), "python"]
    # CPU per result, of the ingest processes and of their PostgreSQL backends: what the
    # rate would be with both cores free for it, whatever else the machine ran meanwhile.
    headers += ["CPU µs/result: client / server", "2 cores' worth/s", "with the fold/s"]
    print_table([*headers, f"goal >= {GOAL_INGEST:,}/s"], rows)
