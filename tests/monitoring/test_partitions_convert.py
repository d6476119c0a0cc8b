"""An existing installation's unpartitioned raw checks table becomes the partitioned one:
copied in batches while checks keep being stored, updated and deleted, then swapped in with
every row, constraint and index (migration 0024's path, issue 26)."""

import importlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from monitoring.models import CheckResult, Endpoint
from monitoring.partitions import DEFAULT, NEW, TABLE, partitioned, partitions_list
from monitoring.partitions_convert import (
    OLD,
    PROGRESS,
    partitions_cleanup,
    partitions_convert,
    partitions_copy,
    partitions_prepare,
    partitions_swap,
)

pytestmark = pytest.mark.postgres("the conversion is PostgreSQL's")

T0 = datetime(2030, 5, 10, 8, 0, tzinfo=UTC)
ROW = ("id", "endpoint_id", "scheduled_for", "checked_at", "ok", "response_time_ms", "error")


def schema() -> dict[str, list]:
    """The table's keys and indexes, by name: what the old one had, the new one must."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT conname, contype, pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE conrelid = %s::regclass ORDER BY 1",
            [TABLE],
        )
        constraints = [list(row) for row in cursor.fetchall()]
        cursor.execute(
            "SELECT c.relname, "
            "regexp_replace(pg_get_indexdef(i.indexrelid), ' ON (ONLY )?', ' ON ') "
            "FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE i.indrelid = %s::regclass ORDER BY 1",
            [TABLE],
        )
        return {"constraints": constraints, "indexes": [list(row) for row in cursor.fetchall()]}


def rows() -> set[tuple]:
    return set(CheckResult.objects.values_list(*ROW))


def leftovers() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname FROM pg_class WHERE relname IN (%s, %s, %s) "
            "UNION ALL SELECT proname FROM pg_proc WHERE proname LIKE %s",
            [NEW, OLD, PROGRESS, f"{TABLE}_mirror%"],
        )
        return [row[0] for row in cursor.fetchall()]


@pytest.fixture
def old_table(transactional_db) -> Iterator[None]:
    """The raw checks table as migration 0023 left it (one table), instead of the
    partitioned one; partitioned again afterwards, whatever the test did."""
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE {TABLE}")
    with connection.schema_editor() as editor:
        editor.create_model(CheckResult)
    try:
        yield
    finally:
        partitions_convert(ahead_days=3, say=lambda text: None)
        Endpoint.objects.all().delete()


def store(endpoints: list[Endpoint], start: datetime, count: int) -> list[CheckResult]:
    """Checks of the endpoints, one a minute each, failing every seventh."""
    return CheckResult.objects.bulk_create(
        CheckResult(
            endpoint=endpoints[n % len(endpoints)],
            scheduled_for=start + timedelta(minutes=n // len(endpoints)),
            checked_at=start + timedelta(minutes=n // len(endpoints), seconds=1),
            ok=n % 7 != 0,
            response_time_ms=float(n),
            error="" if n % 7 else "HTTP 503",
        )
        for n in range(count)
    )


@pytest.fixture
def endpoints(old_table, cast, make_endpoint) -> list[Endpoint]:
    return [make_endpoint(cast.project, name=f"Service {n}") for n in range(3)]


def test_a_populated_table_is_copied_and_swapped_with_every_row_key_and_index(endpoints):
    before = schema()
    # Three days, 30 hours apart, so that rows cross midnight.
    for day in range(3):
        store(endpoints, T0 + timedelta(hours=30 * day), 100)
    covered = {r[2].astimezone(UTC).date() for r in rows()}

    partitions_prepare(ahead_days=2)
    # While the copy is under way: stored, changed and deleted rows (the triggers' work).
    late = store(endpoints, T0 + timedelta(days=9), 10)
    doomed = Endpoint.objects.get(pk=endpoints[2].pk)
    partitions_copy(batch=40)
    # After the rows were copied: only the triggers carry these over.
    CheckResult.objects.filter(pk=late[0].pk).update(error="changed during the copy")
    store(endpoints, T0 + timedelta(days=12), 5)  # after the last batch: the swap's tail
    doomed.delete()  # its checks with it
    expected = rows()

    partitions_swap()
    partitions_cleanup()

    assert partitioned(table=TABLE)
    assert rows() == expected
    assert CheckResult.objects.get(pk=late[0].pk).error == "changed during the copy"
    assert not CheckResult.objects.filter(endpoint_id=endpoints[2].pk).exists()
    after = schema()
    assert [c for c in after["constraints"] if c[1] != "p"] == [
        c for c in before["constraints"] if c[1] != "p"
    ]
    [pkey] = [c for c in after["constraints"] if c[1] == "p"]
    assert pkey == ["monitoring_checkresult_pkey", "p", "PRIMARY KEY (id, scheduled_for)"]
    assert [name for name, _ in after["indexes"]] == [name for name, _ in before["indexes"]]
    assert [d for n, d in after["indexes"] if n != pkey[0]] == [
        d for n, d in before["indexes"] if n != pkey[0]
    ]
    days = {p.day for p in partitions_list()}
    today = timezone.now().date()
    assert covered | {today + timedelta(days=n) for n in range(3)} | {None} == days
    with connection.cursor() as cursor:  # days that came during the copy: in DEFAULT
        cursor.execute(f"SELECT count(*) FROM {DEFAULT}")  # noqa: S608
        assert cursor.fetchone()[0] == len([r for r in expected if r[2] > T0 + timedelta(days=8)])
    assert partitions_list()[-1].name == DEFAULT
    assert leftovers() == []


def test_the_unique_slot_and_the_key_to_endpoints_hold_after_the_swap(endpoints):
    [check] = store(endpoints, T0, 1)

    partitions_convert(ahead_days=1, say=lambda text: None)

    duplicate = CheckResult(
        endpoint_id=check.endpoint_id,
        scheduled_for=check.scheduled_for,
        checked_at=check.checked_at,
        ok=True,
    )
    with pytest.raises(IntegrityError), transaction.atomic():
        duplicate.save()
    with pytest.raises(IntegrityError), transaction.atomic():
        CheckResult.objects.create(
            endpoint_id=Endpoint().pk, scheduled_for=T0, checked_at=T0, ok=True
        )


def test_an_interrupted_conversion_resumes_and_a_finished_one_does_nothing(endpoints):
    store(endpoints, T0, 60)
    partitions_prepare(ahead_days=1)
    partitions_prepare(ahead_days=1)  # run again: nothing made twice
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {NEW}")  # noqa: S608
        assert cursor.fetchone()[0] == 0
    expected = rows()

    assert partitions_convert(ahead_days=1, say=lambda text: None)
    assert not partitions_convert(ahead_days=1, say=lambda text: None)

    assert rows() == expected
    assert leftovers() == []


def test_the_migration_converts_the_table(endpoints):
    store(endpoints, T0, 20)
    expected = rows()
    migration = importlib.import_module("monitoring.migrations.0024_checkresult_partitioned")

    with connection.schema_editor(atomic=False) as editor:
        migration.partition(None, editor)

    assert partitioned(table=TABLE)
    assert rows() == expected


def test_the_command_copies_ahead_and_the_migration_finishes(endpoints):
    store(endpoints, T0, 30)

    out = StringIO()
    call_command("partition_checks", "--batch", "7", stdout=out)

    assert "Copied 30 check(s)" in out.getvalue()
    assert not partitioned(table=TABLE)
    store(endpoints, T0 + timedelta(hours=1), 3)  # stored after the copy: mirrored
    expected = rows()
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {NEW}")  # noqa: S608
        assert cursor.fetchone()[0] == 33
    call_command("partition_checks", "--swap", stdout=out)
    assert partitioned(table=TABLE)
    assert rows() == expected
    assert leftovers() == []
