"""Rollup writes: adding ingested checks, rebuilding from raw checks, and retention."""

import functools
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol
from uuid import UUID

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from analytics import fold, histogram
from analytics.latency import Latency
from analytics.models import TIERS, DayRollup, FiveMinuteRollup, HourRollup, Rollup, RollupFold
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
    """Add newly stored checks to the five-minute rollups, and those checked before the
    fold's watermark (late ones; all of them before the first fold) to the hourly and daily
    rollups too (`analytics.fold`), in a few batched upserts.

    Run inside the transaction that stores the checks, which holds their endpoints' row
    locks: rows of one endpoint are never upserted by two transactions at once.
    """
    if not checks:
        return
    fold.batch_lock()
    if connection.vendor == "postgresql":
        _add_on_postgresql(checks)
        return
    facts = [(c.endpoint_id, c.checked_at, c.ok, c.response_time_ms) for c in checks]
    _write(TIERS[0], _sums_by_bucket(TIERS[0], facts), replace=False)
    watermark = fold.folded_to()
    late = [f for f in facts if watermark is None or f[1] < watermark]
    for tier in TIERS[1:]:
        _write(tier, _sums_by_bucket(tier, late), replace=False)


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
    # The watermark in seconds, read in this statement's snapshot, taken after the batch's
    # share of the fold's lock (`rollups_add`); the largest int8 when no fold has run.
    watermark = (
        "SELECT COALESCE((SELECT EXTRACT(EPOCH FROM folded_to)::int8 FROM "  # noqa: S608
        f"{connection.ops.quote_name(RollupFold._meta.db_table)}), 9223372036854775807)"
    )
    late = "(SELECT * FROM facts WHERE stamp < (SELECT s FROM w)) AS late"
    parts = [_tier_upsert(TIERS[0], "facts")] + [_tier_upsert(tier, late) for tier in TIERS[1:]]
    ctes = ", ".join(f"t{n} AS ({sql} RETURNING 1)" for n, sql in enumerate(parts[:-1]))
    return f"WITH facts AS ({facts}), w(s) AS ({watermark}), {ctes} {parts[-1]}"


def _merge_updates() -> str:
    """ON CONFLICT's SET that adds a row's sums to the stored row (as `r`)."""
    additive = ("count", "failures", "timed", "sum_ms", *histogram.FIELDS)
    updates = [f"{name} = r.{name} + EXCLUDED.{name}" for name in additive]
    updates += [
        f"{name} = COALESCE({pick}(r.{name}, EXCLUDED.{name}), r.{name}, EXCLUDED.{name})"
        for name, pick in (("min_ms", "LEAST"), ("max_ms", "GREATEST"))
    ]
    return ", ".join(updates)


def _tier_upsert(tier: type[Rollup], source: str) -> str:
    """INSERT ... SELECT of one tier's sums of the facts in `source`, merged into its rows."""
    table = connection.ops.quote_name(tier._meta.db_table)
    width = int(tier.width.total_seconds())
    hist = ", ".join(f"count(*) FILTER (WHERE h = {n})" for n in range(histogram.SIZE))
    sums = (
        f"endpoint_id, to_timestamp(stamp - stamp %% {width}), count(*), "
        "count(*) FILTER (WHERE NOT ok), count(ms), COALESCE(sum(ms), 0), min(ms), max(ms), " + hist
    )
    columns = ", ".join((*_COLUMNS, *histogram.FIELDS))
    return (
        f"INSERT INTO {table} AS r ({columns}) SELECT {sums} FROM {source} "  # noqa: S608
        f"GROUP BY 1, 2 ORDER BY 1, 2 "
        f"ON CONFLICT (endpoint_id, bucket) DO UPDATE SET {_merge_updates()}"
    )


# The fold's lag behind now: a bucket is folded a minute after it ends, when the batches
# of its last slots are stored (later ones go to every tier themselves).
FOLD_LAG = timedelta(minutes=1)
# The most one fold run folds: after a stop, the fold catches up an hour a minute, and no
# run holds ingest waiting for long.
FOLD_STEP = timedelta(hours=1)


@transaction.atomic
def rollups_fold(*, now: datetime | None = None) -> int:
    """Add the five-minute rows from the watermark to a minute ago into the hourly and
    daily rows, and move the watermark there (`analytics.fold`). Returns the five-minute
    rows folded. The first run only sets the watermark, two buckets ahead."""
    now = now or timezone.now()
    width = FiveMinuteRollup.width
    fold.fold_lock()
    watermark = fold.folded_to()
    if watermark is None:
        RollupFold.objects.create(folded_to=floor(now, width) + 2 * width)
        return 0
    target = min(floor(now - FOLD_LAG, width), watermark + FOLD_STEP)
    if target <= watermark:
        return 0
    if connection.vendor == "postgresql":
        with bound_cursor() as cursor:
            cursor.execute(_fold_sql(), [watermark, target])
            folded = cursor.fetchone()[0]
    else:
        folded = _fold_elsewhere(watermark, target)
    RollupFold.objects.filter(pk=1).update(folded_to=target)
    return folded


@functools.cache
def _fold_sql() -> str:
    """The fold's statement on PostgreSQL: each endpoint's five-minute rows in [%b, %b)
    (one index range scan per endpoint: the tier has no index by bucket alone), summed
    into each coarser tier's buckets and merged into its rows; answers the rows read."""
    quote = connection.ops.quote_name
    names = ("count", "failures", "timed", "sum_ms", "min_ms", "max_ms", *histogram.FIELDS)
    source = (
        f"SELECT r.endpoint_id, EXTRACT(EPOCH FROM r.bucket)::int8 AS stamp, "  # noqa: S608
        f"{', '.join(f'r.{name}' for name in names)} "
        f"FROM {quote(Endpoint._meta.db_table)} e CROSS JOIN LATERAL (SELECT * FROM "
        f"{quote(FiveMinuteRollup._meta.db_table)} f WHERE f.endpoint_id = e.id "
        "AND f.bucket >= %b AND f.bucket < %b) r"
    )
    sums = ", ".join(
        [f"SUM({name})" for name in ("count", "failures", "timed", "sum_ms")]
        + ["MIN(min_ms)", "MAX(max_ms)"]
        + [f"SUM({name})" for name in histogram.FIELDS]
    )
    columns = ", ".join((*_COLUMNS, *histogram.FIELDS))
    upserts = []
    for tier in TIERS[1:]:
        width = int(tier.width.total_seconds())
        upserts.append(
            f"INSERT INTO {quote(tier._meta.db_table)} AS r ({columns}) "  # noqa: S608
            f"SELECT endpoint_id, to_timestamp(stamp - stamp %% {width}), {sums} FROM src "
            f"GROUP BY 1, 2 ORDER BY 1, 2 "
            f"ON CONFLICT (endpoint_id, bucket) DO UPDATE SET {_merge_updates()} RETURNING 1"
        )
    ctes = ", ".join(f"t{n} AS ({sql})" for n, sql in enumerate(upserts))
    return f"WITH src AS MATERIALIZED ({source}), {ctes} SELECT count(*) FROM src"  # noqa: S608


def _fold_elsewhere(start: datetime, end: datetime) -> int:
    """The fold through the ORM (SQLite): the rows read, summed per coarser bucket."""
    names = ("count", "failures", "timed", "sum_ms", "min_ms", "max_ms", *histogram.FIELDS)
    rows = list(
        FiveMinuteRollup.objects.filter(bucket__gte=start, bucket__lt=end).values(
            "endpoint_id", "bucket", *names
        )
    )
    for tier in TIERS[1:]:
        sums: dict[tuple[UUID, datetime], Latency] = {}
        for row in rows:
            key = (row["endpoint_id"], floor(row["bucket"], tier.width))
            sums.setdefault(key, Latency()).merge(row)
        _write(tier, sums, replace=False)
    return len(rows)


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
    # The fold's invariant holds after: coarser rows hold only checks before the watermark.
    fold.batch_lock()
    watermark = fold.folded_to()
    for tier in TIERS:
        tier.objects.filter(endpoint_id__in=endpoint_ids).between(start, end).delete()
        counted = checks
        if tier is not TIERS[0] and watermark is not None:
            counted = [check for check in checks if check[1] < watermark]
        _write(tier, _sums_by_bucket(tier, counted), replace=True)
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
        # Never five-minute rows the fold has not added to the coarser tiers yet.
        "rollups_5m": _delete_rollups_before(
            FiveMinuteRollup,
            min(now - settings.ROLLUP_5M_RETENTION_DAYS * days, fold.folded_to() or now),
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
