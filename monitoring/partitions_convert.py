"""Turn an unpartitioned `monitoring_checkresult` into the partitioned one without a long lock.

Used by migration 0024 and, ahead of a deploy, by `manage.py partition_checks`. Steps, each
safe to interrupt and run again:

1. prepare: make `monitoring_checkresult_partitioned` with the same columns, the primary key
   (id, scheduled_for), the old table's unique constraints, foreign key and indexes (under
   temporary names), a partition for every day the old table holds, today and the days
   ahead, and the DEFAULT partition; then statement triggers on the old table that mirror
   every insert, update, delete and truncate into the new one.
2. copy: the old rows in id order, a batch per short transaction, resumable (the last id
   copied is kept in `monitoring_checkresult_copy_progress`).
3. swap: one transaction that takes the old table's lock with a `lock_timeout` (tried again a
   few times), copies what arrived after the last batch, drops the triggers and swaps the
   names (tables, constraints, indexes). Inserts wait for milliseconds, not for the copy.
4. clean up: drop the old table (renamed `monitoring_checkresult_unpartitioned`), the
   progress table and the trigger functions.

Why the triggers: the copy runs for minutes or hours while checks are stored, retention
deletes and endpoints are deleted (their checks with them). Copying only "ids above the last
one" would miss rows of transactions that committed late and bring back deleted rows. A
delete or update on the old table takes an advisory lock that each copy batch holds shared,
so it waits for a batch in flight and then finds the rows that batch copied.
"""

import re
import time
from collections.abc import Callable
from datetime import timedelta

from django.db import OperationalError, connection, transaction
from django.utils import timezone

from healthmon.db import lock_not_granted, with_lock_timeout
from monitoring.partitions import (
    DEFAULT,
    NEW,
    TABLE,
    partitioned,
    partitions_ensure,
    relation_exists,
    table_columns,
)

OLD = f"{TABLE}_unpartitioned"
PROGRESS = f"{TABLE}_copy_progress"
MIRROR = f"{TABLE}_mirror"
LOCK_KEY = "hashtext('monitoring_checkresult_copy')"
COPY_BATCH = 20_000
SWAP_LOCK_TIMEOUT = "5s"
SWAP_ATTEMPTS = 5
_NIL = "00000000-0000-0000-0000-000000000000"
_INDEX = re.compile(r"^CREATE (UNIQUE )?INDEX \S+ ON (?:ONLY )?\S+ (.*)$", re.DOTALL)


def partitions_convert(
    *, ahead_days: int, batch: int = COPY_BATCH, say: Callable[[str], None] = print
) -> bool:
    """Partition the raw checks table unless it is already; returns whether it converted."""
    if connection.vendor != "postgresql":
        return False
    converted = False
    if not partitioned(table=TABLE):
        partitions_prepare(ahead_days=ahead_days)
        copied = partitions_copy(batch=batch)
        say(f"copied {copied:,} checks into the partitioned table")
        locked = partitions_swap()
        say(f"swapped in: the checks table was locked for {locked * 1000:.0f} ms")
        converted = True
    partitions_cleanup()
    return converted


def partitions_prepare(*, ahead_days: int) -> None:
    """Make the partitioned table beside the old one, its partitions and the mirror."""
    if not relation_exists(NEW):
        with transaction.atomic():
            _new_table_create()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT DISTINCT (scheduled_for AT TIME ZONE 'UTC')::date FROM {TABLE}"  # noqa: S608
        )
        days = {row[0] for row in cursor.fetchall()}
    today = timezone.now().date()
    days |= {today + timedelta(days=n) for n in range(ahead_days + 1)}
    for day in sorted(days):
        partitions_ensure(first=day, days=1, parent=NEW)
    _mirror_create()


def partitions_copy(*, batch: int = COPY_BATCH) -> int:
    """Copy the old table's rows not copied yet, a batch per transaction; returns how many."""
    columns = ", ".join(table_columns(TABLE))
    copied = 0
    while True:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"SELECT pg_advisory_xact_lock_shared({LOCK_KEY})")
            cursor.execute(f"SELECT last_id FROM {PROGRESS}")  # noqa: S608
            after = cursor.fetchone()[0]
            cursor.execute(
                f"WITH batch AS (SELECT {columns} FROM {TABLE} WHERE id > %s "  # noqa: S608
                f"ORDER BY id LIMIT {int(batch)}), "
                f"stored AS (INSERT INTO {NEW} ({columns}) SELECT {columns} FROM batch "
                f"ON CONFLICT DO NOTHING) "
                f"SELECT count(*), (SELECT id FROM batch ORDER BY id DESC LIMIT 1) FROM batch",
                [after],
            )
            count, last = cursor.fetchone()
            if count:
                cursor.execute(f"UPDATE {PROGRESS} SET last_id = %s", [last])  # noqa: S608
        copied += count
        if count < batch:
            return copied


def partitions_swap() -> float:
    """Swap the partitioned table in, in one short transaction under a lock timeout;
    returns the seconds it held the lock (from asking for it to the commit)."""
    began = time.perf_counter()

    def swap() -> None:
        nonlocal began
        began = time.perf_counter()  # this attempt's
        _swap()

    with_lock_timeout(swap, timeout=SWAP_LOCK_TIMEOUT, attempts=SWAP_ATTEMPTS, pause=_pause)
    return time.perf_counter() - began


def partitions_cleanup() -> None:
    """Drop what the conversion left: the old table, the progress table, the functions."""
    if relation_exists(OLD):

        def drop() -> None:
            # Dropping its foreign key briefly locks the endpoints table: never wait long.
            with connection.cursor() as cursor:
                cursor.execute(f"DROP TABLE {OLD}")

        try:
            with_lock_timeout(drop, timeout=SWAP_LOCK_TIMEOUT, attempts=SWAP_ATTEMPTS, pause=_pause)
        except OperationalError as exc:
            if not lock_not_granted(exc):
                raise
            return  # kept for the next run (`manage.py partition_checks`)
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {PROGRESS}")
        for kind in ("insert", "update", "delete", "truncate"):
            cursor.execute(f"DROP FUNCTION IF EXISTS {MIRROR}_{kind}() CASCADE")


def _pause(attempt: int) -> float:
    return 1.0 + attempt


# --- The steps' SQL -------------------------------------------------------------------------


def _temporary(name: str) -> str:
    """The name a constraint or index of the new table has until the swap."""
    return f"{name[:57]}_part"


def _retired(name: str) -> str:
    """The name a constraint or index of the old table takes at the swap."""
    return f"{name[:58]}_old"


def _constraints(table: str) -> list[tuple[str, str, str]]:
    """The table's primary key, unique and foreign key constraints: (name, kind, definition)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT conname, contype, pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE conrelid = %s::regclass AND contype IN ('p', 'u', 'f') ORDER BY conname",
            [table],
        )
        return list(cursor.fetchall())


def _plain_indexes(table: str) -> list[tuple[str, str]]:
    """The table's indexes that back no constraint: (name, definition)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, pg_get_indexdef(i.indexrelid) FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = %s::regclass "
            "AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid) "
            "ORDER BY 1",
            [table],
        )
        return list(cursor.fetchall())


def _new_table_create() -> None:
    """The partitioned table with the old one's columns, keys and indexes, and DEFAULT."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TABLE {NEW} (LIKE {TABLE} INCLUDING DEFAULTS INCLUDING CONSTRAINTS) "
            "PARTITION BY RANGE (scheduled_for)"
        )
        for name, kind, definition in _constraints(TABLE):
            if kind == "p":
                # A partitioned table's unique keys hold the partition key.
                definition = "PRIMARY KEY (id, scheduled_for)"
            cursor.execute(f"ALTER TABLE {NEW} ADD CONSTRAINT {_temporary(name)} {definition}")
        for name, definition in _plain_indexes(TABLE):
            unique, rest = _INDEX.match(definition).groups()  # type: ignore[union-attr]
            cursor.execute(f"CREATE {unique or ''}INDEX {_temporary(name)} ON {NEW} {rest}")
        cursor.execute(f"CREATE TABLE IF NOT EXISTS {DEFAULT} PARTITION OF {NEW} DEFAULT")


def _mirror_create() -> None:
    """Statement triggers on the old table that repeat every change in the new one; and the
    progress table, made in the same transaction so that no copy starts before them."""
    columns = ", ".join(table_columns(TABLE))
    add = (
        f"INSERT INTO {NEW} ({columns}) SELECT {columns} FROM added "  # noqa: S608
        "ON CONFLICT DO NOTHING;"
    )
    remove = (
        f"PERFORM pg_advisory_xact_lock({LOCK_KEY}); DELETE FROM {NEW} n USING gone g "  # noqa: S608
        "WHERE n.id = g.id AND n.scheduled_for = g.scheduled_for;"
    )
    bodies = {
        "insert": (add, "REFERENCING NEW TABLE AS added"),
        "update": (remove + add, "REFERENCING OLD TABLE AS gone NEW TABLE AS added"),
        "delete": (remove, "REFERENCING OLD TABLE AS gone"),
        "truncate": (f"TRUNCATE {NEW};", ""),
    }
    with transaction.atomic(), connection.cursor() as cursor:
        for kind, (body, _) in bodies.items():
            cursor.execute(
                f"CREATE OR REPLACE FUNCTION {MIRROR}_{kind}() RETURNS trigger "
                f"LANGUAGE plpgsql AS $$ BEGIN {body} RETURN NULL; END $$"
            )
        cursor.execute(f"SET LOCAL lock_timeout = '{SWAP_LOCK_TIMEOUT}'")
        for kind, (_, referencing) in bodies.items():
            cursor.execute(
                f"CREATE OR REPLACE TRIGGER {MIRROR}_{kind} AFTER {kind.upper()} ON {TABLE} "
                f"{referencing} FOR EACH STATEMENT EXECUTE FUNCTION {MIRROR}_{kind}()"
            )
        cursor.execute(f"CREATE TABLE IF NOT EXISTS {PROGRESS} (last_id uuid NOT NULL)")
        cursor.execute(f"SELECT count(*) FROM {PROGRESS}")  # noqa: S608
        if not cursor.fetchone()[0]:
            cursor.execute(f"INSERT INTO {PROGRESS} VALUES (%s)", [_NIL])  # noqa: S608


def _swap() -> None:
    """In the caller's transaction: lock, copy the rest, swap the names."""
    columns = ", ".join(table_columns(TABLE))
    with connection.cursor() as cursor:  # the transaction's lock_timeout is set
        cursor.execute(f"LOCK TABLE {TABLE}, {NEW} IN ACCESS EXCLUSIVE MODE")
        # The triggers mirrored everything since the copy began; rows above the last batch
        # are copied again for certainty (an index range over the newest ids: few).
        cursor.execute(
            f"INSERT INTO {NEW} ({columns}) SELECT {columns} FROM {TABLE} "  # noqa: S608
            f"WHERE id > (SELECT last_id FROM {PROGRESS}) ON CONFLICT DO NOTHING"
        )
        for kind in ("insert", "update", "delete", "truncate"):
            cursor.execute(f"DROP TRIGGER IF EXISTS {MIRROR}_{kind} ON {TABLE}")
        constraints = [name for name, _, _ in _constraints(TABLE)]
        indexes = [name for name, _ in _plain_indexes(TABLE)]
        for name in constraints:
            cursor.execute(f"ALTER TABLE {TABLE} RENAME CONSTRAINT {name} TO {_retired(name)}")
            cursor.execute(f"ALTER TABLE {NEW} RENAME CONSTRAINT {_temporary(name)} TO {name}")
        for name in indexes:
            cursor.execute(f"ALTER INDEX {name} RENAME TO {_retired(name)}")
            cursor.execute(f"ALTER INDEX {_temporary(name)} RENAME TO {name}")
        cursor.execute(f"ALTER TABLE {TABLE} RENAME TO {OLD}")
        cursor.execute(f"ALTER TABLE {NEW} RENAME TO {TABLE}")
