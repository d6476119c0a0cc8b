"""Migration analytics.0004 swaps each rollup tier's unique index for a covering one: the
swap asks for the table's lock with a short timeout and tries again, so a long read never
queues the tier's writers behind a waiting ALTER; refused, it leaves the old index working
(PostgreSQL, issue 26)."""

import importlib
import time

import pytest
from django.db import OperationalError, connection, connections

from healthmon.db import lock_not_granted

pytestmark = pytest.mark.postgres("covering indexes and lock timeouts are PostgreSQL's")

TABLE = "analytics_rollup_1h"
migration = importlib.import_module("analytics.migrations.0004_rollup_covering_unique")


def unique_index() -> str:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN pg_constraint c"
            " ON c.conindid = i.indexrelid WHERE c.conname = %s",
            [f"{TABLE}_unique"],
        )
        return cursor.fetchone()[0]


def swap(include: str) -> None:
    with connection.schema_editor(atomic=False) as editor:
        migration._swap_unique(editor, TABLE, include)


@pytest.mark.django_db(transaction=True)
def test_a_held_lock_makes_the_swap_give_up_soon_and_keeps_the_index(monkeypatch):
    monkeypatch.setattr(migration, "SWAP_LOCK_TIMEOUT", "100ms")
    monkeypatch.setattr(migration, "SWAP_ATTEMPTS", 2)
    before = unique_index()
    assert "INCLUDE (count, failures, timed, sum_ms, min_ms, max_ms)" in before
    reader = connections.create_connection("default")  # a long read on the tier
    try:
        with reader.cursor() as cursor:
            cursor.execute("BEGIN")
            cursor.execute(f"LOCK TABLE {TABLE} IN ACCESS SHARE MODE")
            began = time.monotonic()
            with pytest.raises(OperationalError) as refused:
                swap("")
            assert lock_not_granted(refused.value)
            assert time.monotonic() - began < 5  # two tries of 100 ms and a pause
            cursor.execute("ROLLBACK")
    finally:
        reader.close()

    assert unique_index() == before  # the refused swap changed nothing

    swap("")  # the lock free: the plain index swapped in, then the covering one again
    assert "INCLUDE" not in unique_index()
    swap(f" INCLUDE ({migration.COVERED})")
    assert unique_index() == before
