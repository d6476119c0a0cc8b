"""Rollup writes: adding ingested checks, rebuilding from raw checks, and retention."""

import functools
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol
from uuid import UUID

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from analytics import histogram
from analytics.latency import Latency
from analytics.models import TIERS, DayRollup, FiveMinuteRollup, HourRollup, Rollup
from analytics.windows import ceil, floor
from healthmon.db import bound_cursor
from monitoring.locations import LocationResult, judge, quorum_of
from monitoring.models import CheckResult, Endpoint, time_ordered_uuid_floor
from monitoring.partitions import day_start, partitioned, partitions_drop


def _sums_by_bucket(
    tier: type[Rollup], checks: Iterable[tuple[UUID, datetime, bool, float | None]]
) -> dict[tuple[UUID, datetime], Latency]:
    rows: dict[tuple[UUID, datetime], Latency] = {}
    for endpoint_id, checked_at, ok, ms in checks:
        key = (endpoint_id, floor(checked_at, tier.width))
        rows.setdefault(key, Latency()).add(ok, ms)
    return rows


_COLUMNS = ("endpoint_id", "bucket", "count", "failures", "timed", "sum_ms", "min_ms", "max_ms")


# PostgreSQL types of the columns, for the one-statement form that takes a column of
# values per parameter (unnest).
_ARRAY_TYPES = ("uuid", "timestamptz", "int", "int", "int", "float8", "float8", "float8") + (
    "int",
) * histogram.SIZE


def _upsert_sql(tier: type[Rollup], *, replace: bool, arrays: bool = False) -> str:
    """INSERT … ON CONFLICT that adds rows to the stored ones (or, to rebuild, replaces
    them): one row of parameters, or with `arrays` (PostgreSQL) one array per column."""
    table = connection.ops.quote_name(tier._meta.db_table)
    columns = (*_COLUMNS, *histogram.FIELDS)
    values = "VALUES (" + ", ".join(["%s"] * len(columns)) + ")"
    if arrays:
        casts = ", ".join(f"%s::{kind}[]" for kind in _ARRAY_TYPES)
        values = f"SELECT * FROM unnest({casts})"  # noqa: S608 - fixed type names only
    least = "LEAST" if connection.vendor == "postgresql" else "MIN"
    greatest = "GREATEST" if connection.vendor == "postgresql" else "MAX"
    if replace:
        updates = [f"{name} = EXCLUDED.{name}" for name in columns[2:]]
    else:
        additive = ("count", "failures", "timed", "sum_ms", *histogram.FIELDS)
        updates = [f"{name} = {table}.{name} + EXCLUDED.{name}" for name in additive]
        for name, pick in (("min_ms", least), ("max_ms", greatest)):
            # NULL (no success yet) on either side leaves the other.
            updates.append(
                f"{name} = COALESCE({pick}({table}.{name}, EXCLUDED.{name}), "
                f"{table}.{name}, EXCLUDED.{name})"
            )
    # Only names from the model and the histogram are interpolated; values are parameters.
    return (
        f"INSERT INTO {table} ({', '.join(columns)}) {values} "
        f"ON CONFLICT (endpoint_id, bucket) DO UPDATE SET {', '.join(updates)}"
    )


def _write(
    tier: type[Rollup], rows: dict[tuple[UUID, datetime], Latency], *, replace: bool
) -> None:
    pk = tier._meta.get_field("endpoint").target_field
    bucket_field = tier._meta.get_field("bucket")
    ordered = sorted(rows.items(), key=lambda item: (str(item[0][0]), item[0][1]))
    params = [
        [
            pk.get_db_prep_value(endpoint_id, connection),
            bucket_field.get_db_prep_value(bucket, connection),
            sums.count,
            sums.failures,
            sums.timed,
            sums.sum_ms,
            sums.min_ms,
            sums.max_ms,
            *sums.hist,
        ]
        for (endpoint_id, bucket), sums in ordered
    ]
    if not params:
        return
    # PostgreSQL: one statement whatever the row count, its parameters a column each. A
    # multi-row VALUES of thousands of placeholders cost more to convert client-side than
    # the upserts, and one statement per row 2.5x more server time (bench/README.md).
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                _upsert_sql(tier, replace=replace, arrays=True),
                [list(c) for c in zip(*params, strict=True)],
            )
        else:
            cursor.executemany(_upsert_sql(tier, replace=replace), params)


class CountedCheck(Protocol):
    """What the rollups count of a check: a stored `CheckResult`, or the verdict of a
    multi-location round (`monitoring.checks.CheckOutcome`), which counts as one check."""

    @property
    def endpoint_id(self) -> UUID: ...
    @property
    def checked_at(self) -> datetime: ...
    @property
    def ok(self) -> bool: ...
    @property
    def response_time_ms(self) -> float | None: ...


def rollups_add(*, checks: Sequence[CountedCheck]) -> None:
    """Add newly stored checks to the rollups of every tier, in a few batched upserts.

    Run inside the transaction that stores the checks, which holds their endpoints' row
    locks: rows of one endpoint are never upserted by two transactions at once.
    """
    if not checks:
        return
    if connection.vendor == "postgresql":
        _add_on_postgresql(checks)
        return
    facts = [(c.endpoint_id, c.checked_at, c.ok, c.response_time_ms) for c in checks]
    for tier in TIERS:
        _write(tier, _sums_by_bucket(tier, facts), replace=False)


def _add_on_postgresql(checks: Sequence[CountedCheck]) -> None:
    """One statement: the checks go as five arrays, each tier sums them by bucket and
    merges the sums into its rows (one `INSERT ... ON CONFLICT` per tier, histograms
    added bucket by bucket, never recomputed from raw checks).

    Python only finds each check's second and histogram bucket; summing 200 checks into
    three tiers of `Latency` rows in Python, then sending 45 arrays a tier, cost more.
    """
    endpoint_ids, stamps, oks, times, buckets = [], [], [], [], []
    for c in checks:
        ms = c.response_time_ms if c.ok else None  # a failure's time is no response time
        ms = None if ms is None else float(ms)  # one array type, an int given or not
        endpoint_ids.append(c.endpoint_id)
        stamps.append(int(c.checked_at.timestamp() // 1))  # as `windows.floor` counts
        oks.append(c.ok)
        times.append(ms)
        buckets.append(None if ms is None else histogram.bucket_of(ms))
    with bound_cursor() as cursor:
        cursor.execute(_add_sql(), [endpoint_ids, stamps, oks, times, buckets])


@functools.cache
def _add_sql() -> str:
    """The statement of `_add_on_postgresql` (names from the models only)."""
    facts = (
        "SELECT * FROM unnest(%b::uuid[], %b::int8[], %b::bool[], %b::float8[], %b::int4[])"
        " AS f(endpoint_id, stamp, ok, ms, h)"
    )
    parts = [_tier_upsert(tier) for tier in TIERS]
    ctes = ", ".join(f"t{n} AS ({sql} RETURNING 1)" for n, sql in enumerate(parts[:-1]))
    return f"WITH facts AS ({facts}), {ctes} {parts[-1]}"


def _tier_upsert(tier: type[Rollup]) -> str:
    """INSERT ... SELECT of one tier's sums of the facts, merged into its rows."""
    table = connection.ops.quote_name(tier._meta.db_table)
    width = int(tier.width.total_seconds())
    hist = ", ".join(f"count(*) FILTER (WHERE h = {n})" for n in range(histogram.SIZE))
    sums = (
        f"endpoint_id, to_timestamp(stamp - stamp %% {width}), count(*), "
        "count(*) FILTER (WHERE NOT ok), count(ms), COALESCE(sum(ms), 0), min(ms), max(ms), " + hist
    )
    additive = ("count", "failures", "timed", "sum_ms", *histogram.FIELDS)
    updates = [f"{name} = r.{name} + EXCLUDED.{name}" for name in additive]
    updates += [
        f"{name} = COALESCE({pick}(r.{name}, EXCLUDED.{name}), r.{name}, EXCLUDED.{name})"
        for name, pick in (("min_ms", "LEAST"), ("max_ms", "GREATEST"))
    ]
    columns = ", ".join((*_COLUMNS, *histogram.FIELDS))
    return (
        f"INSERT INTO {table} AS r ({columns}) SELECT {sums} FROM facts "  # noqa: S608
        f"GROUP BY 1, 2 ORDER BY 1, 2 "
        f"ON CONFLICT (endpoint_id, bucket) DO UPDATE SET {', '.join(updates)}"
    )


@transaction.atomic
def rollups_rebuild(*, endpoint_ids: Sequence[UUID], start: datetime, end: datetime) -> int:
    """Recompute every tier's rows for the endpoints from their raw checks.

    [start, end) is widened to whole days so that each row rebuilt is complete, then
    narrowed to the days raw checks still cover in full (after the first day retention
    keeps): rows older are all that is left of their checks and are never touched. Returns the
    checks read.
    """
    # The locks ingest takes, in its order: no check lands between the read and the write.
    list(
        Endpoint.objects.select_for_update()
        .filter(pk__in=endpoint_ids)
        .order_by("pk")
        .values_list("pk")
    )
    kept_since = timezone.now() - timedelta(days=settings.RAW_RETENTION_DAYS)
    # Retention removes every check of the days before kept_since's (by `scheduled_for`),
    # some of them checked a moment after midnight: the first day kept is never rebuilt.
    first_whole = floor(kept_since, DayRollup.width) + DayRollup.width
    start = max(floor(start, DayRollup.width), first_whole)
    end = ceil(end, DayRollup.width)
    if start >= end:
        return 0
    checks = _rounds(
        CheckResult.objects.filter(
            endpoint_id__in=endpoint_ids, checked_at__gte=start, checked_at__lt=end
        ).values_list(
            "endpoint_id", "checked_at", "ok", "response_time_ms", "scheduled_for", "location"
        )
    )
    for tier in TIERS:
        tier.objects.filter(endpoint_id__in=endpoint_ids).between(start, end).delete()
        _write(tier, _sums_by_bucket(tier, checks), replace=True)
    return len(checks)


def _rounds(
    rows: Iterable[tuple[UUID, datetime, bool, float | None, datetime, str]],
) -> list[tuple[UUID, datetime, bool, float | None]]:
    """Raw checks as the rollups count them: one per round. A round answered by several
    locations is judged again against its endpoint's quorum, as ingest judged it (one
    verdict at the round's latest check, the mean of the successful times)."""
    found: dict[tuple[UUID, datetime], list[tuple[datetime, LocationResult]]] = {}
    for endpoint_id, checked_at, ok, ms, slot, location in rows:
        answer = LocationResult(location, ok, ms, "")
        found.setdefault((endpoint_id, slot), []).append((checked_at, answer))
    several = {endpoint_id for (endpoint_id, _), answers in found.items() if len(answers) > 1}
    quorums = {
        pk: quorum_of(config)
        for pk, config in Endpoint.objects.filter(pk__in=several).values_list("pk", "config_masked")
    }
    counted = []
    for (endpoint_id, _), answers in found.items():
        if len(answers) == 1:
            checked_at, answer = answers[0]
            counted.append((endpoint_id, checked_at, answer.ok, answer.response_time_ms))
            continue
        verdict = judge([answer for _, answer in answers], quorums.get(endpoint_id, "majority"))
        latest = max(checked_at for checked_at, _ in answers)
        counted.append((endpoint_id, latest, verdict.ok, verdict.response_time_ms))
    return counted


RETENTION_BATCH = 20_000
RETENTION_ENDPOINTS = 500


def _delete_before(model: Any, column: str, cutoff: Any) -> int:
    """Delete rows older than the cutoff in batches, so no one statement holds locks
    on millions of rows or grows the WAL by gigabytes at once. Each batch is one
    DELETE … WHERE pk IN (SELECT … LIMIT n): no ids travel through Python."""
    deleted = 0
    while True:
        oldest = model.objects.filter(**{f"{column}__lt": cutoff}).order_by(column)
        batch = model.objects.filter(pk__in=oldest.values("pk")[:RETENTION_BATCH])
        count = batch.delete()[0]  # a fast delete: one statement, nothing loaded
        deleted += count
        if count < RETENTION_BATCH:
            return deleted


def _delete_rollups_before(tier: type[Rollup], cutoff: datetime) -> int:
    """Delete a tier's rows older than the cutoff, for a batch of endpoints at a time: the
    unique (endpoint, bucket) index, the tier's only one, starts each endpoint's rows with
    its oldest. Each statement deletes at most `RETENTION_BATCH` rows."""
    deleted = 0
    endpoints = Endpoint.objects.order_by("pk").values_list("pk", flat=True)
    after: UUID | None = None
    while True:
        batch = list((endpoints.filter(pk__gt=after) if after else endpoints)[:RETENTION_ENDPOINTS])
        if not batch:
            return deleted
        after = batch[-1]
        while True:
            old = tier.objects.filter(endpoint_id__in=batch, bucket__lt=cutoff)
            count = tier.objects.filter(pk__in=old.values("pk")[:RETENTION_BATCH]).delete()[0]
            deleted += count
            if count < RETENTION_BATCH:
                break


def retention_run(*, now: datetime | None = None) -> dict[str, int]:
    """Delete raw checks and rollups past their retention; daily rollups stay forever.

    Raw checks go by whole UTC days: every check of a day that ended at or before
    `now - RAW_RETENTION_DAYS` (the partition's day, its `scheduled_for`). On a partitioned
    PostgreSQL table its day partitions are dropped (`check_days`) and the DEFAULT
    partition's rows of those days deleted; elsewhere the rows stored before that day's end
    are deleted in batches (`checks` counts rows deleted one by one).
    """
    now = now or timezone.now()
    days = timedelta(days=1)
    # Rollups first: dropping a partition needs the checks table's lock for a moment, and
    # when a long read holds it past the retries this run fails there, the next one retries.
    rollups = {
        "rollups_5m": _delete_rollups_before(
            FiveMinuteRollup, now - settings.ROLLUP_5M_RETENTION_DAYS * days
        ),
        "rollups_1h": _delete_rollups_before(
            HourRollup, now - settings.ROLLUP_1H_RETENTION_DAYS * days
        ),
    }
    first_kept = (now - settings.RAW_RETENTION_DAYS * days).astimezone(UTC).date()
    if partitioned():
        dropped = partitions_drop(before=first_kept)
        check_days, checks = len(dropped.days), dropped.default_rows
    else:
        # Check ids are UUIDv7, made as the check is stored: the primary key orders
        # them by time, so no index on the time column is needed to find old ones.
        cutoff = time_ordered_uuid_floor(day_start(first_kept))
        check_days, checks = 0, _delete_before(CheckResult, "id", cutoff)
    return {"checks": checks, "check_days": check_days, **rollups}
