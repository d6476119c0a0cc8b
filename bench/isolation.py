"""Isolation of a small tenant's reads, counted in buffers rather than timed (issue 26).

The load benchmark (`load.py`) times a small tenant's requests with and without a
10,000-endpoint organization in the database; on a shared machine its p95 is noise. This
script counts instead: it loads load.py's worlds (`_load_data.py`: 10 organizations of 100
endpoints, one raw day and 8 days of rollups; then the big organization with 2 h of raw
checks and 2 days of 5-minute rows, as `load.py --quick` does) into a database kept between
steps, sends one tenant's requests (the dashboard pages and the API routes of load.py's mix,
and the incident pages) through Django's test client, captures each request's SQL and runs
`EXPLAIN (ANALYZE, BUFFERS)` on each statement: shared buffers (hit + read), rows removed by
a filter or a recheck, and the plan's nodes, per statement. Buffer counts and plans do not
depend on what else the machine is doing.

    .venv/bin/python bench/isolation.py build [--database NAME]   # the tenants (~3 min)
    .venv/bin/python bench/isolation.py measure small.json        # their statements
    .venv/bin/python bench/isolation.py big                       # + the big org (~5 min)
    .venv/bin/python bench/isolation.py measure big.json
    .venv/bin/python bench/isolation.py compare small.json big.json
    .venv/bin/python bench/isolation.py drop
    .venv/bin/python bench/isolation.py           # every step in turn, then drop (~10 min)
    .venv/bin/python bench/isolation.py --smoke   # every step on tiny worlds (under a minute)

`compare` prints each request's statements side by side and marks (<<<) a statement whose
buffers grew by more than 15% (and 2) or that removed 50 more rows. A code or migration
change can be measured on the same data: `manage.py migrate` against the database, then
`measure` again. Needs PostgreSQL on 127.0.0.1:5432 (user postgres, trust auth).
"""

import argparse
import functools
import json
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from _analytics_data import Progress
from _load_data import (
    BIG_ENDPOINTS,
    BIG_PROJECTS,
    TENANT_ENDPOINTS,
    TENANT_PROJECTS,
    TENANTS,
    create_cohort,
    settle,
    write_big,
    write_tenants,
)
from _support import BIN, PG_ADMIN_URL, ROOT, app_environment, migrate, pg_url, setup_django

PASSWORD = "load-password-0001"
# The steps run in separate processes over one database: the endpoints' encrypted fields
# must be read with the key they were written with.
KEY = "aE5pZ2h0LWZpeGVkLWtleS1mb3ItaG0tdGVuYW50cyE="
TENANT = "Org 03"


def environment(database: str) -> str:
    url = pg_url(database)
    app_environment(
        url, ALLOWED_HOSTS="testserver", CACHE_URL="locmemcache://", FIELD_ENCRYPTION_KEYS=KEY
    )
    return url


def end_file(database: str) -> Path:
    return Path(f"/tmp/{database}-end")


def build(database: str) -> None:
    """The tenants: a new database, migrated, static files collected, their data."""
    import subprocess

    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{database}"')
    url = environment(database)
    migrate()
    subprocess.run(  # the pages link hashed static files
        [str(BIN / "python"), "manage.py", "collectstatic", "--noinput", "-v0"],
        cwd=ROOT,
        check=True,
    )
    setup_django()
    from analytics import histogram

    progress = Progress(time.perf_counter())
    now = datetime.now(UTC)
    end = datetime.fromtimestamp(now.timestamp() // 300 * 300, UTC)
    end_file(database).write_text(end.isoformat())
    names = [f"Org {n:02d}" for n in range(TENANTS)]
    create_cohort(0, names, TENANTS * TENANT_ENDPOINTS, TENANT_PROJECTS, end, PASSWORD)
    start = end - timedelta(days=1)
    write_tenants(url, start, list(histogram.EDGES), histogram.FIELDS, progress, raw_days=1)
    settle(url, progress)


def big(database: str) -> None:
    """The big organization, as `load.py --quick` adds it."""
    url = environment(database)
    setup_django()
    from analytics import histogram

    progress = Progress(time.perf_counter())
    end = datetime.fromisoformat(end_file(database).read_text())
    create_cohort(1, ["Big org"], BIG_ENDPOINTS, BIG_PROJECTS, end, PASSWORD)
    write_big(url, end, 2, 2, histogram.FIELDS, progress)
    settle(url, progress)


def drop(database: str) -> None:
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    end_file(database).unlink(missing_ok=True)


def walk(node: dict[str, Any], out: dict[str, Any]) -> None:
    """The plan's nodes (with their index or table) and the rows its filters removed."""
    kind = node["Node Type"]
    where = node.get("Index Name") or node.get("Relation Name")
    out["nodes"].append(f"{kind}({where})" if where else kind)
    out["removed"] += node.get("Rows Removed by Filter", 0)
    out["removed"] += node.get("Rows Removed by Index Recheck", 0)
    for child in node.get("Plans", []):
        walk(child, out)


def requests(org: Any) -> list[tuple[str, str, str]]:
    """(client, name, path) of one tenant's requests."""
    from monitoring.models import Endpoint, Incident

    projects = [str(pk) for pk in org.projects.order_by("name").values_list("pk", flat=True)]
    rows = Endpoint.objects.filter(project__organization=org).order_by("name")
    endpoints = list(rows.values_list("pk", "status"))
    one = str(endpoints[5][0])
    down = next(str(pk) for pk, status in endpoints if status == "down")
    incident = Incident.objects.filter(organization=org).latest("started_at").pk
    five = "&".join(f"endpoints={pk}" for pk, _ in endpoints[10:15])
    a = "/api/v1/analytics"
    return [
        ("web", "overview 24h", "/?period=24h"),
        ("web", "overview 7d", "/?period=7d"),
        ("web", "endpoint 24h", f"/endpoints/{one}"),
        ("web", "endpoint 7d", f"/endpoints/{one}?period=7d"),
        ("web", "endpoint down 24h", f"/endpoints/{down}"),
        ("web", "compare 5", f"/compare?{five}"),
        ("web", "incidents page", "/incidents"),
        ("web", "incident page", f"/incidents/{incident}"),
        ("api", "summary 24h org", f"{a}/summary?period=24h"),
        ("api", "summary 7d project", f"{a}/summary?period=7d&project={projects[1]}"),
        ("api", "response-time 24h", f"{a}/response-time?period=24h&endpoint={one}"),
        ("api", "uptime project", f"{a}/uptime?project={projects[1]}"),
        ("api", "sla 7d endpoint", f"{a}/sla?period=7d&endpoint={one}"),
        ("api", "sla 7d project", f"{a}/sla?period=7d&project={projects[1]}"),
        ("api", "endpoints page", "/api/v1/endpoints"),
        ("api", "endpoints ?project", f"/api/v1/endpoints?project={projects[1]}"),
        ("api", "endpoint read", f"/api/v1/endpoints/{one}"),
        ("api", "api incidents page", "/api/v1/incidents"),
        ("api", "api incidents open", "/api/v1/incidents?state=open"),
    ]


def _note(
    sent: list[tuple[str, Any]], execute: Any, sql: str, params: Any, many: bool, context: Any
) -> Any:
    """An execute wrapper keeping each statement and its parameters."""
    if not many:
        sent.append((sql, params))
    return execute(sql, params, many, context)


def measure(database: str, out: str) -> None:
    """Each request of the tenant's owner, its statements explained."""
    environment(database)
    setup_django()
    from django.core.cache import cache
    from django.db import connection
    from django.test import Client
    from rest_framework.test import APIClient

    from accounts.models import Organization, User
    from accounts.tokens import issue_access_token

    org = Organization.objects.get(name=TENANT)
    owner = User.objects.get(organization=org)
    web = Client()
    web.force_login(owner)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_access_token(owner).token}")
    results = {}
    for kind, name, path in requests(org):
        client = web if kind == "web" else api
        client.get(path)  # the process's own first-use work, not counted
        cache.clear()
        # The statements with their parameters, as each was sent: the prepared ones (the
        # analytics reads, an API request's credential state) are logged with the server's
        # `$1` placeholders and no values, so they are explained again from these.
        sent: list[tuple[str, Any]] = []
        with connection.execute_wrapper(functools.partial(_note, sent)):
            response = client.get(path)
        if response.status_code != 200:
            sys.exit(f"{name}: {path} answered {response.status_code}")
        statements = []
        for sql, params in sent:
            entry: dict[str, Any] = {"sql": sql}
            if sql.lstrip().upper().startswith(("SELECT", "WITH")):
                with connection.cursor() as cursor:
                    # Bound on the client here, so a binary placeholder is a plain one.
                    explain = "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql.replace("%b", "%s")
                    cursor.execute(explain, params)
                    (plan,) = cursor.fetchone()
                plan = (plan if isinstance(plan, list) else json.loads(plan))[0]
                top = plan["Plan"]
                figures: dict[str, Any] = {"nodes": [], "removed": 0}
                walk(top, figures)
                hit, read = top.get("Shared Hit Blocks", 0), top.get("Shared Read Blocks", 0)
                entry.update(buffers=hit + read, ms=plan["Execution Time"], **figures)
            statements.append(entry)
        results[name] = statements
        total = sum(s.get("buffers", 0) for s in statements)
        print(f"{name:22s} {len(statements):3d} statements {total:8,d} buffers", flush=True)
    Path(out).write_text(json.dumps(results, indent=1))


def compare(first: str, second: str) -> None:
    """Per request and statement: buffers, rows removed, ms; the plans of marked ones."""
    before, after = json.loads(Path(first).read_text()), json.loads(Path(second).read_text())
    for name, statements in before.items():
        others = after.get(name, [])
        was = sum(s.get("buffers", 0) for s in statements)
        now = sum(s.get("buffers", 0) for s in others)
        print(f"\n== {name}: {len(statements)} -> {len(others)} statements, {was:,} -> {now:,}")
        for n, (a, b) in enumerate(zip(statements, others, strict=False)):
            if "buffers" not in a or "buffers" not in b:
                continue
            grew = b["buffers"] > a["buffers"] * 1.15 + 2 or b["removed"] > a["removed"] + 50
            mark = "  <<<" if grew else ""
            print(
                f"  [{n:2d}] buffers {a['buffers']:6,d} -> {b['buffers']:6,d}  removed "
                f"{a['removed']:7,d} -> {b['removed']:7,d}  ms {a['ms']:.2f} -> {b['ms']:.2f}{mark}"
            )
            if grew:
                print("       " + a["sql"][:300].replace("\n", " "))
                print("       before: " + " ".join(a["nodes"]))
                print("       after:  " + " ".join(b["nodes"]))


def every_step(database: str, *, tiny: bool) -> None:
    """build, measure, big, measure, compare, drop: one run of the whole script; `tiny`
    (`--smoke`) on worlds of a few endpoints, in under a minute: does it still work?"""
    global TENANT, TENANTS, TENANT_ENDPOINTS, TENANT_PROJECTS, BIG_ENDPOINTS, BIG_PROJECTS
    if tiny:
        import _load_data

        TENANTS, TENANT_ENDPOINTS, TENANT_PROJECTS, BIG_ENDPOINTS, BIG_PROJECTS = 2, 20, 2, 40, 2
        TENANT = "Org 00"  # holds endpoint 17 of the cohort: the one down
        for name in ("TENANTS", "TENANT_ENDPOINTS", "TENANT_PROJECTS", "BIG_ENDPOINTS"):
            setattr(_load_data, name, globals()[name])
        _load_data.BIG_PROJECTS = BIG_PROJECTS
    small, large = f"/tmp/{database}-small.json", f"/tmp/{database}-big.json"
    try:
        build(database)
        measure(database, small)
        big(database)
        measure(database, large)
        compare(small, large)
    finally:
        drop(database)
        for path in (small, large):
            Path(path).unlink(missing_ok=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("step", nargs="?", choices=["build", "big", "measure", "compare", "drop"])
    parser.add_argument("--smoke", action="store_true", help="every step on tiny worlds")
    parser.add_argument("--quick", action="store_true", help="accepted: the scale is quick's")
    parser.add_argument("files", nargs="*", help="measure: the output; compare: two of them")
    parser.add_argument("--database", default="healthmon_isolation")
    args = parser.parse_args()
    if args.step is None:
        every_step(f"{args.database}_smoke" if args.smoke else args.database, tiny=args.smoke)
    elif args.step == "measure":
        measure(args.database, *args.files)
    elif args.step == "compare":
        compare(*args.files)
    else:
        {"build": build, "big": big, "drop": drop}[args.step](args.database)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
