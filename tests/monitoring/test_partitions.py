"""Raw checks in daily partitions (PostgreSQL): made ahead, a check of a day with none is kept
in DEFAULT and moved when its day is made, one check per slot in any partition, retention
drops exactly the days past the setting and nothing else loses data (issue 26)."""

import time
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta

import pytest
import time_machine
from django.conf import settings as django_settings
from django.db import IntegrityError, OperationalError, connection, connections, transaction
from django.utils import timezone

from analytics.models import DayRollup, FiveMinuteRollup, HourRollup
from analytics.services import retention_run
from monitoring import partitions
from monitoring.models import CheckResult, Incident, StatusChange
from monitoring.partitions import (
    DEFAULT,
    day_start,
    partition_name,
    partitions_ahead,
    partitions_drop,
    partitions_ensure,
    partitions_list,
)
from monitoring.tasks import make_check_partitions
from tests.concurrency import race

pytestmark = pytest.mark.postgres("declarative partitioning is PostgreSQL's")

D0 = date(2031, 3, 1)  # far from today's partitions and from other tests' days
DAY = timedelta(days=1)


def at(day: date, hours: float = 0) -> datetime:
    return day_start(day) + timedelta(hours=hours)


def where(check_id) -> str:
    """The partition holding a check."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tableoid::regclass::text FROM monitoring_checkresult WHERE id = %s",
            [check_id],
        )
        return cursor.fetchone()[0]


def default_rows() -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {DEFAULT}")  # noqa: S608
        return cursor.fetchone()[0]


def days() -> list[date]:
    return [p.day for p in partitions_list() if p.day is not None]


@pytest.fixture
def endpoint(cast, make_endpoint):
    return make_endpoint(cast.project, failure_threshold=1)


def test_the_migration_made_today_the_days_ahead_and_default(db):
    today = timezone.now().date()
    ahead = django_settings.CHECK_PARTITIONS_AHEAD_DAYS

    made = days()

    assert {today + n * DAY for n in range(ahead + 1)} <= set(made)
    assert partitions_list()[-1].name == DEFAULT


def test_the_beat_task_makes_the_days_ahead_once(db, settings):
    settings.CHECK_PARTITIONS_AHEAD_DAYS = 5
    today = timezone.now().date()

    with time_machine.travel(at(D0, 12), tick=False):
        assert make_check_partitions() == 6
        assert make_check_partitions() == 0

    assert {D0 + n * DAY for n in range(6)} <= set(days())
    assert "make-check-partitions" in settings.CELERY_BEAT_SCHEDULE
    assert today in days()


def test_a_check_of_a_day_without_partition_is_kept_and_moved_when_the_day_is_made(
    endpoint, record
):
    slots = [(at(D0, 1), True, 12.0), (at(D0, 23.99), False, 0.0)]
    assert record(endpoint, slots) == 2
    stored = list(CheckResult.objects.filter(endpoint=endpoint).order_by("scheduled_for"))
    assert [where(c.pk) for c in stored] == [DEFAULT, DEFAULT]
    rollups = list(FiveMinuteRollup.objects.values_list("bucket", "count", "failures"))

    assert partitions_ensure(first=D0 - DAY, days=3) == [D0 - DAY, D0, D0 + DAY]

    moved = list(CheckResult.objects.filter(endpoint=endpoint).order_by("scheduled_for"))
    assert [(c.pk, c.scheduled_for, c.ok) for c in moved] == [
        (c.pk, c.scheduled_for, c.ok) for c in stored
    ]
    assert [where(c.pk) for c in moved] == [partition_name(D0)] * 2
    assert default_rows() == 0
    assert list(FiveMinuteRollup.objects.values_list("bucket", "count", "failures")) == rollups


def test_one_check_per_slot_in_default_in_a_partition_and_after_the_move(endpoint, record):
    slot = at(D0, 5)
    assert record(endpoint, [(slot, True, 10.0)]) == 1
    assert record(endpoint, [(slot, True, 11.0)]) == 0  # redelivered: in DEFAULT

    partitions_ensure(first=D0, days=1)
    assert record(endpoint, [(slot, True, 12.0)]) == 0  # after the move: in its partition
    assert record(endpoint, [(slot + DAY, True, 13.0)]) == 1  # the next day: DEFAULT again

    assert CheckResult.objects.filter(endpoint=endpoint).count() == 2
    assert FiveMinuteRollup.objects.get(bucket=slot).count == 1


@pytest.mark.parametrize("partitioned_day", [True, False])
def test_the_database_refuses_a_second_check_of_a_slot_in_any_partition(endpoint, partitioned_day):
    if partitioned_day:
        partitions_ensure(first=D0, days=1)
    row = {"endpoint": endpoint, "scheduled_for": at(D0, 3), "checked_at": at(D0, 3), "ok": True}
    CheckResult.objects.create(**row)

    with pytest.raises(IntegrityError), transaction.atomic():
        CheckResult.objects.create(**row)
    CheckResult.objects.create(**{**row, "location": "eu-west"})  # another location's

    assert CheckResult.objects.count() == 2


def test_retention_drops_exactly_the_days_past_the_setting(endpoint, record, settings):
    settings.RAW_RETENTION_DAYS = 14
    settings.ROLLUP_5M_RETENTION_DAYS = 3650
    partitions_ensure(first=D0, days=20)
    for n in range(20):  # a failure each day opens an incident, the success resolves it
        day = D0 + n * DAY
        with time_machine.travel(at(day, 12), tick=False):
            record(endpoint, [(at(day), False, 0.0), (at(day, 23.999), True, 9.0)])
    with time_machine.travel(at(D0 + 30 * DAY), tick=False):
        record(endpoint, [(at(D0 - 40 * DAY, 6), True, 8.0)])  # a stray day in DEFAULT
        record(endpoint, [(at(D0 + 40 * DAY, 6), True, 8.0)])  # and a future one
    before = {
        "incidents": list(Incident.objects.values_list("pk", "started_at", "resolved_at")),
        "changes": list(StatusChange.objects.values_list("pk", "changed_at")),
        "rollups": [
            list(t.objects.values_list("bucket", "count"))
            for t in (FiveMinuteRollup, HourRollup, DayRollup)
        ],
    }
    existing = set(days())
    with connection.cursor() as cursor:  # as if committed: no deferred key check pending
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    now = at(D0 + 19 * DAY, 6)  # minus 14 days: D0 + 5 at 06:00, so D0 … D0 + 4 are past

    deleted = retention_run(now=now)

    first_kept = D0 + 5 * DAY
    assert set(days()) == {d for d in existing if d >= first_kept}
    assert deleted["check_days"] == len({d for d in existing if d < first_kept})
    assert deleted["checks"] == 1  # the stray day's check in DEFAULT
    kept = sorted(CheckResult.objects.values_list("scheduled_for", flat=True))
    assert kept[0] == at(first_kept)  # midnight of the first kept day is kept
    assert kept == sorted(
        [at(D0 + n * DAY) for n in range(5, 20)]
        + [at(D0 + n * DAY, 23.999) for n in range(5, 20)]
        + [at(D0 + 40 * DAY, 6)]
    )
    assert default_rows() == 1
    assert before == {
        "incidents": list(Incident.objects.values_list("pk", "started_at", "resolved_at")),
        "changes": list(StatusChange.objects.values_list("pk", "changed_at")),
        "rollups": [
            list(t.objects.values_list("bucket", "count"))
            for t in (FiveMinuteRollup, HourRollup, DayRollup)
        ],
    }
    assert retention_run(now=now)["check_days"] == 0


def test_dropping_before_a_day_keeps_that_day(db):
    partitions_ensure(first=D0, days=3)

    dropped = partitions_drop(before=D0 + DAY)

    assert D0 in dropped.days
    assert max(dropped.days) == D0  # today's and the days ahead went too (all before it)
    assert {D0 + DAY, D0 + 2 * DAY} <= set(days())
    assert D0 not in days()


@pytest.fixture
def made_days(transactional_db) -> Iterator[list[date]]:
    """Days whose partitions a test commits; dropped afterwards."""
    made: list[date] = []
    yield made
    with connection.cursor() as cursor:
        for day in made:
            cursor.execute(f"DROP TABLE IF EXISTS {partition_name(day)}")


def test_two_ensure_calls_racing_make_each_partition_once(made_days, endpoint, record):
    record(endpoint, [(at(D0 + n * DAY, 2), True, 5.0) for n in range(4)])  # in DEFAULT
    made_days.extend(D0 + n * DAY for n in range(4))
    results: list[list[date]] = []

    def ensure() -> int:
        results.append(partitions_ensure(first=D0, days=4))
        return 0

    race(ensure, ensure)

    assert sorted(d for made in results for d in made) == made_days  # each made once
    assert set(made_days) <= set(days())
    assert default_rows() == 0
    checks = CheckResult.objects.filter(endpoint=endpoint)
    assert sorted(c.scheduled_for for c in checks) == [at(d, 2) for d in made_days]
    assert sorted({where(c.pk) for c in checks}) == [partition_name(d) for d in made_days]


def test_making_the_days_ahead_again_makes_nothing(db):
    today = timezone.now().date()

    assert partitions_ahead(today=today, ahead_days=1) == []  # the migration made them
    assert datetime.now(UTC).date() in days()


def test_a_held_lock_makes_the_call_give_up_soon_not_queue_inserts(made_days, monkeypatch):
    monkeypatch.setattr(partitions, "LOCK_TIMEOUT", "100ms")
    monkeypatch.setattr(partitions, "ATTEMPTS", 2)
    reader = connections.create_connection("default")  # a long read on the checks table
    with reader.cursor() as cursor:
        cursor.execute("BEGIN")
        cursor.execute(f"LOCK TABLE {partitions.TABLE} IN ACCESS SHARE MODE")
        began = time.monotonic()
        with pytest.raises(OperationalError):
            partitions_ensure(first=D0, days=1)
        assert time.monotonic() - began < 5
        cursor.execute("ROLLBACK")
    reader.close()
    made_days.append(D0)

    assert partitions_ensure(first=D0, days=1) == [D0]


def test_days_already_made_are_passed_without_taking_the_lock(made_days, monkeypatch):
    """The hourly task finds every day made nearly always: it must not queue the checks'
    inserts and reads behind an exclusive lock it does not need."""
    monkeypatch.setattr(partitions, "LOCK_TIMEOUT", "100ms")
    monkeypatch.setattr(partitions, "ATTEMPTS", 1)
    assert partitions_ensure(first=D0, days=2) == [D0, D0 + timedelta(days=1)]
    made_days.extend([D0, D0 + timedelta(days=1)])
    reader = connections.create_connection("default")  # a long read on the checks table
    try:
        with reader.cursor() as cursor:
            cursor.execute("BEGIN")
            cursor.execute(f"LOCK TABLE {partitions.TABLE} IN ACCESS SHARE MODE")
            assert partitions_ensure(first=D0, days=2) == []
            cursor.execute("ROLLBACK")
    finally:
        reader.close()
