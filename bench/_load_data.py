"""Data for the load benchmark, made with SQL (it is no benchmark).

Two cohorts of HTTP endpoints, checked every 60 s and watched for 8 days:

- **tenants**: 10 organizations of 100 endpoints (4 projects of 25). One day of raw checks
  (1,440 per endpoint) is written by `INSERT … SELECT` over `generate_series`, with the
  5-minute rollups of each chunk upserted in the same statement, as in `_analytics_data.py`;
  the 7 days before it repeat that day's raw checks and 5-minute rows (on one day in seven
  an endpoint's own day with its incidents, on the others the day of its sibling 4m, which
  has none);
  hourly rows are summed from the 5-minute ones and daily rows from the hourly ones.
  Endpoint i has `i % 4` incidents a day (2 to 30 failed checks), an isolated failure about
  every 16 hours, a base latency of 15 to 600 ms (log-spread; successes take
  `base x exp(0.25 z)`, one in a hundred four times that); every 50th endpoint (i % 50 = 17)
  has been down for the last 12 to 31 minutes (an open incident, status `down`).
- **big**: one organization of 10,000 endpoints (20 projects of 500), added in a second
  step: endpoint j copies everything of tenant endpoint j % 1,000 (5-minute, hourly and
  daily rows, incidents, status) and its raw checks of the last `raw_hours` hours, with
  new ids.

The rollups equal what the ingest path would have written for the generated checks (the
same SQL as `_analytics_data.py`, whose output `analytics.py` checks against
`rollups_rebuild`).
"""

import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

import psycopg
from _analytics_data import Progress, connect, in_parallel, indexes_dropped, stored_checks_sql
from _support import INCIDENT_COLUMNS, incident_values

INTERVAL_MS = 60_000
SLOTS_PER_DAY = 1440
EARLIER_DAYS = 7  # days of 5-minute rows before the raw day
TENANTS = 10
TENANT_ENDPOINTS = 100
TENANT_PROJECTS = 4
BIG_ENDPOINTS = 10_000
BIG_PROJECTS = 20
CAUSES = ("HTTP 503", "connection refused", "timed out after 10 s")
ROLLUP_TABLES = ("analytics_rollup_5m", "analytics_rollup_1h", "analytics_rollup_1d")


# --- Organizations, users and endpoints (Django) ------------------------------------------


def create_cohort(
    cohort: int, orgs: Sequence[str], endpoints: int, projects: int, end: datetime, password: str
) -> list[str]:
    """Organizations (an owner each: `owner@<slug>.load.test`), projects and HTTP endpoints
    (up, watched for 8 days), and their rows in `bench_endpoint`. Returns the owners' emails."""
    from _support import up_endpoint
    from django.contrib.auth.hashers import make_password
    from django.db import connection

    from accounts.models import Organization, Project, Role, User
    from monitoring.models import Endpoint

    created = end - timedelta(days=EARLIER_DAYS + 1)
    hashed = make_password(password)  # one bcrypt for every owner
    made = Organization.objects.bulk_create(
        Organization(name=name, created_at=created) for name in orgs
    )
    emails = []
    for org in made:
        email = f"owner@{org.name.lower().replace(' ', '-')}.load.test"
        User.objects.bulk_create(
            [User(email=email, password=hashed, organization=org, role=Role.OWNER)]
        )
        emails.append(email)
    per_org = endpoints // len(made)
    per_project = per_org // projects
    made_projects = Project.objects.bulk_create(
        Project(organization=org, name=f"{org.name} / Project {p:02d}", created_at=created)
        for org in made
        for p in range(projects)
    )
    first = cohort * 1_000_000
    rows = []
    for n in range(endpoints):
        project = made_projects[n // per_project]
        rows.append(
            up_endpoint(
                project,
                f"{project.organization.name} / Service {n % per_org:05d}",
                f"https://service{first + n}.example.com/health",
                INTERVAL_MS // 1000,
                created,
                end,
            )
        )
    Endpoint.objects.bulk_create(rows, batch_size=1000)
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE IF NOT EXISTS bench_endpoint (i int PRIMARY KEY, id uuid NOT NULL, "
            "cohort int NOT NULL, tmpl int NOT NULL, base_ms float8 NOT NULL, "
            "phase_ms int NOT NULL, open_k int)"
        )
        step = 7919  # coprime with 1,000 and 10,000: phases spread over the interval
        values = []
        for n, endpoint in enumerate(rows):
            i = first + n
            tmpl = n % (TENANTS * TENANT_ENDPOINTS)
            base = 15 * 40 ** ((n // 4 * 0.6180339887) % 1)
            phase = n * step % endpoints * INTERVAL_MS // endpoints
            open_k = SLOTS_PER_DAY - 12 - n % 20 if n % 50 == 17 else None
            values.append((i, endpoint.pk, cohort, tmpl, round(base, 3), phase, open_k))
        cursor.executemany("INSERT INTO bench_endpoint VALUES (%s, %s, %s, %s, %s, %s, %s)", values)
        cursor.execute("ANALYZE bench_endpoint")
    return emails


# --- Tenants: the raw day and what it adds up to -------------------------------------------


def _checked_at(k: str) -> str:
    """When endpoint `e` started the check of slot `k` (3 to 42 ms after the slot)."""
    offset = f"{k} * {INTERVAL_MS} + e.phase_ms + 3 + (e.i * 7 + {k}) %% 40"
    return f"%(start)s::timestamptz + ({offset}) * interval '1 ms'"


def raw_chunk_sql(fields: Sequence[str]) -> str:
    """The checks of a slot range for one share of the tenants' endpoints, in time order,
    added to the 5-minute rollups in the same statement."""
    return f"""
WITH slot AS (
    SELECT e.id AS endpoint_id, e.i, g.k, e.base_ms, e.open_k, b.k_start, b.k_end, b.cause,
           %(start)s::timestamptz + (g.k * {INTERVAL_MS} + e.phase_ms) * interval '1 ms'
               AS scheduled_for,
           {_checked_at("g.k")} AS checked_at
    FROM generate_series(%(k0)s::int, %(k1)s::int - 1) AS g(k)
    CROSS JOIN bench_endpoint e
    LEFT JOIN bench_raw_incident b ON b.i = e.i AND g.k BETWEEN b.k_start - 1 AND b.k_end
    WHERE e.cohort = 0 AND e.i %% %(workers)s = %(worker)s
), outcome AS (
    SELECT *, CASE
        WHEN k >= open_k THEN 'connection refused'
        WHEN k >= k_start AND k < k_end THEN cause
        WHEN k_start IS NULL AND (open_k IS NULL OR k < open_k - 1)
             AND (k * 7919 + i * 104729) %% 997 = 0 THEN
            CASE WHEN (k + i) %% 2 = 0 THEN 'timed out after 10 s' ELSE 'HTTP 502' END
    END AS error
    FROM slot
), {stored_checks_sql(fields)}"""


RAW_INCIDENTS_SQL = f"""
CREATE TABLE bench_raw_incident AS
SELECT i, j, k_start, k_start + 2 + (i * 37 + j * 11) % 29 AS k_end,
       (ARRAY{list(CAUSES)})[1 + (i + j) % 3] AS cause
FROM (
    SELECT e.i, j, j * 480 + 60 + (e.i * 131 + j * 577) % 300 AS k_start
    FROM bench_endpoint e CROSS JOIN LATERAL generate_series(0, e.i % 4 - 1) AS j
    WHERE e.cohort = 0
) s
"""


def _columns(fields: Sequence[str]) -> str:
    return ", ".join(("count", "failures", "timed", "sum_ms", *fields, "min_ms", "max_ms"))


def _sums(fields: Sequence[str]) -> str:
    sums = ", ".join(f"sum({name})" for name in ("count", "failures", "timed", "sum_ms", *fields))
    return f"{sums}, min(min_ms), max(max_ms)"


def _template(d: str) -> str:
    """The endpoint whose day an endpoint repeats `d` days before the raw day: on one day in
    seven its own (incidents and all), else its sibling's (i % 4 = 0: no incident); never
    the open incident's last minutes."""
    return f"CASE WHEN ({d} + e.i) %% 7 = 0 AND e.open_k IS NULL THEN e.i ELSE e.i / 4 * 4 END"


# A check of the raw day, `d` days earlier: its id keeps the UUIDv7 shape (the millisecond
# prefix moved back with it, the version kept, a new random tail: siblings copy one day).
EARLIER_RAW_SQL = f"""
INSERT INTO monitoring_checkresult
    (id, endpoint_id, scheduled_for, checked_at, ok, response_time_ms, status_detail, error,
     error_detail)
SELECT encode(overlay(overlay(uuid_send(c.id) PLACING substring(int8send(
           ('x' || encode(substring(uuid_send(c.id) FROM 1 FOR 6), 'hex'))::bit(48)::bigint
           - %(d)s * 86400000) FROM 3) FROM 1 FOR 6)
         PLACING substring(uuid_send(gen_random_uuid()) FROM 9) FROM 9), 'hex')::uuid,
       e.id, c.scheduled_for - %(d)s * interval '1 day', c.checked_at - %(d)s * interval '1 day',
       c.ok, c.response_time_ms, c.status_detail, c.error, c.error_detail
FROM bench_endpoint e JOIN bench_endpoint t ON t.i = {_template("%(d)s")}
JOIN monitoring_checkresult c ON c.endpoint_id = t.id AND c.checked_at >= %(start)s
WHERE e.cohort = 0
ORDER BY c.checked_at
"""


def write_tenants(
    url: str,
    start: datetime,
    edges: Sequence[float],
    fields: Sequence[str],
    progress: Progress,
    raw_days: int = EARLIER_DAYS + 1,
) -> None:
    """The tenants' 8 days: the raw day [start, start + 1 day) generated, the 7 before it
    copied from it (raw checks of the last `raw_days` days, rollups of all 8), incidents."""
    sql = raw_chunk_sql(fields)
    workers = 2
    with connect(url) as conn:
        conn.execute(RAW_INCIDENTS_SQL)
        conn.execute("ANALYZE bench_raw_incident")

        def share(worker: int) -> Callable[[psycopg.Connection], None]:
            def job(c: psycopg.Connection) -> None:
                for hour in range(SLOTS_PER_DAY // 60):
                    params = {"start": start, "k0": hour * 60, "k1": hour * 60 + 60}
                    c.execute(sql, {**params, "workers": workers, "worker": worker, "edges": edges})

            return job

        with indexes_dropped(url, conn, "monitoring_checkresult"):
            in_parallel(url, [share(worker) for worker in range(workers)])
            progress.say("tenants: raw day written")
            copies = [
                lambda c, d=d: c.execute(EARLIER_RAW_SQL, {"d": d, "start": start})
                for d in range(1, raw_days)
            ]
            in_parallel(url, copies)
            progress.say(f"tenants: raw checks of {raw_days} days written; rebuilding indexes")
        cols = _columns(fields)

        def earlier(d: int) -> Callable[[psycopg.Connection], None]:
            return lambda c: c.execute(
                f"INSERT INTO analytics_rollup_5m (endpoint_id, bucket, {cols}) "
                f"SELECT e.id, r.bucket - %(d)s * interval '1 day', {cols} "
                f"FROM bench_endpoint e JOIN bench_endpoint t ON t.i = {_template('%(d)s')} "
                f"JOIN analytics_rollup_5m r ON r.endpoint_id = t.id AND r.bucket >= %(start)s "
                f"WHERE e.cohort = 0 ORDER BY 2, 1",
                {"d": d, "start": start},
            )

        with indexes_dropped(url, conn, "analytics_rollup_5m"):
            in_parallel(url, [earlier(d) for d in range(EARLIER_DAYS, 0, -1)])
        progress.say("tenants: 5-minute rows of 8 days written")
        conn.execute(
            f"INSERT INTO analytics_rollup_1h (endpoint_id, bucket, {cols}) "
            f"SELECT endpoint_id, date_bin('1 hour', bucket, TIMESTAMPTZ 'epoch'), {_sums(fields)} "
            f"FROM analytics_rollup_5m GROUP BY 1, 2 ORDER BY 2, 1"
        )
        conn.execute(
            f"INSERT INTO analytics_rollup_1d (endpoint_id, bucket, {cols}) "
            f"SELECT endpoint_id, date_bin('1 day', bucket, TIMESTAMPTZ 'epoch'), {_sums(fields)} "
            f"FROM analytics_rollup_1h GROUP BY 1, 2 ORDER BY 2, 1"
        )
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
            f"WHERE d = 0 OR ((d + e.i) %% 7 = 0 AND e.open_k IS NULL) ORDER BY 3",
            {"start": start},
        )
        conn.execute(
            f"INSERT INTO monitoring_incident ({INCIDENT_COLUMNS}) SELECT "
            + incident_values("e.id", _checked_at("e.open_k"), "NULL", "'connection refused'")
            + " FROM bench_endpoint e "
            "WHERE e.cohort = 0 AND e.open_k IS NOT NULL",
            {"start": start},
        )
        conn.execute(
            f"UPDATE monitoring_endpoint m SET status = 'down', streak_ok = false, "
            f"streak_length = {SLOTS_PER_DAY} - e.open_k, streak_error = 'connection refused', "
            f"streak_started_at = {_checked_at('e.open_k')} "
            f"FROM bench_endpoint e WHERE m.id = e.id AND e.open_k IS NOT NULL AND e.cohort = 0",
            {"start": start},
        )
        progress.say("tenants: hourly and daily rows, incidents written")


# --- The big organization: copies of the tenants' endpoints ------------------------------


def write_big(
    url: str,
    end: datetime,
    raw_hours: int,
    five_minute_days: int,
    fields: Sequence[str],
    progress: Progress,
) -> None:
    """Copy every tenant endpoint's data to the big organization's endpoints (j -> j % 1,000):
    hourly and daily rows, incidents, statuses; raw checks of the last `raw_hours` hours and
    5-minute rows of the last `five_minute_days` days (8: all of them)."""
    cols = _columns(fields)
    with connect(url) as conn:
        conn.execute(
            "CREATE TABLE bench_check_template AS SELECT c.* FROM monitoring_checkresult c "
            "WHERE c.checked_at >= %s",
            [end - timedelta(hours=raw_hours)],
        )
        conn.execute("CREATE INDEX ON bench_check_template (checked_at)")
        conn.execute("ANALYZE bench_check_template")
        first = end - timedelta(hours=raw_hours)

        def hour(h: int) -> Callable[[psycopg.Connection], None]:
            # In time order within each hour, as workers store them; a new random tail
            # keeps each id's time prefix and version.
            return lambda c: c.execute(
                "INSERT INTO monitoring_checkresult (id, endpoint_id, scheduled_for, "
                "checked_at, ok, response_time_ms, status_detail, error, error_detail) "
                "SELECT encode(overlay(uuid_send(c.id) PLACING "
                "substring(uuid_send(gen_random_uuid()) FROM 9) FROM 9), 'hex')::uuid, "
                "e.id, c.scheduled_for, c.checked_at, c.ok, c.response_time_ms, "
                "c.status_detail, c.error, c.error_detail "
                "FROM bench_check_template c JOIN bench_endpoint t ON t.id = c.endpoint_id "
                "JOIN bench_endpoint e ON e.tmpl = t.i AND e.cohort = 1 "
                "WHERE c.checked_at >= %(a)s AND c.checked_at < %(b)s ORDER BY c.checked_at",
                {"a": first + timedelta(hours=h), "b": first + timedelta(hours=h + 1)},
            )

        with indexes_dropped(url, conn, "monitoring_checkresult"):
            in_parallel(url, [hour(h) for h in range(raw_hours)])
            progress.say(f"big: raw checks of {raw_hours} h written; rebuilding their indexes")
        for table in ROLLUP_TABLES:
            since = end - timedelta(days=five_minute_days if table == ROLLUP_TABLES[0] else 99)
            conn.execute(
                f"CREATE TABLE bench_template AS SELECT t.i, r.bucket, {cols} "
                f"FROM {table} r JOIN bench_endpoint t ON t.id = r.endpoint_id "
                f"WHERE t.cohort = 0 AND r.bucket >= %s",
                [since],
            )
            days = sorted(
                row[0]
                for row in conn.execute(
                    "SELECT DISTINCT date_bin('1 day', bucket, TIMESTAMPTZ 'epoch') "
                    "FROM bench_template"
                )
            )

            def day(a: datetime, table: str = table) -> Callable[[psycopg.Connection], None]:
                return lambda c: c.execute(
                    f"INSERT INTO {table} (endpoint_id, bucket, {cols}) "
                    f"SELECT e.id, r.bucket, {cols} FROM bench_template r "
                    f"JOIN bench_endpoint e ON e.tmpl = r.i AND e.cohort = 1 "
                    f"WHERE r.bucket >= %(a)s AND r.bucket < %(b)s ORDER BY r.bucket, e.id",
                    {"a": a, "b": a + timedelta(days=1)},
                )

            began = time.perf_counter()
            with indexes_dropped(url, conn, table):
                in_parallel(url, [day(a) for a in days])
            conn.execute("DROP TABLE bench_template")
            progress.say(f"big: {table} copied ({time.perf_counter() - began:.0f} s)")
        conn.execute(
            f"INSERT INTO monitoring_incident ({INCIDENT_COLUMNS}) SELECT "
            + incident_values("e.id", "n.started_at", "n.resolved_at", "n.cause")
            + " FROM monitoring_incident n JOIN bench_endpoint t ON t.id = n.endpoint_id "
            "JOIN bench_endpoint e ON e.tmpl = t.i AND e.cohort = 1 WHERE t.cohort = 0 "
            "ORDER BY n.started_at"
        )
        conn.execute(
            "UPDATE monitoring_endpoint m SET status = s.status, streak_ok = s.streak_ok, "
            "streak_length = s.streak_length, streak_error = s.streak_error, "
            "streak_started_at = s.streak_started_at "
            "FROM bench_endpoint e JOIN bench_endpoint t ON t.i = e.tmpl "
            "JOIN monitoring_endpoint s ON s.id = t.id "
            "WHERE m.id = e.id AND e.cohort = 1 AND t.open_k IS NOT NULL"
        )
        conn.execute("DROP TABLE bench_check_template")
        progress.say("big: incidents and statuses copied")


def settle(url: str, progress: Progress) -> None:
    """VACUUM (ANALYZE) and a CHECKPOINT, so that no hint-bit writes, stale statistics or
    checkpoint of the load land in a measured phase."""
    with connect(url) as conn:
        conn.execute("VACUUM (ANALYZE)")
        conn.execute("CHECKPOINT")
    progress.say("vacuumed, analysed, checkpointed")


def table_sizes(url: str) -> list[list[str]]:
    """Rows and on-disk size (with indexes) of the tables the data fills."""
    rows = []
    with psycopg.connect(url) as conn:
        for table in ("monitoring_checkresult", *ROLLUP_TABLES, "monitoring_incident"):
            count, total = conn.execute(
                f"SELECT count(*), pg_size_pretty(pg_total_relation_size('{table}')) FROM {table}"
            ).fetchone()
            rows.append([table, f"{count:,}", total])
    return rows
