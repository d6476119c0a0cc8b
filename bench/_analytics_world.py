"""The analytics benchmark's tenants and data on the Django side (it is no benchmark):
creating and loading them, checking the SQL-built rollups, timing statements."""

import json
import math
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from _analytics_data import EARLIER_DAYS, SLOT_MS, Layout, Progress, connect, generate, layout_for
from _support import up_endpoint

DAY = timedelta(days=1)
FIVE_MINUTES = timedelta(minutes=5)


@dataclass
class World:
    """What the generated data holds, and where."""

    layout: Layout
    start: datetime  # the raw day is [start, end)
    end: datetime
    tenants: list[Any]
    all_org: Any
    projects: list[Any]
    endpoints: list[Any]  # in creation order: endpoint i of the data module
    owners: dict[Any, Any] = field(default_factory=dict)  # organization pk -> owner


def create_tenants(layout: Layout, end: datetime) -> None:
    """Organizations (each with an owner), projects and endpoints, watched for 31 days."""
    from accounts.models import Organization, Project, Role, User
    from monitoring.models import Endpoint

    created = end - timedelta(days=EARLIER_DAYS + 1)
    names = [f"Tenant {n:02d}" for n in range(layout.organizations)] + ["All endpoints"]
    orgs = Organization.objects.bulk_create(
        Organization(name=name, created_at=created) for name in names
    )
    for n, org in enumerate(orgs):
        User.objects.create_user(f"owner{n}@bench.test", None, organization=org, role=Role.OWNER)
    projects = Project.objects.bulk_create(
        Project(
            organization=orgs[p * layout.project_size // layout.tenant_size],
            name=f"Project {p:03d}",
            created_at=created,
        )
        for p in range(layout.projects)
    )
    endpoints = []
    for i in range(layout.endpoints):
        target = f"https://service{i}.example.com/health"
        endpoints.append(
            up_endpoint(
                projects[i // layout.project_size],
                f"Service {i:05d}",
                target,
                SLOT_MS // 1000,
                created,
                end,
            )
        )
    Endpoint.objects.bulk_create(endpoints, batch_size=1000)


def write_endpoint_table(url: str, layout: Layout) -> None:
    """`bench_endpoint`: each endpoint's number, base latency and phase in the interval."""
    from monitoring.models import Endpoint

    ids = Endpoint.objects.order_by("name").values_list("pk", flat=True)
    with connect(url) as conn:
        conn.execute(
            "CREATE TABLE bench_endpoint "
            "(i int PRIMARY KEY, id uuid NOT NULL, base_ms float8 NOT NULL, phase_ms int NOT NULL)"
        )
        # Phases: a permutation of evenly spread offsets, so that the endpoints of one
        # project are checked (and their rows stored) among everyone else's, as happens
        # when many tenants' endpoints share the workers.
        step = next(m for m in range(7919, 10**6) if math.gcd(m, layout.endpoints) == 1)
        with conn.cursor().copy("COPY bench_endpoint (i, id, base_ms, phase_ms) FROM STDIN") as cp:
            for i, pk in enumerate(ids):
                # 15 to 600 ms, log-spread; the four endpoints 4m … 4m+3 share it.
                base = 15 * 40 ** ((i // 4 * 0.6180339887) % 1)
                phase = i * step % layout.endpoints * SLOT_MS // layout.endpoints
                cp.write_row((i, pk, round(base, 3), phase))


def build(url: str, scale: float, began: float) -> None:
    """Create the tenants and generate the data; note the layout in `bench_meta`."""
    from analytics import histogram

    layout = layout_for(scale)
    # The raw day ends on a 5-minute boundary at least 5 minutes ago: later rows (ingest)
    # get UUIDv7 ids of their own time, above every generated one.
    now = datetime.now(UTC)
    end = datetime.fromtimestamp(now.timestamp() // 300 * 300, UTC) - FIVE_MINUTES
    start = end - DAY
    progress = Progress(began)
    print(f"layout: {layout.describe()}")
    print(f"raw day: {start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC", flush=True)
    create_tenants(layout, end)
    # A partition per day of the raw day before it is loaded (else all of it is DEFAULT's).
    from monitoring.partitions import partitions_ensure

    made = partitions_ensure(first=start.date(), days=(end.date() - start.date()).days + 1)
    print(f"raw check partitions made: {', '.join(f'{d:%Y-%m-%d}' for d in made) or 'none'}")
    write_endpoint_table(url, layout)
    progress.say(f"{layout.endpoints:,} endpoints created")
    generate(url, start, histogram.EDGES, histogram.FIELDS, progress)
    meta = {
        "scale": scale,
        "start": start.isoformat(),
        "end": end.isoformat(),
        # --reuse needs the key the endpoints' targets were encrypted with.
        "keys": os.environ["FIELD_ENCRYPTION_KEYS"],
    }
    with connect(url) as conn:
        conn.execute("CREATE TABLE bench_meta (meta jsonb NOT NULL)")
        conn.execute("INSERT INTO bench_meta VALUES (%s)", [json.dumps(meta)])


def load_world() -> World:
    """The layout and the objects the measurements use."""
    from django.db import connection

    from accounts.models import Organization, Project, User
    from monitoring.models import Endpoint

    with connection.cursor() as cursor:
        cursor.execute("SELECT meta FROM bench_meta")
        meta = cursor.fetchone()[0]
        meta = json.loads(meta) if isinstance(meta, str) else meta
    tenants = list(Organization.objects.filter(name__startswith="Tenant ").order_by("name"))
    endpoints = list(Endpoint.objects.filter(name__startswith="Service ").without_secrets())
    endpoints.sort(key=lambda endpoint: endpoint.name)
    world = World(
        layout=layout_for(meta["scale"]),
        start=datetime.fromisoformat(meta["start"]),
        end=datetime.fromisoformat(meta["end"]),
        tenants=tenants,
        all_org=Organization.objects.get(name="All endpoints"),
        projects=list(Project.objects.filter(name__startswith="Project ").order_by("name")),
        endpoints=endpoints,
    )
    for user in User.objects.filter(email__startswith="owner", email__endswith="@bench.test"):
        world.owners[user.organization_id] = user
    return world


def table_sizes() -> list[list[str]]:
    """Rows and on-disk size (with indexes) of the tables the data fills."""
    from django.db import connection

    rows = []
    with connection.cursor() as cursor:
        for table in (
            "monitoring_checkresult",
            "analytics_rollup_5m",
            "analytics_rollup_1h",
            "analytics_rollup_1d",
            "monitoring_incident",
            "monitoring_statuschange",
        ):
            # Summed over the partitions, where the table has some.
            cursor.execute(
                f"SELECT (SELECT count(*) FROM {table}), "
                f"pg_size_pretty(sum(pg_total_relation_size(relid))), "
                f"pg_size_pretty(sum(pg_indexes_size(relid))) "
                f"FROM (SELECT relid FROM pg_partition_tree('{table}') "
                f"UNION SELECT '{table}'::regclass) s"
            )
            count, total, indexes = cursor.fetchone()
            rows.append([table, f"{count:,}", total, indexes])
    return rows


def verify_rollups(world: World, sample: int = 40) -> int:
    """Check the SQL-built 5-minute and hourly rows against `rollups_rebuild`; roll back."""
    import math

    from django.db import transaction

    from analytics import histogram
    from analytics.models import FiveMinuteRollup, HourRollup
    from analytics.services import rollups_rebuild

    rng = random.Random(1)
    ids = [e.pk for e in rng.sample(world.endpoints, min(sample, len(world.endpoints)))]
    first_hour = world.start.replace(minute=0, second=0, microsecond=0)
    columns = ["count", "failures", "sum_ms", "min_ms", "max_ms", *histogram.FIELDS, "timed"]

    def snapshot() -> dict:
        return {
            tier.__name__: {
                (row[0], row[1]): row[2:]
                for row in tier.objects.filter(
                    endpoint_id__in=ids, bucket__gte=first_hour, bucket__lt=world.end
                ).values_list("endpoint_id", "bucket", *columns)
            }
            for tier in (FiveMinuteRollup, HourRollup)
        }

    built = snapshot()
    with transaction.atomic():
        rollups_rebuild(endpoint_ids=ids, start=world.start, end=world.end)
        rebuilt = snapshot()
        transaction.set_rollback(True)
    compared = 0
    for tier, rows in rebuilt.items():
        if set(rows) != set(built[tier]):
            raise RuntimeError(f"{tier}: the SQL-built buckets differ from rollups_rebuild's")
        for key, values in rows.items():
            mine = built[tier][key]
            same = all(
                math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6) if n == 2 else a == b
                for n, (a, b) in enumerate(zip(values, mine, strict=True))
            )
            if not same:
                raise RuntimeError(f"{tier} {key}: SQL-built {mine} != rebuilt {values}")
            compared += 1
    return compared


class DbClock:
    """An execute wrapper summing the time spent in `cursor.execute`, by kind of query."""

    def __init__(self, classify: Callable[[str], str] | None = None) -> None:
        self.seconds = 0.0
        self.queries = 0
        self.by_kind: dict[str, float] = {}
        self.classify = classify
        self.log: list[tuple[str, Any]] | None = None

    def __call__(self, execute: Callable, sql: str, params: Any, many: bool, context: Any) -> Any:
        """Time one statement."""
        began = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            spent = time.perf_counter() - began
            self.seconds += spent
            self.queries += 1
            if self.classify is not None:
                kind = self.classify(sql)
                self.by_kind[kind] = self.by_kind.get(kind, 0.0) + spent
            if self.log is not None:
                self.log.append((sql, params))
