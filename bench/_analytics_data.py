"""Data for the analytics benchmark, made with SQL (it is no benchmark).

One day of raw checks per endpoint at a 30 s interval, written by `INSERT … SELECT` over
`generate_series` with the 5-minute rollups of each chunk upserted in the same statement;
hourly rows summed from them; 30 earlier days of hourly rows and incidents repeated from
that day (see `synthesize_days`); daily rows summed from the hourly ones.

Each endpoint `i` (0-based, in creation order) has:

- slots `start + k x 30 s + phase`, k = 0 … 2,879, phases spread evenly over the interval
  in an order unrelated to projects (see `write_endpoint_table` in analytics.py);
  the check starts 3 to 42 ms after its slot;
- a base latency (15 to 600 ms, log-spread, shared by the four endpoints 4m … 4m+3);
  successful checks take `base x exp(0.25 z)` (z normal), one in a hundred four times that;
- `i % 4` incidents in the day (0 to 3), of 2 to 60 failed checks in a row (the default
  failure threshold is 2), never in the first or last hour; the checks that fail give
  `HTTP 503`, `connection refused` or a 10 s timeout; the incident starts at the first
  failed check and is resolved at the next successful one, as the engine does;
- an isolated failed check about every 8 hours (never next to an incident: one failure
  opens none), a timeout or `HTTP 502`.

Raw check ids are UUIDv7-shaped like `monitoring.models.time_ordered_uuid`: the
millisecond the row would have been stored (check start + response time + 2 ms) in the
top 48 bits, version 7, RFC 4122 variant, random bits. Rows are inserted in time order,
as workers store them.
"""

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta

import psycopg
from _support import INCIDENT_COLUMNS, incident_values

SLOTS_PER_DAY = 2880
SLOT_MS = 30_000
DAY = timedelta(days=1)
HOUR = timedelta(hours=1)
EARLIER_DAYS = 30  # days of hourly rows and incidents before the raw day
WORKERS = 2  # generation connections (the machine has two cores)
SESSION = (
    "SET TimeZone = 'UTC'",
    "SET synchronous_commit = off",
    "SET work_mem = '256MB'",
    "SET maintenance_work_mem = '1GB'",
    "SET max_parallel_maintenance_workers = 0",
    # Foreign-key triggers off while loading: the keys are right by construction.
    "SET session_replication_role = replica",
)
CAUSES = ("HTTP 503", "connection refused", "timed out after 10 s")
# The raw text a refused check keeps beside its phrase, as the HTTP probe stores it.
REFUSED_DETAIL = (
    "ClientConnectorError: Cannot connect to host api.example.com:443 ssl:default "
    "[Connect call failed (203.0.113.7, 443)]"
)


@dataclass(frozen=True)
class Layout:
    """How the endpoints are split into organizations and projects."""

    endpoints: int
    tenant_size: int
    project_size: int

    @property
    def organizations(self) -> int:
        """Tenant organizations."""
        return -(-self.endpoints // self.tenant_size)

    @property
    def projects(self) -> int:
        """Projects over all tenants."""
        return -(-self.endpoints // self.project_size)

    def describe(self) -> str:
        """One line for the output."""
        return (
            f"{self.endpoints:,} endpoints: {self.organizations} organization(s) of "
            f"{self.tenant_size:,} endpoints, in projects of {self.project_size} "
            f"({self.projects} projects); one more organization takes every project for the "
            "all-in-one figures"
        )


def layout_for(scale: float) -> Layout:
    """10,000 endpoints at scale 1: tenants of 1,000 endpoints, projects of 100."""
    endpoints = max(4, round(10_000 * scale))
    return Layout(endpoints, min(1_000, endpoints), min(100, endpoints))


def connect(url: str) -> psycopg.Connection:
    """An autocommit connection set up for bulk loading."""
    conn = psycopg.connect(url, autocommit=True)
    for statement in SESSION:
        conn.execute(statement)
    return conn


class Progress:
    """Print what a step has done so far, with the time since the run began."""

    def __init__(self, began: float) -> None:
        self.began = began
        self.lock = threading.Lock()

    def say(self, text: str) -> None:
        """Print one line, prefixed with the elapsed time."""
        with self.lock:
            print(f"  [{time.perf_counter() - self.began:7.1f} s] {text}", flush=True)


def in_parallel(url: str, jobs: Sequence[Callable[[psycopg.Connection], None]]) -> None:
    """Run the jobs on `WORKERS` connections of their own."""
    local = threading.local()
    opened: list[psycopg.Connection] = []

    def run(job: Callable[[psycopg.Connection], None]) -> None:
        if not hasattr(local, "conn"):
            local.conn = connect(url)
            opened.append(local.conn)
        job(local.conn)

    try:
        with ThreadPoolExecutor(WORKERS) as pool:
            for future in [pool.submit(run, job) for job in jobs]:
                future.result()
    finally:
        for conn in opened:
            conn.close()


# --- Indexes off while loading ------------------------------------------------------------


@contextlib.contextmanager
def indexes_dropped(url: str, conn: psycopg.Connection, table: str) -> Iterator[None]:
    """Drop a table's primary key, unique constraints and indexes; rebuild them after, two
    at a time (constraints are attached to their rebuilt index), or one at a time on a
    partitioned table, which cannot attach one: its constraints are added again after."""
    partitioned = conn.execute(
        "SELECT relkind = 'p' FROM pg_class WHERE oid = %s::regclass", [table]
    ).fetchone()[0]
    constraints = conn.execute(
        "SELECT conname, contype, pg_get_constraintdef(oid) FROM pg_constraint "
        "WHERE conrelid = %s::regclass AND contype IN ('p', 'u')",
        [table],
    ).fetchall()
    indexes = conn.execute(
        "SELECT indexname, replace(indexdef, ' ON ONLY ', ' ON ') FROM pg_indexes "
        "WHERE tablename = %s",
        [table],
    ).fetchall()
    for name, _, _ in constraints:
        conn.execute(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"')
    for name, _ in indexes:
        conn.execute(f'DROP INDEX IF EXISTS "{name}"')
    yield
    backing = {name for name, _, _ in constraints}
    rebuilt = [sql for name, sql in indexes if not (partitioned and name in backing)]
    if partitioned:
        # One at a time: PostgreSQL names each partition's index after its columns, so two
        # indexes over the same columns built at once race for the same name.
        for sql in rebuilt:
            conn.execute(sql)
    else:
        in_parallel(url, [lambda c, sql=sql: c.execute(sql) for sql in rebuilt])
    for name, kind, definition in constraints:
        if partitioned:
            conn.execute(f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}')
        else:
            form = "PRIMARY KEY" if kind == "p" else "UNIQUE"
            conn.execute(f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {form} USING INDEX "{name}"')


# --- The day of raw checks ----------------------------------------------------------------


def _histogram_sql(fields: Sequence[str]) -> tuple[str, str, str]:
    """The histogram's column list, its per-bucket counts and its additive update."""
    columns = ", ".join(fields)
    counts = ", ".join(f"count(*) FILTER (WHERE hb = {n})" for n in range(len(fields)))
    updates = ", ".join(f"{name} = r.{name} + EXCLUDED.{name}" for name in fields)
    return columns, counts, updates


def _checked_at(k: str) -> str:
    """When endpoint `e` started the check of slot `k` (deterministic: incidents match)."""
    offset = f"{k} * {SLOT_MS} + e.phase_ms + 3 + (e.i * 7 + {k}) %% 40"
    return f"%(start)s::timestamptz + ({offset}) * interval '1 ms'"


def stored_checks_sql(fields: Sequence[str]) -> str:
    """The end of a statement that generates checks: from a CTE `outcome` (endpoint_id, i,
    k, base_ms, scheduled_for, checked_at, error), draw each check's response time, store
    the checks in time order with UUIDv7-shaped ids, and add them to the 5-minute rollups
    as ingest does. `_load_data.py` uses it too."""
    columns, counts, updates = _histogram_sql(fields)
    return f"""timed AS (
    SELECT *, uuid_send(gen_random_uuid()) AS rnd, CASE
        WHEN error IS NULL THEN round(
            base_ms * exp(0.25 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))
            * CASE WHEN random() < 0.01 THEN 4 ELSE 1 END * 1000) / 1000
        WHEN error LIKE 'timed out%%' THEN 10000.0
        WHEN error = 'connection refused' THEN 1 + round(random() * 3000) / 1000
        ELSE round(base_ms * 500) / 1000
    END AS ms
    FROM outcome
), stored AS (
    INSERT INTO monitoring_checkresult
        (id, endpoint_id, scheduled_for, checked_at, ok, response_time_ms, status_detail, error,
         error_detail)
    SELECT encode(set_byte(overlay(rnd PLACING substring(int8send(
               floor(extract(epoch FROM checked_at) * 1000)::bigint + ceil(ms)::bigint + 2)
               FROM 3) FROM 1 FOR 6), 6, (get_byte(rnd, 6) & 15) | 112), 'hex')::uuid,
           endpoint_id, scheduled_for, checked_at, error IS NULL, ms,
           CASE WHEN error IS NULL THEN 'HTTP 200' WHEN error LIKE 'HTTP %%' THEN error
                ELSE '' END,
           coalesce(error, ''),
           CASE WHEN error = 'connection refused' THEN {REFUSED_DETAIL!r} ELSE '' END
    FROM timed
    ORDER BY checked_at
    RETURNING endpoint_id, checked_at, ok, response_time_ms
)
INSERT INTO analytics_rollup_5m AS r
    (endpoint_id, bucket, count, failures, timed, sum_ms, min_ms, max_ms, {columns})
SELECT endpoint_id, date_bin('5 minutes', checked_at, TIMESTAMPTZ 'epoch'),
       count(*), count(*) FILTER (WHERE NOT ok),
       count(*) FILTER (WHERE ok AND response_time_ms IS NOT NULL),
       coalesce(sum(response_time_ms) FILTER (WHERE ok), 0),
       min(response_time_ms) FILTER (WHERE ok), max(response_time_ms) FILTER (WHERE ok),
       {counts}
FROM (
    SELECT *, CASE WHEN ok THEN width_bucket(response_time_ms, %(edges)s::float8[]) END AS hb
    FROM stored
) s
GROUP BY 1, 2
ON CONFLICT (endpoint_id, bucket) DO UPDATE SET
    count = r.count + EXCLUDED.count, failures = r.failures + EXCLUDED.failures,
    timed = r.timed + EXCLUDED.timed, sum_ms = r.sum_ms + EXCLUDED.sum_ms,
    min_ms = LEAST(r.min_ms, EXCLUDED.min_ms), max_ms = GREATEST(r.max_ms, EXCLUDED.max_ms),
    {updates}
"""


def raw_chunk_sql(fields: Sequence[str]) -> str:
    """Insert the checks of one slot range of one endpoint share, in time order, and add
    them to the 5-minute rollups in the same statement."""
    return f"""
WITH slot AS (
    SELECT e.id AS endpoint_id, e.i, g.k, e.base_ms, b.k_start, b.k_end, b.cause,
           %(start)s::timestamptz + (g.k * {SLOT_MS} + e.phase_ms) * interval '1 ms'
               AS scheduled_for,
           {_checked_at("g.k")} AS checked_at
    FROM generate_series(%(k0)s::int, %(k1)s::int - 1) AS g(k)
    CROSS JOIN bench_endpoint e
    LEFT JOIN bench_raw_incident b ON b.i = e.i AND g.k BETWEEN b.k_start - 1 AND b.k_end
    WHERE e.i %% %(workers)s = %(worker)s
), outcome AS (
    SELECT *, CASE
        WHEN k >= k_start AND k < k_end THEN cause
        WHEN k_start IS NULL AND (k * 7919 + i * 104729) %% 997 = 0 THEN
            CASE WHEN (k + i) %% 2 = 0 THEN 'timed out after 10 s' ELSE 'HTTP 502' END
    END AS error
    FROM slot
), {stored_checks_sql(fields)}"""


RAW_INCIDENTS_SQL = f"""
CREATE TABLE bench_raw_incident AS
SELECT i, j, k_start, k_start + 2 + (i * 37 + j * 11) % 59 AS k_end,
       (ARRAY{list(CAUSES)})[1 + (i + j) % 3] AS cause
FROM (
    SELECT e.i, j, j * 960 + 120 + (e.i * 131 + j * 577) % 600 AS k_start
    FROM bench_endpoint e CROSS JOIN LATERAL generate_series(0, e.i % 4 - 1) AS j
) s
"""


def write_raw_day(
    url: str, start: datetime, edges: Sequence[float], fields: Sequence[str], progress: Progress
) -> None:
    """The raw checks of [start, start + 1 day) and their 5-minute rollups, one hour of
    slots at a time on each connection (each connection its own endpoints)."""
    sql = raw_chunk_sql(fields)
    hours = SLOTS_PER_DAY // 120
    done = [0]

    def share(worker: int) -> Callable[[psycopg.Connection], None]:
        def job(conn: psycopg.Connection) -> None:
            for hour in range(hours):
                params = {
                    "start": start,
                    "k0": hour * 120,
                    "k1": hour * 120 + 120,
                    "workers": WORKERS,
                    "worker": worker,
                    "edges": list(edges),
                }
                conn.execute(sql, params)
                done[0] += 1
                if done[0] % 8 == 0:
                    progress.say(f"raw checks: {done[0] / WORKERS:.0f} of {hours} hours")

        return job

    in_parallel(url, [share(worker) for worker in range(WORKERS)])


def _sum_columns(fields: Sequence[str], prefix: str = "") -> str:
    names = ("count", "failures", "timed", "sum_ms", *fields)
    sums = ", ".join(f"sum({prefix}{name}) AS {name}" for name in names)
    return f"{sums}, min({prefix}min_ms) AS min_ms, max({prefix}max_ms) AS max_ms"


def _columns(fields: Sequence[str]) -> str:
    return ", ".join(("count", "failures", "timed", "sum_ms", *fields, "min_ms", "max_ms"))


def hours_from_five_minutes(conn: psycopg.Connection, fields: Sequence[str]) -> None:
    """The hourly rows of the raw day, summed from its 5-minute rows."""
    conn.execute(
        f"INSERT INTO analytics_rollup_1h (endpoint_id, bucket, {_columns(fields)}) "
        f"SELECT endpoint_id, date_bin('1 hour', bucket, TIMESTAMPTZ 'epoch') AS hour, "
        f"{_sum_columns(fields)} FROM analytics_rollup_5m GROUP BY 1, 2 ORDER BY 2, 1"
    )


def synthesize_days(
    url: str, conn: psycopg.Connection, start: datetime, fields: Sequence[str], progress: Progress
) -> None:
    """Hourly rows and incidents for the 30 days before the raw day.

    Each earlier day repeats a raw day: on one day in seven (day d with (d + i) % 7 == 0)
    the endpoint's own, with its incidents; on the others the day of its sibling 4m, same
    base latency and no incident. The hour holding the raw day's start is whole in the
    repeats (the raw day's first and last partial hours are merged).
    """
    first_hour = start.replace(minute=0, second=0, microsecond=0)
    conn.execute(
        f"CREATE TABLE bench_hour_template AS SELECT e.i, "
        f"(floor(extract(epoch FROM r.bucket - %(h0)s::timestamptz) / 3600))::int %% 24 AS off, "
        f"{_sum_columns(fields, 'r.')} FROM analytics_rollup_1h r "
        f"JOIN bench_endpoint e ON e.id = r.endpoint_id GROUP BY 1, 2",
        {"h0": first_hour},
    )
    conn.execute("CREATE INDEX ON bench_hour_template (i, off)")
    conn.execute("ANALYZE bench_hour_template")
    insert = (
        f"INSERT INTO analytics_rollup_1h (endpoint_id, bucket, {_columns(fields)}) "
        f"SELECT e.id, %(h0)s::timestamptz + t.off * interval '1 hour' - %(d)s * interval '1 day', "
        f"{', '.join('t.' + c for c in _columns(fields).split(', '))} "
        f"FROM bench_endpoint e JOIN bench_hour_template t "
        f"ON t.i = CASE WHEN (%(d)s + e.i) %% 7 = 0 THEN e.i ELSE e.i / 4 * 4 END "
        f"ORDER BY t.off, e.id"
    )

    def day(d: int) -> Callable[[psycopg.Connection], None]:
        def job(c: psycopg.Connection) -> None:
            c.execute(insert, {"h0": first_hour, "d": d})
            if d % 10 == 0:
                progress.say(f"hourly rollups: day -{d} written")

        return job

    with indexes_dropped(url, conn, "analytics_rollup_1h"):
        in_parallel(url, [day(d) for d in range(EARLIER_DAYS, 0, -1)])
    progress.say("hourly rollups: indexes rebuilt")
    conn.execute(
        f"INSERT INTO monitoring_incident ({INCIDENT_COLUMNS}) SELECT "
        + incident_values(
            "e.id",
            f"{_checked_at('b.k_start')} - d * interval '1 day'",
            f"{_checked_at('b.k_end')} - d * interval '1 day'",
            "b.cause",
        )
        + " FROM bench_raw_incident b JOIN bench_endpoint e USING (i) "
        f"CROSS JOIN generate_series(0, {EARLIER_DAYS}) AS d "
        f"WHERE d = 0 OR (d + e.i) %% 7 = 0 ORDER BY 3",
        {"start": start},
    )


def days_from_hours(conn: psycopg.Connection, fields: Sequence[str]) -> None:
    """The daily rows, summed from the hourly ones."""
    conn.execute(
        f"INSERT INTO analytics_rollup_1d (endpoint_id, bucket, {_columns(fields)}) "
        f"SELECT endpoint_id, date_bin('1 day', bucket, TIMESTAMPTZ 'epoch'), "
        f"{_sum_columns(fields)} FROM analytics_rollup_1h GROUP BY 1, 2 ORDER BY 2, 1"
    )


STATUS_CHANGES_SQL = """
CREATE FUNCTION bench_uuid7(at timestamptz) RETURNS uuid LANGUAGE sql VOLATILE AS $$
    SELECT encode(set_byte(overlay(b PLACING substring(int8send(
               floor(extract(epoch FROM at) * 1000)::bigint) FROM 3) FROM 1 FOR 6),
               6, (get_byte(b, 6) & 15) | 112), 'hex')::uuid
    FROM (SELECT uuid_send(gen_random_uuid()) AS b) s
$$;
INSERT INTO monitoring_statuschange (id, endpoint_id, changed_at, from_status, to_status, reason)
SELECT bench_uuid7(at), endpoint_id, at, from_status, to_status, reason FROM (
    SELECT endpoint_id, started_at AS at, 'up' AS from_status, 'down' AS to_status,
           cause AS reason FROM monitoring_incident
    UNION ALL
    SELECT endpoint_id, resolved_at, 'down', 'up', 'HTTP 200' FROM monitoring_incident
    UNION ALL
    SELECT id, created_at + interval '30 s', 'pending', 'up', 'HTTP 200' FROM monitoring_endpoint
    WHERE id IN (SELECT id FROM bench_endpoint)
) s ORDER BY at;
"""


def generate(
    url: str, start: datetime, edges: Sequence[float], fields: Sequence[str], progress: Progress
) -> None:
    """Everything but the endpoints themselves (already in `bench_endpoint`)."""
    with connect(url) as conn:
        conn.execute(RAW_INCIDENTS_SQL)
        conn.execute("ANALYZE bench_endpoint; ANALYZE bench_raw_incident")
        with indexes_dropped(url, conn, "monitoring_checkresult"):
            write_raw_day(url, start, edges, fields, progress)
            progress.say("raw checks written; rebuilding their indexes")
        progress.say("raw checks: indexes rebuilt")
        hours_from_five_minutes(conn, fields)
        synthesize_days(url, conn, start, fields, progress)
        days_from_hours(conn, fields)
        conn.execute(STATUS_CHANGES_SQL)
        progress.say("daily rollups, incidents and status changes written; vacuuming")
        conn.execute("VACUUM (ANALYZE)")
        progress.say("vacuumed and analysed")
