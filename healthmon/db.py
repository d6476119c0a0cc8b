"""Database helpers the ORM lacks."""

import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

from django.contrib.postgres.operations import (
    AddIndexConcurrently as AddIndexConcurrentlyOnPostgres,
)
from django.contrib.postgres.operations import (
    RemoveIndexConcurrently as RemoveIndexConcurrentlyOnPostgres,
)
from django.db import OperationalError, connections, models, router, transaction
from django.db.migrations import AddIndex, RemoveIndex

T = TypeVar("T")
LOCK_NOT_GRANTED = "55P03"  # PostgreSQL's lock_not_available


def lock_not_granted(exc: OperationalError) -> bool:
    """Whether PostgreSQL refused a lock that its `lock_timeout` did not see granted."""
    return getattr(exc.__cause__, "sqlstate", None) == LOCK_NOT_GRANTED


def with_lock_timeout(
    change: Callable[[], T],
    *,
    timeout: str,
    attempts: int,
    pause: Callable[[int], float],
    using: str = "default",
) -> T:
    """Run `change` in a transaction whose locks are asked for with this `lock_timeout`
    (PostgreSQL), so that a long reader never queues everyone's writes behind a waiting
    schema change; when a lock is not granted in time, try again after `pause(attempt)`
    seconds, up to `attempts` times, then raise the last refusal."""
    for attempt in range(attempts):
        try:
            with transaction.atomic(using=using), connections[using].cursor() as cursor:
                cursor.execute(f"SET LOCAL lock_timeout = '{timeout}'")
                return change()
        except OperationalError as exc:
            if not lock_not_granted(exc) or attempt == attempts - 1:
                raise
            time.sleep(pause(attempt))
    raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover


def update_each(objects: Sequence[models.Model], fields: Sequence[str]) -> None:
    """Write these columns of each object: one UPDATE per row, sent as one executemany
    (a pipeline on psycopg 3).

    Django's bulk_update builds a CASE over every row for each column: for the hundreds of
    rows a probe batch or a dispatcher tick changes, compiling that cost more than the
    writes themselves (bench/README.md).
    """
    if not objects:
        return
    model = type(objects[0])
    connection = connections[router.db_for_write(model)]
    meta, quote = model._meta, connection.ops.quote_name
    columns = [cast(models.Field, meta.get_field(name)) for name in fields]
    assignments = ", ".join(f"{quote(str(column.column))} = %s" for column in columns)
    table, pk = quote(meta.db_table), quote(str(meta.pk.column))
    sql = f"UPDATE {table} SET {assignments} WHERE {pk} = %s"  # noqa: S608 - quoted names only
    rows = [
        [column.get_db_prep_save(getattr(obj, column.attname), connection) for column in columns]
        + [meta.pk.get_db_prep_value(obj.pk, connection)]
        for obj in objects
    ]
    with connection.cursor() as cursor:
        cursor.executemany(sql, rows)


class AddIndexConcurrently(AddIndexConcurrentlyOnPostgres):
    """Build an index without blocking writes on PostgreSQL (CREATE INDEX CONCURRENTLY, in
    a migration with `atomic = False`); a plain CREATE INDEX elsewhere (SQLite)."""

    def database_forwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        """Concurrently on PostgreSQL only."""
        if schema_editor.connection.vendor == "postgresql":
            super().database_forwards(app_label, schema_editor, from_state, to_state)
        else:
            AddIndex.database_forwards(self, app_label, schema_editor, from_state, to_state)

    def database_backwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        """Concurrently on PostgreSQL only."""
        if schema_editor.connection.vendor == "postgresql":
            super().database_backwards(app_label, schema_editor, from_state, to_state)
        else:
            AddIndex.database_backwards(self, app_label, schema_editor, from_state, to_state)


class RemoveIndexConcurrently(RemoveIndexConcurrentlyOnPostgres):
    """Drop an index without blocking writes on PostgreSQL (DROP INDEX CONCURRENTLY, in a
    migration with `atomic = False`); a plain DROP INDEX elsewhere (SQLite)."""

    def database_forwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        """Concurrently on PostgreSQL only."""
        if schema_editor.connection.vendor == "postgresql":
            super().database_forwards(app_label, schema_editor, from_state, to_state)
        else:
            RemoveIndex.database_forwards(self, app_label, schema_editor, from_state, to_state)

    def database_backwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        """Concurrently on PostgreSQL only."""
        if schema_editor.connection.vendor == "postgresql":
            super().database_backwards(app_label, schema_editor, from_state, to_state)
        else:
            RemoveIndex.database_backwards(self, app_label, schema_editor, from_state, to_state)
