"""Parts 3 and 4 of bench/alerts.py (not a benchmark itself): the delivery sweep over a
large outbox, and maintenance windows in the SLA report. Django must be set up."""

import time
import uuid
import warnings
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from _support import percentile, print_table, up_endpoint

OUTBOX = 100_000
PENDING = 20_000
DUE = 500
SLA_PAGE = 50
# (windows, each on one endpoint rather than the whole organization)
WINDOWS = ((0, False), (5, False), (50, False), (50, True))

# 100,000 rows: 78,500 delivered, 500 failed, 1,000 suppressed, then 20,000 pending of
# which the first DUE are due (oldest first) and the rest wait for a retry in 2-3 h.
FILL = """
INSERT INTO {table} (id, channel_id, event, event_id, incident_id, occurred_at, payload,
                     status, attempts, next_attempt_at, last_error,
                     created_at, delivered_at)
SELECT gen_random_uuid(), (%(channels)s::uuid[])[1 + n %% cardinality(%(channels)s::uuid[])],
       CASE WHEN n %% 2 = 0 THEN 'incident.opened' ELSE 'incident.resolved' END,
       gen_random_uuid(), NULL, at, %(payload)s::jsonb,
       CASE WHEN n < 78500 THEN 'delivered' WHEN n < 79000 THEN 'failed'
            WHEN n < 80000 THEN 'suppressed' ELSE 'pending' END,
       CASE WHEN n < 79000 OR n >= 80000 THEN 1 ELSE 0 END,
       CASE WHEN n < 79000 THEN at WHEN n < 80000 THEN NULL
            WHEN n < 80000 + %(due)s THEN %(now)s - (n - 80000) * interval '1 second'
            ELSE %(now)s + interval '2 hours' + (n - 80000) * interval '180 milliseconds' END,
       CASE WHEN n >= 80000 THEN 'HTTP 500' ELSE '' END, at,
       CASE WHEN n < 78500 THEN at END
FROM (SELECT n, %(now)s - (%(rows)s - n) * interval '20 seconds' AS at
      FROM generate_series(0, %(rows)s - 1) AS n) AS numbered
"""


def _ms(values: list[float], share: float) -> str:
    return f"{percentile(values, share):.1f}"


def _timed(runs: int, call: Callable[[int], Any]) -> list[float]:
    times = []
    for run in range(runs):
        t0 = time.perf_counter()
        call(run)
        times.append((time.perf_counter() - t0) * 1000)
    return times


def _queries(call: Callable[[], Any]) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        call()
    return len(captured)


def _plan(queryset: Any) -> list[str]:
    """EXPLAIN ANALYZE of a query (inside a transaction: FOR UPDATE needs one)."""
    from django.db import transaction

    with transaction.atomic():
        text = queryset.explain(analyze=True, buffers=True)
    lines = [line for line in text.splitlines() if "Planning" not in line]
    return ["     " + (line if len(line) < 150 else line[:146] + " ...") for line in lines]


def _fill_outbox(now: Any) -> None:
    """Replace the deliveries of the parts before with OUTBOX of them, to four webhooks of a
    new organization, each with the event document of part 1's first delivery; vacuumed and
    checkpointed, as an old table is."""
    import json

    from django.db import connection

    from accounts.services import organization_create
    from alerts.models import Delivery
    from alerts.services import channel_create

    org, _ = organization_create(name="Outbox")
    channels = [
        str(channel_create(organization=org, name=f"Hook {i}", kind="webhook", config=c).pk)
        for i, c in enumerate({"url": f"https://hooks{i}.example.com/x"} for i in range(4))
    ]
    payload = Delivery.objects.order_by("created_at").values_list("payload", flat=True).first()
    table = connection.ops.quote_name(Delivery._meta.db_table)
    t0 = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {table} CASCADE")  # and their attempts
        cursor.execute(
            FILL.format(table=table),
            {
                "channels": channels,
                "payload": json.dumps(payload),
                "due": DUE,
                "now": now,
                "rows": OUTBOX,
            },
        )
        cursor.execute(f"VACUUM (ANALYZE) {table}")
        cursor.execute("CHECKPOINT")
        cursor.execute(
            f"SELECT count(*), pg_size_pretty(pg_total_relation_size(%s)) FROM {table}",
            [Delivery._meta.db_table],
        )
        rows, size = cursor.fetchone()
    document = len(json.dumps(payload))
    print(
        f"   {rows:,} deliveries written in {time.perf_counter() - t0:.1f} s (VACUUM ANALYZE too):"
    )
    print(f"   {size} with indexes; {document:,} B an event document")


def measure_sweep(runs: int) -> None:
    """`deliveries_dispatch` over a 100,000-row outbox, three ways."""
    from django.utils import timezone

    from alerts import delivery
    from alerts.models import Delivery, DeliveryStatus
    from alerts.services import events
    from monitoring.models import Incident

    print(f"\n3. sweep: deliveries_dispatch over {OUTBOX:,} deliveries, {PENDING:,} pending")
    start = timezone.now()
    _fill_outbox(start)
    pending = Delivery.objects.filter(status=DeliveryStatus.PENDING)
    if pending.count() != PENDING or pending.filter(next_attempt_at__lte=start).count() != DUE:
        raise RuntimeError("the outbox is not as described")

    def sweep(run: int, step: timedelta = timedelta(seconds=61)) -> int:
        # Each sweep a hold later: what the one before claimed is due again.
        return delivery.deliveries_dispatch(now=start + run * step)

    rows, plans = [], {}
    found = sweep(0)
    queries = _queries(lambda: sweep(1))
    times = _timed(runs, lambda run: sweep(run + 2))
    rows.append([f"{DUE} due", _ms(times, 50), _ms(times, 95), queries, found])
    plans[f"{DUE} due"] = _plan(_due_query(start + (runs + 3) * timedelta(seconds=61)))

    # None due: the due ones wait for a retry too.
    due_ids = list(pending.filter(next_attempt_at__lte=start).values_list("pk", flat=True))
    Delivery.objects.filter(pk__in=due_ids).update(next_attempt_at=start + timedelta(hours=3))
    times = _timed(runs, lambda run: sweep(0))
    rows.append(["none due", _ms(times, 50), _ms(times, 95), _queries(lambda: sweep(0)), sweep(0)])
    plans["none due"] = _plan(_due_query(start))

    # A burst just written: every pending delivery due, each held while its task is queued.
    pending.update(next_attempt_at=start + timedelta(seconds=60))
    times = _timed(runs, lambda run: sweep(0))
    label = f"{PENDING:,} due, all held (a burst just queued)"
    rows.append([label, _ms(times, 50), _ms(times, 95), _queries(lambda: sweep(0)), sweep(0)])
    plans[label] = _plan(_due_query(start))
    print_table(["sweep", "p50 ms", "p95 ms", "queries", "claimed"], rows)
    for label, lines in plans.items():
        print(f"   EXPLAIN ANALYZE of the due query, {label}:")
        print("\n".join(lines))

    # The lookup of suppressed openings each resolving batch with channels makes.
    resolved = [Incident(pk=uuid.uuid4()) for _ in range(200)]
    times = _timed(runs, lambda run: events.suppressed_openings(resolved))
    print(
        f"   suppressed_openings(200 resolved incidents) on this outbox: p50 {_ms(times, 50)} ms,"
        f" p95 {_ms(times, 95)} ms"
    )
    lookup = Delivery.objects.filter(
        incident_id__in=[i.pk for i in resolved],
        event="incident.opened",
        status=DeliveryStatus.SUPPRESSED,
    )
    print("\n".join(_plan(lookup.values_list("incident_id", flat=True))))

    # Every sweep also looks for openings held back by a maintenance that has ended: none
    # due, with the 1,000 suppressed rows decided, then held until their windows end.
    held = Delivery.objects.filter(status=DeliveryStatus.SUPPRESSED)
    for label, look in (("decided", None), ("held for 1 h", start + timedelta(hours=1))):
        held.update(next_attempt_at=look)
        times = _timed(runs, lambda run: delivery.openings_release(now=start))
        print(
            f"   openings_release, none due, {held.count():,} suppressed {label}: "
            f"p50 {_ms(times, 50)} ms, p95 {_ms(times, 95)} ms, "
            f"{_queries(lambda: delivery.openings_release(now=start))} queries"
        )
    release = Delivery.objects.held(start).order_by("next_attempt_at").select_for_update()
    print("\n".join(_plan(release.values_list("pk", flat=True)[:500])))


def _due_query(now: Any) -> Any:
    """The sweep's query, as `deliveries_dispatch` builds it."""
    from alerts.models import Delivery

    return (
        Delivery.objects.due(now)
        .order_by("next_attempt_at")
        .select_for_update(skip_locked=True)
        .values_list("pk", flat=True)[:DUE]
    )


# --- 4. maintenance in the SLA report -------------------------------------------------------


def _sla_world() -> tuple[Any, Any, list[Any], str]:
    """An organization of 50 endpoints watched for 31 days, 5 incidents each, its owner
    and an API key that reads analytics."""
    from django.utils import timezone

    from accounts.models import User
    from accounts.services import organization_create
    from apikeys.services import api_key_create
    from monitoring.models import Endpoint, Incident

    now = timezone.now()
    created = now - timedelta(days=31)
    org, project = organization_create(name="Analytics")
    owner = User.objects.create_user(
        "sla@example.com", "bench-password-0001", organization=org, role="owner"
    )
    _, key = api_key_create(creator=owner, name="sla", scopes=["analytics:read"], expires_at=None)
    endpoints = [
        up_endpoint(project, f"API {i:02d}", f"https://api{i}.example.com/", 60, created, now)
        for i in range(SLA_PAGE)
    ]
    Endpoint.objects.bulk_create(endpoints)
    Incident.objects.bulk_create(
        Incident(
            organization=org,
            endpoint=endpoint,
            state="resolved",
            started_at=now - timedelta(days=6 * k + 1, minutes=7 * i),
            resolved_at=now - timedelta(days=6 * k + 1, minutes=7 * i - 10),
            cause="unexpected status 503",
        )
        for i, endpoint in enumerate(endpoints)
        for k in range(5)
    )
    page = list(Endpoint.objects.filter(project=project).without_secrets().order_by("name"))
    return org, owner, page, key


def _set_windows(org: Any, count: int, page: list[Any], one_each: bool) -> None:
    """`count` weekly windows of 1 h, 3 h apart through the week: organization-wide, or
    each on one endpoint of the page."""
    from django.utils import timezone

    from alerts.models import MaintenanceWindow
    from alerts.services import maintenance_window_save

    MaintenanceWindow.objects.filter(organization=org).delete()
    first = timezone.now() - timedelta(days=40)
    for i in range(count):
        start = first + timedelta(hours=3 * i + 1)
        maintenance_window_save(
            window=MaintenanceWindow(organization=org),
            name=f"Window {i}",
            starts_at=start,
            ends_at=start + timedelta(hours=1),
            recurrence="weekly",
            endpoints=[page[i % len(page)]] if one_each else None,
        )


def measure_sla(runs: int) -> None:
    """The 30-day SLA of a page of 50 endpoints with more and more maintenance windows."""
    from django.test import Client
    from django.utils import timezone

    # No collectstatic for an API route: whitenoise's warning about it says nothing here.
    warnings.filterwarnings("ignore", message="No directory at", category=UserWarning)
    from alerts.maintenance import maintenance_intervals
    from analytics import reports
    from analytics.windows import Window

    org, _owner, page, key = _sla_world()
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
    path = f"/api/v1/analytics/sla?period=30d&page_size={SLA_PAGE}"
    items = reports.Items("endpoint", page)

    def window() -> tuple[Window, Any]:
        now = timezone.now()
        return Window(now - timedelta(days=30), now), now

    def report() -> list[dict[str, Any]]:
        span, now = window()
        return reports.sla(items, span, now, None)

    def intervals() -> dict:
        span, _ = window()
        return maintenance_intervals(page, span.start, span.end)

    def api() -> Any:
        response = client.get(path)
        if response.status_code != 200 or len(response.json()["results"]) != SLA_PAGE:
            raise RuntimeError(f"{path}: HTTP {response.status_code}")
        return response

    rows = []
    for count, one_each in WINDOWS:
        _set_windows(org, count, page, one_each)
        held = intervals()
        hours = sum((e - s).total_seconds() for s, e in held.get(page[0].pk, [])) / 3600
        figures = report()[0]
        for label, call in (
            ("reports.sla", report),
            ("  of which maintenance_intervals", intervals),
            ("GET /api/v1/analytics/sla", api),
        ):
            for _ in range(3):
                call()
            times = _timed(runs, lambda run, call=call: call())
            queries = _queries(call)
            name = f"{count} windows{', one endpoint each' if one_each else ''}: {label}"
            rows.append([name, _ms(times, 50), _ms(times, 95), queries])
        rows[-3] += [f"{hours:.0f}", f"{figures['uptime']}"]
        rows[-2] += ["", ""]
        rows[-1] += ["", ""]
    print(
        f"\n4. SLA over 30 days of a page of {SLA_PAGE} endpoints (5 incidents each), {runs} runs"
    )
    print("   weekly maintenance windows of 1 h, organization-wide unless said otherwise;")
    print("   maint. h and uptime %: the first endpoint's (API 00), over the 30 days")
    print_table(["report", "p50 ms", "p95 ms", "queries", "maint. h", "uptime %"], rows)
