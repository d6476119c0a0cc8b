"""Daily partitions of the raw checks on PostgreSQL: make them ahead, list them, drop old ones.

`monitoring_checkresult` is partitioned by RANGE (scheduled_for), one partition per UTC day
(`monitoring_checkresult_pYYYYMMDD`), plus a DEFAULT partition that takes a check of a day
with no partition yet, so none is ever refused. Retention drops whole days: a catalog change
instead of deleting and vacuuming millions of rows. Elsewhere (SQLite) the table is one.

Every change here takes the parent table's ACCESS EXCLUSIVE lock for milliseconds: PostgreSQL
needs it to add or drop a partition while inserts may be routed to the DEFAULT one. The lock
is asked for with a short `lock_timeout`, so a long read never queues inserts behind the
wait for long; a call that does not get it tries again a few times, then gives up (the
hourly task makes days ahead, and so tries each day many times before it is needed).
"""

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import partial

from django.db import connection, transaction

from healthmon.db import with_lock_timeout

TABLE = "monitoring_checkresult"
DEFAULT = f"{TABLE}_default"
# The partitioned table while an existing installation is converted (partitions_convert.py).
NEW = f"{TABLE}_partitioned"
LOCK_TIMEOUT = "2s"
ATTEMPTS = 5
DELETE_BATCH = 20_000
_DAY = re.compile(rf"^{TABLE}_p(\d{{8}})$")


@dataclass(frozen=True)
class Partition:
    """One partition of the raw checks: a UTC day's, or the DEFAULT one (`day` None)."""

    name: str
    day: date | None


@dataclass(frozen=True)
class Dropped:
    """What `partitions_drop` removed: whole days, and rows of the DEFAULT partition."""

    days: list[date]
    default_rows: int


def partition_name(day: date) -> str:
    """The name of a day's partition."""
    return f"{TABLE}_p{day:%Y%m%d}"


def day_start(day: date) -> datetime:
    """The first moment of a UTC day (a partition's lower bound, included)."""
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def partitioned(*, table: str = TABLE) -> bool:
    """Whether the table is a partitioned table (always False off PostgreSQL)."""
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT relkind = 'p' FROM pg_class WHERE oid = to_regclass(%s)", [table])
        row = cursor.fetchone()
    return bool(row and row[0])


def partitions_list(*, parent: str = TABLE) -> list[Partition]:
    """The partitions of the raw checks, oldest day first, the DEFAULT one last."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = to_regclass(%s)",
            [parent],
        )
        names = [row[0] for row in cursor.fetchall()]
    days = []
    for name in names:
        found = _DAY.match(name)
        if found:
            days.append(
                Partition(name, date(int(found[1][:4]), int(found[1][4:6]), int(found[1][6:])))
            )
    days.sort(key=lambda p: p.day or date.min)
    return days + [Partition(name, None) for name in names if name == DEFAULT]


def partitions_ensure(*, first: date, days: int, parent: str = TABLE) -> list[date]:
    """Make the partitions of `days` UTC days from `first` that are missing; returns the
    days made. Idempotent; two calls at once make each partition once."""
    made: list[date] = []
    if not partitioned(table=parent):
        return made
    for n in range(days):
        day = first + timedelta(days=n)
        # Most calls find every day made: looked up without the lock, which would queue
        # every insert and read of the checks behind it (checked again under the lock).
        if relation_exists(partition_name(day)):
            continue
        if _locked(parent, partial(_partition_make, parent, day)):
            made.append(day)
    return made


def partitions_ahead(*, today: date, ahead_days: int) -> list[date]:
    """Make today's partition and the next `ahead_days` days' (also in the table a
    conversion is filling, if one is under way); returns the days made."""
    made = partitions_ensure(first=today, days=ahead_days + 1)
    if relation_exists(NEW):
        partitions_ensure(first=today, days=ahead_days + 1, parent=NEW)
    return made


def partitions_drop(*, before: date, parent: str = TABLE) -> Dropped:
    """Drop the partitions of the days before `before`, and delete the DEFAULT partition's
    rows scheduled before it."""
    dropped: list[date] = []
    if not partitioned(table=parent):
        return Dropped(dropped, 0)
    for partition in partitions_list(parent=parent):
        day = partition.day
        if (
            day is not None
            and day < before
            and _locked(parent, partial(_partition_drop, parent, partition.name))
        ):
            dropped.append(day)
    return Dropped(dropped, _default_delete_before(parent, day_start(before)))


def _locked(parent: str, change: Callable[[], bool]) -> bool:
    """Run a change in a transaction holding the parent's lock, taken with a short timeout;
    try again a few times when the lock is not granted in time. The timeout stays for the
    whole change: a partition's foreign key also locks the endpoints table briefly, and no
    wait for it may hold the checks table locked."""

    def locked_change() -> bool:
        with connection.cursor() as cursor:
            cursor.execute(f"LOCK TABLE {parent} IN ACCESS EXCLUSIVE MODE")
        return change()

    return with_lock_timeout(
        locked_change,
        timeout=LOCK_TIMEOUT,
        attempts=ATTEMPTS,
        pause=lambda attempt: 0.2 * (attempt + 1),
    )


def relation_exists(name: str) -> bool:
    """Whether a table or index of that name exists."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
        return bool(cursor.fetchone()[0])


def _partition_make(parent: str, day: date) -> bool:
    """Under the parent's lock: make the day's partition unless it exists, moving the
    DEFAULT partition's rows of that day into it (PostgreSQL refuses to add a partition
    whose rows the DEFAULT one holds)."""
    name = partition_name(day)
    if relation_exists(name):
        return False
    low, high = day_start(day).isoformat(), day_start(day + timedelta(days=1)).isoformat()
    bounds = f"FOR VALUES FROM ('{low}') TO ('{high}')"  # from a date: no user text
    within = "scheduled_for >= %s AND scheduled_for < %s"
    with connection.cursor() as cursor:
        strays = False
        if relation_exists(DEFAULT):
            cursor.execute(f"SELECT EXISTS (SELECT 1 FROM {DEFAULT} WHERE {within})", [low, high])  # noqa: S608
            strays = cursor.fetchone()[0]
        if not strays:
            cursor.execute(f"CREATE TABLE {name} PARTITION OF {parent} {bounds}")
            return True
        columns = ", ".join(table_columns(parent))
        cursor.execute(f"CREATE TABLE {name} (LIKE {parent} INCLUDING DEFAULTS)")
        cursor.execute(
            f"WITH moved AS (DELETE FROM {DEFAULT} WHERE {within} RETURNING {columns}) "  # noqa: S608
            f"INSERT INTO {name} ({columns}) SELECT {columns} FROM moved",
            [low, high],
        )
        cursor.execute(f"ALTER TABLE {parent} ATTACH PARTITION {name} {bounds}")
    return True


def _partition_drop(parent: str, name: str) -> bool:
    """Under the parent's lock: drop a day's partition unless another call did."""
    if not relation_exists(name):
        return False
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE {name}")
    return True


def _default_delete_before(parent: str, cutoff: datetime) -> int:
    """Delete the DEFAULT partition's rows scheduled before the cutoff, in batches (it
    holds only the checks of days that had no partition: few)."""
    if not relation_exists(DEFAULT):
        return 0
    deleted = 0
    while True:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                f"DELETE FROM {DEFAULT} WHERE ctid = ANY(ARRAY("  # noqa: S608
                f"SELECT ctid FROM {DEFAULT} WHERE scheduled_for < %s LIMIT {DELETE_BATCH}))",
                [cutoff],
            )
            count = cursor.rowcount
        deleted += count
        if count < DELETE_BATCH:
            return deleted


def table_columns(table: str) -> list[str]:
    """The table's column names, in order."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass "
            "AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
            [table],
        )
        return [row[0] for row in cursor.fetchall()]
