"""Latency, success and error rates from the rollups: a range is tiled by the coarsest rows
that fit it (`analytics.windows.tiles`), each tier's rows read by range scans over
(endpoint, bucket). Series per bucket of one tier are `analytics.selectors.bucketed`."""

import itertools
from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple
from uuid import UUID

from django.db.backends.base.base import BaseDatabaseWrapper

from analytics import fold, histogram
from analytics.latency import Latency
from analytics.models import TIERS, Rollup
from analytics.windows import tiles
from healthmon.db import read_cursor
from healthmon.dbrouting import read_connection
from healthmon.intervals import Window


def latency(
    owners: Mapping[UUID, UUID], window: Window, now: datetime, *, histograms: bool = True
) -> dict[UUID, Latency]:
    """Latency and rates over a window per owner: `owners` maps each endpoint to what its
    rows add up into (itself, or its project). Without `histograms`, counts, averages,
    minima and maxima only (no percentiles): 6 sums instead of 42, read from the index."""
    (found,) = rollup_figures(owners, [window], now, percentiles=0 if histograms else None)
    return found


def check_counts(
    owners: Mapping[UUID, UUID], windows: Sequence[Window], now: datetime
) -> dict[UUID, list[int]]:
    """Checks per owner (see `latency`) in each window, tiled as `latency` tiles it, so
    the counts equal its `count`s."""
    return window_counts(rollup_figures(owners, windows, now, rates_only=True))


def window_counts(found: Sequence[Mapping[UUID, Latency]]) -> dict[UUID, list[int]]:
    """Checks per owner in each of several windows' figures (0 in a window it has none)."""
    counts: dict[UUID, list[int]] = defaultdict(lambda: [0] * len(found))
    for index, figures in enumerate(found):
        for owner, stats in figures.items():
            counts[owner][index] = stats.count
    return counts


class _Part(NamedTuple):
    """Rows of one tier in [start, end) that count in the same windows."""

    tier: type[Rollup]
    start: datetime
    end: datetime
    windows: frozenset[int]


def _parts(windows: Sequence[Window], now: datetime) -> list[_Part]:
    """Each window tiled (`tiles`), the tiles cut where another window's begin or end:
    every rollup row is read once, however many windows count it."""
    spans: dict[type[Rollup], list[tuple[int, datetime, datetime]]] = defaultdict(list)
    for index, window in enumerate(windows):
        for tier, start, end in tiles(window, now):
            spans[tier].append((index, start, end))
    parts: list[_Part] = []
    for tier, found in spans.items():
        cuts = sorted({moment for _, start, end in found for moment in (start, end)})
        for start, end in itertools.pairwise(cuts):
            inside = frozenset(i for i, s, e in found if s <= start and end <= e)
            if not inside:
                continue
            last = parts[-1] if parts else None
            if last and (last.tier, last.end, last.windows) == (tier, start, inside):
                parts[-1] = last._replace(end=end)
            else:
                parts.append(_Part(tier, start, end, inside))
    return parts


def rollup_figures(
    owners: Mapping[UUID, UUID],
    windows: Sequence[Window],
    now: datetime,
    *,
    percentiles: int | None = None,
    rates_only: bool = False,
) -> list[dict[UUID, Latency]]:
    """Latency and rates per owner (see `latency`) over each window, in one statement;
    percentiles (histograms) only for the window at index `percentiles`. With
    `rates_only`, checks and failures alone (no response-time figures, no percentiles):
    the uptime route's three windows summed 18 aggregates per row for the 6 it shows.

    One statement, not one per tier or window: a report's round trips cost more than its
    reads. Each part of a tier (`_parts`) is one range scan per endpoint, summed per
    endpoint; the parts are added into each window by the database, so one row per
    endpoint comes back. Parts that need no histogram read only the columns the
    (endpoint, bucket) unique includes on PostgreSQL (an index-only scan, migration 0004).
    """
    if rates_only and percentiles is not None:
        raise ValueError("percentiles need the response-time figures")
    results: list[dict[UUID, Latency]] = [defaultdict(Latency) for _ in windows]
    parts = _parts(windows, now)
    if not owners or not parts:
        return results
    using = read_connection(Rollup)
    totals = _SUMS_OF_ROWS[:2] if rates_only else _SUMS_OF_ROWS
    sql, params = _figures_sql(list(owners), parts, len(windows), percentiles, using, totals)
    # Prepared on PostgreSQL: its text changes only with the report's shape, and parsing
    # and planning it (or binding its parameters on the client) cost more than its reads.
    with read_cursor(using) as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    width = len(totals)
    for endpoint_id, *values in rows:
        # SQLite keeps UUIDs as text.
        owner = owners[endpoint_id if isinstance(endpoint_id, UUID) else UUID(endpoint_id)]
        for index, found in enumerate(results):
            window_sums = values[index * width : (index + 1) * width]
            if window_sums[0] is None:  # no row in this window
                continue
            if rates_only:
                count, failures = window_sums
                found[owner].merge_sums(count, failures, None, None, None, None)
                continue
            count, failures, timed, sum_ms, low, high = window_sums
            hist = values[len(windows) * width :] if index == percentiles else ()
            found[owner].merge_sums(count, failures, timed, sum_ms, low, high, hist)
    return results


_WHOLE = "CAST(SUM({}) AS BIGINT)"


class _Total(NamedTuple):
    """One figure of a window: its scans' sums of rows under a short name (the histogram's
    keep theirs), their type, and how the window adds them up; integer sums of sums stay
    integers (PostgreSQL would answer `numeric`)."""

    name: str
    of_rows: str
    kind: str
    of_scans: str


_SUMS_OF_ROWS = (
    _Total("c", "SUM(count)", "BIGINT", _WHOLE),
    _Total("f", "SUM(failures)", "BIGINT", _WHOLE),
    _Total("t", "SUM(timed)", "BIGINT", _WHOLE),
    _Total("s", "SUM(sum_ms)", "DOUBLE PRECISION", "SUM({})"),
    _Total("lo", "MIN(min_ms)", "DOUBLE PRECISION", "MIN({})"),
    _Total("hi", "MAX(max_ms)", "DOUBLE PRECISION", "MAX({})"),
)


def _scans(parts: Sequence[_Part]) -> list[list[int]]:
    """The parts (their indexes) grouped into range scans: a run of parts of one tier, each
    starting where the one before ends, is read by one scan of its whole range."""
    scans: list[list[int]] = []
    for n, part in enumerate(parts):
        last = parts[scans[-1][-1]] if scans else None
        if last is not None and last.tier is part.tier and last.end == part.start:
            scans[-1].append(n)
        else:
            scans.append([n])
    return scans


def _only(parts: Sequence[_Part], scan: list[int], window: int) -> str | None:
    """The FILTER that keeps a scan's rows to those of one window's parts ("" when it
    counts all of them, None when none)."""
    mine = [n for n in scan if window in parts[n].windows]
    if not mine:
        return None
    if len(mine) == len(scan):
        return ""
    runs: list[list[int]] = []
    for n in mine:
        if runs and runs[-1][-1] == n - 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    ranges = " OR ".join(f"(bucket >= %(a{r[0]})s AND bucket < %(b{r[-1]})s)" for r in runs)
    return f" FILTER (WHERE {ranges})"


def _figures_sql(
    endpoint_ids: list[UUID],
    parts: Sequence[_Part],
    windows: int,
    percentiles: int | None,
    using: BaseDatabaseWrapper,
    totals: Sequence[_Total] = _SUMS_OF_ROWS,
) -> tuple[str, dict[str, Any]]:
    """The statement of `rollup_figures` and its (named) parameters: per window, the
    `totals` of its rows (all of `_SUMS_OF_ROWS`, or the first few).

    Written as SQL: the ORM took three quarters of an analytics request's time building
    and reading 41 aggregates (22.6 ms against 5.7 ms for a page of 50 endpoints over
    24 h), and cannot say UNION ALL of grouped parts. Only names of our own go into the
    text; ids and times are parameters, adapted for the database as the ORM adapts them.

    Parts of one tier that follow each other are read by one range scan (`_scans`), each
    window summing its own parts' rows with a FILTER: an `= ANY` scan walks the index from
    its root once per endpoint, so three day parts of a month read three times the pages of
    one (an organization's 30-day summary: 10,000 buffers for its daily rows, against 4,000).

    A scan of hourly or daily rows has a twin over the five-minute rows of its range from
    the fold's watermark on, the rows not folded into them yet (`analytics.fold`), read
    only when the range ends after the watermark.
    """
    params: dict[str, Any] = {}
    ids = _ids_condition(endpoint_ids, parts[0].tier, using, params)
    for n, part in enumerate(parts):
        params[f"a{n}"] = using.ops.adapt_datetimefield_value(part.start)
        params[f"b{n}"] = using.ops.adapt_datetimefield_value(part.end)
    counted = [w for w in range(windows) if any(w in part.windows for part in parts)]
    branches = []
    for scan in _scans(parts):
        sums = _scan_sums(parts, scan, counted, percentiles, totals)
        # Our own table and column names only; values are parameters.
        tier = parts[scan[0]].tier
        tables = [(tier._meta.db_table, "")]
        if tier is not TIERS[0]:
            # Gated by the watermark alone: a scan that ends before it has no twin to read.
            tail = fold.tail_sql(using, f"%(b{scan[-1]})s")
            tables.append((TIERS[0]._meta.db_table, tail))
        for table, tail in tables:
            branches.append(
                f"SELECT endpoint_id, {', '.join(sums)} "  # noqa: S608
                f"FROM {table} WHERE {ids} AND bucket >= %(a{scan[0]})s{tail} "
                f"AND bucket < %(b{scan[-1]})s GROUP BY endpoint_id"
            )
    columns = []
    for window in range(windows):
        for name, _, _, of_scans in totals:
            # A window with no part (all of it after now) has no rows.
            columns.append(of_scans.format(f"{name}{window}") if window in counted else "NULL")
    if percentiles is not None:
        columns += [_WHOLE.format(name) for name in histogram.FIELDS]
    sql = (
        f"SELECT endpoint_id, {', '.join(columns)} "  # noqa: S608
        f"FROM ({' UNION ALL '.join(branches)}) AS scans GROUP BY endpoint_id"
    )
    if "ids" in params:
        sql = "WITH endpoints AS MATERIALIZED (SELECT %(ids)s::uuid[] AS ids) " + sql
    return sql, params


def _ids_condition(
    endpoint_ids: list[UUID],
    tier: type[Rollup],
    using: BaseDatabaseWrapper,
    params: dict[str, Any],
) -> str:
    """The condition on a scan's endpoints, its values added to `params`."""
    if using.vendor == "postgresql":
        # One array, sent once whatever the number of endpoints, and each scan one index
        # scan over it (`= ANY`). A semi-join with the array unnested cost 10-17% more
        # server CPU to plan and run (issue 26). Its estimate (about 1,300 for an
        # organization's summary, with 1,000 endpoints or 10,000) stays far under
        # `jit_above_cost`.
        params["ids"] = endpoint_ids
        return "endpoint_id = ANY((SELECT ids FROM endpoints)::uuid[])"
    id_field = tier._meta.get_field("endpoint").target_field
    for n, pk in enumerate(endpoint_ids):
        params[f"e{n}"] = id_field.get_db_prep_value(pk, using)
    return f"endpoint_id IN ({', '.join(f'%(e{n})s' for n in range(len(endpoint_ids)))})"


def _scan_sums(
    parts: Sequence[_Part],
    scan: list[int],
    counted: Sequence[int],
    percentiles: int | None,
    totals: Sequence[_Total],
) -> list[str]:
    """One scan's select list: each counted window's `totals` of the scan's rows in it, then
    the histogram's sums for the window `percentiles`. Typed NULL where the window has none
    of the scan's rows: PostgreSQL matches UNION ALL branches' types pairwise."""
    sums = []
    for window in counted:
        only = _only(parts, scan, window)
        for name, of_rows, kind, _ in totals:
            sums.append(
                f"CAST(NULL AS {kind}) AS {name}{window}"
                if only is None
                else f"{of_rows}{only} AS {name}{window}"
            )
    if percentiles is not None:
        only = _only(parts, scan, percentiles)
        sums += [
            f"CAST(NULL AS BIGINT) AS {name}" if only is None else f"SUM({name}){only} AS {name}"
            for name in histogram.FIELDS
        ]
    return sums
