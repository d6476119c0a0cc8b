"""Helpers shared by the benchmarks (not a benchmark itself).

Free ports and processes (the local targets are in `_targets.py`), a throwaway PostgreSQL
database, Django set up in-process against it, CPU accounting from
/proc, CPU pinning and a small table printer.
"""

import contextlib
import gc
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import psycopg
from cryptography.fernet import Fernet

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
# The PostgreSQL server the benchmarks use: the machine's, or the one `bench/tuned_server.py`
# starts for a run with the README's settings (it passes its port in BENCH_PG_PORT).
PG_PORT = int(os.environ.get("BENCH_PG_PORT", "5432"))


def pg_url(database: str) -> str:
    """The URL of a database on the benchmarks' PostgreSQL server."""
    return f"postgres://postgres@127.0.0.1:{PG_PORT}/{database}"


PG_ADMIN_URL = pg_url("postgres")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
CPUS = os.cpu_count() or 1
# The measured process runs on the first core, targets and helpers on the last one.
MEASURED_CPU = 0
HELPER_CPU = CPUS - 1


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def free_ports(count: int) -> list[int]:
    """Distinct free ports (held open together while they are picked)."""
    socks = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            socks.append(sock)
        return [sock.getsockname()[1] for sock in socks]
    finally:
        for sock in socks:
            sock.close()


def wait_for_port(port: int, process: subprocess.Popen | None = None, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{process.args[0]} exited with {process.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout:.0f} s")


def stop(process: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 10) -> None:
    """Stop one process this script started, by its id."""
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# --- CPU accounting ---------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of one process (0 once it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def children(pid: int) -> list[int]:
    """Every descendant of a process."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        parents.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def tree_cpu_seconds(pid: int) -> float:
    return cpu_seconds(pid) + sum(cpu_seconds(child) for child in children(pid))


def pin(pid: int, cpu: int) -> None:
    """Pin a process (0: this one) to one core; a no-op where affinity is unsupported."""
    with contextlib.suppress(AttributeError, OSError):
        os.sched_setaffinity(pid, {cpu})


def load_average() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


# --- Database and Django ----------------------------------------------------------------


@contextlib.contextmanager
def throwaway_database(prefix: str) -> Iterator[str]:
    """Create `<prefix>_<pid>` on the local PostgreSQL; yield its URL; drop it at the end."""
    name = f"{prefix}_{os.getpid()}"
    try:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
    except psycopg.OperationalError as exc:
        sys.exit(f"cannot reach PostgreSQL at {PG_ADMIN_URL}: {exc}")
    print(f"PostgreSQL: {postgres_settings()}", flush=True)
    try:
        yield pg_url(name)
    finally:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# The settings a run's figures depend on (README, "PostgreSQL settings"): each benchmark
# prints them, so a figure is read beside the server it was measured on.
PG_SETTINGS = (
    "shared_buffers",
    "effective_cache_size",
    "work_mem",
    "maintenance_work_mem",
    "random_page_cost",
    "jit",
    "synchronous_commit",
    "max_wal_size",
)


# README, "PostgreSQL settings", for the 2-core / 24 GB machine (a test holds the two the
# same): what `bench/tuned_server.py` starts its server with.
README_SETTINGS = {
    "shared_buffers": "6GB",
    "effective_cache_size": "16GB",
    "work_mem": "32MB",
    "maintenance_work_mem": "1GB",
    "random_page_cost": "1.1",
    "effective_io_concurrency": "200",
    "jit": "off",
    "max_wal_size": "4GB",
    "checkpoint_timeout": "15min",
    "wal_compression": "on",
    "synchronous_commit": "on",
    "autovacuum": "on",
    "max_connections": "100",
}
# Those a database takes without a server restart (`--tuned` sets them on its own database).
TUNED = {
    name: README_SETTINGS[name]
    for name in (
        "work_mem",
        "maintenance_work_mem",
        "effective_cache_size",
        "random_page_cost",
        "effective_io_concurrency",
        "jit",
    )
}


def database_tuning(url: str, tuned: bool) -> str:
    """Give the benchmark's database the README's settings (`--tuned`), or none of its own
    (a database kept by `--keep` and measured again): a line saying which."""
    name = url.rsplit("/", 1)[1]
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{name}" RESET ALL')
        for setting, value in TUNED.items() if tuned else ():
            admin.execute(f"ALTER DATABASE \"{name}\" SET {setting} = '{value}'")
    if not tuned:
        return "database settings: the server's (stock unless said above)"
    shown = ", ".join(f"{setting}={value}" for setting, value in TUNED.items())
    return f"database settings (--tuned, README's that need no restart): {shown}"


def postgres_settings() -> str:
    """The local server's version and the settings in `PG_SETTINGS`, on one line."""
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        version = admin.execute("SHOW server_version").fetchone()
        rows = dict(
            admin.execute(
                "SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY(%s)",
                [list(PG_SETTINGS)],
            ).fetchall()
        )
    shown = ", ".join(f"{name}={rows[name]}" for name in PG_SETTINGS if name in rows)
    return f"{version[0] if version else '?'}; {shown}"


def app_environment(database_url: str, **extra: str) -> dict[str, str]:
    """Settings for an in-process Django (and its subprocesses), through the environment."""
    values = {
        "DJANGO_SETTINGS_MODULE": "healthmon.settings",
        "SECRET_KEY": "bench-" + Fernet.generate_key().decode(),
        "DEBUG": "false",
        "SECURE_SSL_REDIRECT": "false",  # the benchmarks speak plain HTTP on loopback
        "FIELD_ENCRYPTION_KEYS": Fernet.generate_key().decode(),
        "DATABASE_URL": database_url,
        "CACHE_URL": "locmemcache://",
        "CELERY_BROKER_URL": "memory://",
        "LOG_LEVEL": "ERROR",  # the benchmarks fail probes on purpose: no line per failed check
        "PROBE_ALLOW_PRIVATE_NETWORKS": "true",  # the targets are on loopback
        **extra,
    }
    os.environ.update(values)
    return dict(os.environ)


def migrate() -> None:
    """Migrate the database of the current environment (a subprocess, like a deploy)."""
    subprocess.run(
        [str(BIN / "python"), "manage.py", "migrate", "--noinput", "-v0"],
        cwd=ROOT,
        env=dict(os.environ),
        check=True,
    )


def setup_django() -> None:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def set_gc(mode: str) -> None:
    """`freeze`: move what start-up created out of the cyclic collector's sight, as a
    worker process does (healthmon/celery.py); `off`: no cyclic collection at all."""
    if mode == "freeze":
        gc.collect()
        gc.freeze()
    elif mode == "off":
        gc.disable()


def database_backend_pid() -> int:
    """The PostgreSQL server process serving this process's default connection."""
    from django.db import connection

    connection.ensure_connection()
    return connection.connection.info.backend_pid


# --- Figures ----------------------------------------------------------------------------


def percentile(values: Sequence[float], share: float) -> float:
    """Nearest-rank percentile (`share` in 0..100); NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(share / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def print_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for n, row in enumerate(cells):
        left = row[0].ljust(widths[0])
        print("  ".join([left, *(c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True))]))
        if n == 0:
            print("  ".join("-" * w for w in widths))


def sigterm_as_interrupt() -> None:
    """SIGTERM unwinds like Ctrl-C, so `finally` blocks still clean up."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)


def run_benchmark(benchmark, args) -> int:
    """Run a benchmark as a script: cleanup on Ctrl-C or SIGTERM, a short message and a
    non-zero exit status on failure."""
    sigterm_as_interrupt()
    try:
        benchmark(args)
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except (RuntimeError, subprocess.CalledProcessError) as exc:
        print(f"benchmark failed: {exc}", file=sys.stderr)
        return 1
    return 0


def http_endpoint(
    project: object, name: str, target: str, interval: int, timeout: int = 10, **fields: object
) -> object:
    """An unsaved HTTP endpoint for bulk_create, its masked forms filled in as the API
    would (Django must be set up)."""
    from monitoring.models import Endpoint
    from monitoring.targets import mask_config, mask_target
    from monitoring.validation import validate_config

    config = validate_config("http", {})
    return Endpoint(
        project=project,
        name=name,
        type="http",
        target=target,
        target_masked=mask_target(target),
        config=config,
        config_masked=mask_config(config),
        interval_seconds=interval,
        timeout_seconds=timeout,
        **fields,
    )


def up_endpoint(
    project: object, name: str, target: str, interval: int, created: object, end: object
) -> object:
    """An unsaved HTTP endpoint watched since `created` and up at `end`, its last check
    (generated data sets: their checks are written with SQL)."""
    from monitoring.models import EndpointStatus

    return http_endpoint(
        project,
        name,
        target,
        interval,
        status=EndpointStatus.UP,
        streak_ok=True,
        streak_length=1,
        streak_started_at=end,
        watch_started_at=created,
        last_checked_at=end,
        created_at=created,
        updated_at=created,
    )


# The columns of an automatic incident written by SQL (the bench worlds write millions of
# rows without the ORM), and the values of one, its organization read through its endpoint.
INCIDENT_COLUMNS = (
    "id, organization_id, endpoint_id, kind, title, impact, state, public, updated_at, "
    "started_at, resolved_at, cause, acknowledged_via"
)


def incident_values(endpoint: str, started: str, resolved: str, cause: str) -> str:
    """SELECT expressions for INCIDENT_COLUMNS, from SQL expressions of an incident's
    endpoint id, start, end (NULL: open) and cause."""
    organization = (
        "(SELECT p.organization_id FROM monitoring_endpoint m "
        f"JOIN accounts_project p ON p.id = m.project_id WHERE m.id = {endpoint})"
    )
    state = f"CASE WHEN ({resolved}) IS NULL THEN 'investigating' ELSE 'resolved' END"
    return (
        f"gen_random_uuid(), {organization}, {endpoint}, 'automatic', '', 'major_outage', "
        f"{state}, true, now(), {started}, {resolved}, {cause}, ''"
    )
