"""Series from the rollups: per owner, the figures of each bucket of one tier over a window
(`series`), and the points a chart draws of them (`series_points`)."""

import functools
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from django.db import connection
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import BigIntegerField, Exists, F, Func, Max, Min, Subquery, Sum

from analytics import fold, histogram
from analytics.latency import Latency
from analytics.models import TIERS, Rollup, RollupFold
from analytics.rows import SeriesPoint
from analytics.windows import BUCKETS, buckets, ceil, floor
from healthmon.db import read_cursor
from healthmon.dbrouting import read_connection
from healthmon.intervals import Window

_SUMS = ("count", "failures", "timed", "sum_ms", *histogram.FIELDS)
_AGGREGATES: dict[str, Any] = {
    **{name: Sum(name) for name in _SUMS},
    "min_ms": Min("min_ms"),
    "max_ms": Max("max_ms"),
}
# Without the 36 histogram columns: enough for averages, minima and maxima.
_PLAIN = {
    name: _AGGREGATES[name] for name in ("count", "failures", "timed", "sum_ms", "min_ms", "max_ms")
}
# The histogram of a row read without one: empty, and a tuple, so that adding to it fails
# loudly rather than changing every such row at once.
_NO_HIST: Any = (0,) * histogram.SIZE


class _EpochSeconds(Func):
    """PostgreSQL's seconds since the Unix epoch of a timestamp, as an integer."""

    template = "EXTRACT(EPOCH FROM %(expressions)s)::bigint"
    output_field = BigIntegerField()


def _bucket_reader(
    width: timedelta | None = None,
) -> tuple[Func | F, Callable[[Any], datetime]]:
    """How to read bucket starts: on PostgreSQL as whole seconds since the epoch, made into
    datetimes once per distinct bucket (parsing a timestamp per row was a third of a
    series' read); elsewhere as the rows' own datetimes. With a `width`, each start is
    aligned down to it (finer rows adding into a coarser bucket)."""
    if connection.vendor != "postgresql":
        if width is not None:
            return F("bucket"), lambda bucket: floor(bucket, width)
        return F("bucket"), lambda bucket: bucket
    starts: dict[int, datetime] = {}
    step = int(width.total_seconds()) if width is not None else 1

    def start(seconds: int) -> datetime:
        found = starts.get(seconds)
        if found is None:
            found = starts[seconds] = datetime.fromtimestamp(seconds - seconds % step, UTC)
        return found

    return _EpochSeconds("bucket"), start


def series(
    tier: type[Rollup],
    owners: Mapping[UUID, UUID],
    window: Window,
    *,
    histograms: bool = True,
) -> dict[UUID, dict[datetime, Latency]]:
    """Latency per bucket of one tier, per owner (see `latency`); without `histograms`,
    only counts, averages, minima and maxima (no percentiles), for a fraction of the rows'
    size."""
    start = floor(window.start, tier.width)
    # A coarser tier's rows lack the five-minute rows past the fold's watermark: its tail.
    tailed = tier is not TIERS[0]
    points: dict[UUID, dict[datetime, Latency]] = defaultdict(lambda: defaultdict(Latency))
    if all(endpoint == owner for endpoint, owner in owners.items()):
        # One row per endpoint and bucket already: nothing to add up in the database, and
        # the rows are read as tuples (an overview's sparklines read thousands of them).
        read_bucket, bucket_of = _bucket_reader(tier.width if tailed else None)
        # Each endpoint's rows over the range, the tail's among them, in one statement (one
        # snapshot): on PostgreSQL by a prepared statement, elsewhere by the ORM.
        using, within = read_connection(tier), Window(start, window.end)
        rows = (
            _series_rows(tier, list(owners), within, histograms, using)
            if using.vendor == "postgresql"
            else _orm_rows(tier, owners, within, histograms, read_bucket)
        )
        for endpoint_id, at, count, failures, timed, sum_ms, low, high, *hist in rows:
            if not tailed:
                points[endpoint_id][bucket_of(at)] = Latency(
                    count, failures, timed, sum_ms, low, high, hist if histograms else _NO_HIST
                )
            else:
                points[endpoint_id][bucket_of(at)].merge_sums(
                    count, failures, timed, sum_ms, low, high, hist
                )
        return points
    aggregates = _AGGREGATES if histograms else _PLAIN
    found = tier.objects.filter(endpoint_id__in=list(owners)).between(start, window.end)
    grouped = found.values("endpoint_id", "bucket").order_by().annotate(**aggregates)
    tail = _tail(tier, owners, start, window.end)
    if tail is not None:
        more = tail.values("endpoint_id", "bucket").order_by().annotate(**aggregates)
        grouped = grouped.union(more, all=True)
    for row in grouped:
        points[owners[row["endpoint_id"]]][floor(row["bucket"], tier.width)].merge(row)
    return points


def _orm_rows(
    tier: type[Rollup],
    owners: Mapping[UUID, UUID],
    within: Window,
    histograms: bool,
    read_bucket: Func | F,
) -> Iterable[Sequence[Any]]:
    """`series`' rows of each endpoint over `within` (bucket-aligned) by the ORM: (endpoint,
    bucket as `read_bucket` reads it, sums, histogram), the tail's rows among them, in one
    statement. On SQLite, and what `_series_rows` must equal."""
    names = (*_PLAIN, *(histogram.FIELDS if histograms else ()))
    found = tier.objects.filter(endpoint_id__in=list(owners)).between(within.start, within.end)
    rows = found.annotate(at=read_bucket).values_list("endpoint_id", "at", *names).order_by()
    tail = _tail(tier, owners, within.start, within.end)
    if tail is not None:
        # The tail's rows add into their coarser bucket's, in one statement (snapshot).
        more = tail.annotate(at=read_bucket).values_list("endpoint_id", "at", *names)
        rows = rows.union(more.order_by(), all=True)
    return rows


def _series_rows(
    tier: type[Rollup],
    endpoint_ids: list[UUID],
    within: Window,
    histograms: bool,
    using: BaseDatabaseWrapper,
) -> list[tuple[Any, ...]]:
    """`series`' rows of each endpoint over `within` (bucket-aligned) on PostgreSQL, by a
    statement prepared once per connection: (endpoint, bucket start in epoch seconds,
    sums, histogram), the tail of five-minute rows past the fold's watermark (`_tail`) in
    the same statement.

    The ORM's query of the same rows cost more CPU than the read: compiling it each time,
    then a converter call and a list per row (a compare page reads 2,880 rows)."""
    params: list[Any] = [endpoint_ids, within.start, within.end]
    if tier is not TIERS[0]:
        # The tail covers the whole of the last coarse bucket, as `_tail` reads it.
        end = ceil(within.end, tier.width)
        params += [endpoint_ids, within.start, end, end]
    # Numbers and uuids only: read in the binary format (a compare page's 1,440 rows of 44
    # values cost ~2.5 ms less than parsed from text).
    with read_cursor(using, binary=True) as cursor:
        cursor.execute(_series_sql(tier, histograms), params)
        return cursor.fetchall()


@functools.cache
def _series_sql(tier: type[Rollup], histograms: bool) -> str:
    """The statement of `_series_rows` (the models' names only), built once."""
    columns = ", ".join((*_PLAIN, *(histogram.FIELDS if histograms else ())))
    head = f"SELECT endpoint_id, EXTRACT(EPOCH FROM bucket)::int8, {columns} FROM "  # noqa: S608
    where = " WHERE endpoint_id = ANY(%s::uuid[]) AND bucket >= %s AND bucket < %s"
    sql = head + tier._meta.db_table + where
    if tier is not TIERS[0]:
        # Gated by the watermark alone: a range that ends before it reads no tail.
        sql += f" UNION ALL {head}{TIERS[0]._meta.db_table}{where}"
        sql += fold.tail_sql(connection, "%s")
    return sql


def _tail(tier: type[Rollup], owners: Mapping[UUID, UUID], start: datetime, end: datetime) -> Any:
    """The five-minute rows a coarser tier's rows in [start, end) lack: those from the
    fold's watermark on (`analytics.fold`), over the whole of the last coarse bucket, read
    in the same statement as the coarser rows (None for the five-minute tier itself)."""
    if tier is TIERS[0]:
        return None
    end = ceil(end, tier.width)
    folded = Subquery(RollupFold.objects.values("folded_to")[:1])
    return (
        TIERS[0]
        .objects.filter(endpoint_id__in=list(owners))
        .between(start, end)
        .filter(bucket__gte=folded)
        # A one-time filter: nothing read when the range ends before the watermark.
        .filter(Exists(RollupFold.objects.filter(folded_to__lt=end)))
    )


def series_points(
    found: dict[datetime, Latency], window: Window, width: timedelta
) -> list[SeriesPoint]:
    """A series with every bucket of the window, empty ones included (count 0)."""
    points: list[SeriesPoint] = []
    empty = Latency()
    for start in buckets(window, width):
        stats = found.get(start) or empty
        points.append(
            {
                "t": start,
                "avg_ms": stats.avg_ms,
                "min_ms": stats.min_ms,
                "max_ms": stats.max_ms,
                "p95_ms": stats.percentile(0.95),
                "count": stats.count,
                "failures": stats.failures,
            }
        )
    return points


def bucket_for(window: Window, requested: str | None) -> str:
    """The bucket asked for, or the finest that keeps a window under ~800 points."""
    if requested:
        return requested
    for name, width in BUCKETS.items():
        if window.seconds / width.total_seconds() <= 800:
            return name
    return "1d"
