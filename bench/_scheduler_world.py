"""The endpoints of bench/scheduler.py (it is no benchmark): first slots spread evenly over
one interval, the endpoints made by the ORM or copied in SQL, then moved to the start of the
run. Django must be set up."""

import time
from datetime import UTC, datetime, timedelta

from _support import http_endpoint

INTERVAL = 30
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def micros(moment: datetime) -> int:
    """A time as whole microseconds since the epoch: exact, unlike a float."""
    return (moment - EPOCH) // timedelta(microseconds=1)


def create_endpoints(count: int, first_slot: datetime, urls: list[str]) -> dict[str, int]:
    """`count` endpoints whose first slots are spread evenly over one interval; returns
    each one's first slot. Targets: `urls` in turn, or one name that is never probed."""
    from accounts.services import organization_create
    from monitoring.models import Endpoint

    _, project = organization_create(name="Bench")
    step = timedelta(seconds=INTERVAL) / count
    if not urls:
        return copy_endpoints(project, count, first_slot, step)
    endpoints = [
        http_endpoint(
            project,
            f"Service {i}",
            urls[i % len(urls)],
            INTERVAL,
            next_check_at=first_slot + step * i,
        )
        for i in range(count)
    ]
    Endpoint.objects.bulk_create(endpoints, batch_size=1000)
    return {str(e.pk): micros(e.next_check_at) for e in endpoints}


def copy_endpoints(project: object, count: int, first_slot: datetime, step: timedelta) -> dict:
    """Copies of one endpoint made by the ORM, written by one INSERT ... SELECT (the ORM
    took over 3 minutes for 100,000, encrypting each target); their first slots."""
    from django.db import connection

    from monitoring.models import Endpoint

    template = http_endpoint(project, "Service", "https://service.example.com/health", INTERVAL)
    template.save()
    columns = [str(field.column) for field in Endpoint._meta.concrete_fields]
    made = {
        "id": "gen_random_uuid()",
        "name": "'Service ' || g",
        "badge_key": "md5(random()::text || g)",
        "next_check_at": "%(first)s + g * %(step)s",
    }
    values = ", ".join(made.get(column, f"t.{column}") for column in columns)
    sql = (
        f"INSERT INTO monitoring_endpoint ({', '.join(columns)})"
        f" SELECT {values} FROM monitoring_endpoint t, generate_series(0, %(count)s - 1) g"
        " WHERE t.id = %(template)s RETURNING id, next_check_at"
    )
    with connection.cursor() as cursor:
        cursor.execute(
            sql, {"first": first_slot, "step": step, "count": count, "template": template.pk}
        )
        slots = {str(pk): micros(slot) for pk, slot in cursor.fetchall()}
    template.delete()
    return slots


def move_first_slots(first_slots: dict[str, int]) -> tuple[float, dict[str, int]]:
    """Start the run on a whole second just ahead: move every first slot there.

    The UPDATE leaves a dead version of every row, its old slot at the head of the due
    index: a state no running installation is in (its dispatcher's own dead rows are
    vacuumed as they come), so the table is vacuumed before the run. When that took past
    the start (a loaded machine), the slots move again, further ahead.
    """
    from django.db import connection
    from django.db.models import F

    from monitoring.models import Endpoint

    moved, margin = timedelta(0), 2.0
    while True:
        began = time.time()
        start = float(int(began + margin) + 1)
        shift = timedelta(seconds=start) - moved
        Endpoint.objects.filter(pk__in=list(first_slots)).update(
            next_check_at=F("next_check_at") + shift
        )
        moved += shift
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE monitoring_endpoint")
        if time.time() < start - 0.5:
            return start, {pk: slot + micros(EPOCH + moved) for pk, slot in first_slots.items()}
        margin = 2 * (time.time() - began) + 2
