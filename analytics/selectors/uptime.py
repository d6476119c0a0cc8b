"""Time-weighted uptime and SLA: downtime is incident time inside the window, over the time
the endpoint was watched in it (before its first check, while paused, while waiting for the
first check after a resume or a new target, and during maintenance windows do not count).
A figure over a span with no check is None, never a perfect score."""

import functools
import itertools
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import NamedTuple
from uuid import UUID

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Q, Subquery

from accounts.models import Project
from alerts.maintenance import maintenance_intervals
from alerts.models import MaintenanceWindow
from analytics.rows import SlaTier
from healthmon.db import read_cursor
from healthmon.dbrouting import read_connection
from healthmon.intervals import Interval, Window, clip, intersect, length, lengths, subtract
from monitoring.models import (
    SLA_TIERS,
    Endpoint,
    EndpointStatus,
    Incident,
    StatusChange,
)

MONTH = timedelta(days=30).total_seconds()
YEAR = timedelta(days=365).total_seconds()


@dataclass
class Coverage:
    """When an endpoint was watched within a window, when it was down, and when it was in
    maintenance (not watched: its downtime counts in no uptime or SLA figure)."""

    watched: list[Interval] = field(default_factory=list)
    down: list[Interval] = field(default_factory=list)
    maintenance: list[Interval] = field(default_factory=list)

    def clipped(self, window: Window) -> "Coverage":
        """The coverage of a sub-window: what `coverage` answers for that window."""
        return Coverage(
            clip(self.watched, window), clip(self.down, window), clip(self.maintenance, window)
        )


def coverage_seconds(covered: Iterable[Coverage]) -> tuple[float, float]:
    """(watched, down) seconds of several coverages added up (a project's endpoints, a
    status page's components)."""
    found = list(covered)
    watched = length(itertools.chain.from_iterable(each.watched for each in found))
    return watched, length(itertools.chain.from_iterable(each.down for each in found))


def coverage_seconds_in(
    covered: Iterable[Coverage], windows: Sequence[Window]
) -> list[tuple[float, float]]:
    """(watched, down) seconds of several coverages added up within each window, every
    interval read once for all of them (a report's 24 h, 7 d and 30 d)."""
    found = list(covered)
    watched = lengths(itertools.chain.from_iterable(each.watched for each in found), windows)
    down = lengths(itertools.chain.from_iterable(each.down for each in found), windows)
    return list(zip(watched, down, strict=True))


def coverage(endpoints: Sequence[Endpoint], window: Window, now: datetime) -> dict[UUID, Coverage]:
    """Watched, down and maintenance intervals of each endpoint inside the window (one
    statement on PostgreSQL, three elsewhere; three more on PostgreSQL, two elsewhere, when
    the organization has maintenance windows then)."""
    window = Window(window.start, min(window.end, now))
    if window.end <= window.start:
        return {endpoint.pk: Coverage() for endpoint in endpoints}
    using = read_connection(StatusChange)
    if using.vendor == "postgresql":
        pauses, down, in_maintenance = _history_prepared(endpoints, window, now, using)
    else:
        pauses, down = _history([endpoint.pk for endpoint in endpoints], window, now)
        in_maintenance = True
    maintenance = (
        maintenance_intervals(endpoints, window.start, window.end) if in_maintenance else {}
    )
    result = {}
    for endpoint in endpoints:
        watched = clip(_watched(endpoint, pauses[endpoint.pk], now), window)
        held = intersect(maintenance.get(endpoint.pk, []), watched)
        watched = subtract(watched, held)
        result[endpoint.pk] = Coverage(
            watched, intersect(sorted(clip(down[endpoint.pk], window)), watched), held
        )
    return result


def degraded_stretches(endpoint: Endpoint, window: Window, now: datetime) -> list[Interval]:
    """When the endpoint was degraded (slow, yet up) within the window, from its status
    history: the moves into and out of degraded inside it, and the last one before it,
    which says how it began (one query; none for an endpoint with no threshold, which
    cannot be degraded)."""
    if endpoint.config_masked.get("degraded_above_ms") is None:
        return []
    degraded = EndpointStatus.DEGRADED
    moves = StatusChange.objects.filter(endpoint=endpoint).filter(
        Q(to_status=degraded) | Q(from_status=degraded)
    )
    before = moves.filter(changed_at__lt=window.start).order_by("-changed_at", "-id")
    found = moves.filter(changed_at__lt=window.end).filter(
        Q(changed_at__gte=window.start) | Q(pk=Subquery(before.values("pk")[:1]))
    )
    stretches: list[Interval] = []
    since = None
    for changed_at, to_status in found.order_by("changed_at", "id").values_list(
        "changed_at", "to_status"
    ):
        if to_status == degraded:
            since = since or max(changed_at, window.start)
        elif since is not None:
            stretches.append((since, changed_at))
            since = None
    if since is not None:
        stretches.append((since, min(window.end, now)))
    return stretches


# Statuses in which nothing is watched: paused, or pending, waiting for the first check
# since creation, a resume or a new target (no result speaks for that time).
UNWATCHED = (EndpointStatus.PAUSED, EndpointStatus.PENDING)


class _Move(NamedTuple):
    """A move into or out of an unwatched status."""

    changed_at: datetime
    from_status: str
    to_status: str


def _history(
    ids: list[UUID], window: Window, now: datetime
) -> tuple[dict[UUID, list[_Move]], dict[UUID, list[Interval]]]:
    """Per endpoint: its moves into and out of the unwatched statuses (all of them, in
    time order), and its incidents overlapping the window, by the ORM (two queries)."""
    pauses: dict[UUID, list[_Move]] = defaultdict(list)
    # Tuples, not model instances: a page of endpoints can have thousands of these rows.
    for endpoint_id, changed_at, from_status, to_status in (
        # The whole history of moves into and out of the unwatched statuses: the state at
        # creation shows in the first move, which may come after the window.
        StatusChange.objects.filter(endpoint_id__in=ids)
        .filter(Q(to_status__in=UNWATCHED) | Q(from_status__in=UNWATCHED))
        .order_by("endpoint_id", "changed_at", "id")
        .values_list("endpoint_id", "changed_at", "from_status", "to_status")
    ):
        pauses[endpoint_id].append(_Move(changed_at, from_status, to_status))
    down: dict[UUID, list[Interval]] = defaultdict(list)
    for endpoint_id, started_at, resolved_at in (
        Incident.objects.filter(endpoint_id__in=ids, started_at__lt=window.end)
        .filter(Q(resolved_at__isnull=True) | Q(resolved_at__gt=window.start))
        .values_list("endpoint_id", "started_at", "resolved_at")
        .order_by()  # sorted per endpoint below: no sort of every row in the database
    ):
        down[endpoint_id].append((started_at, resolved_at or now))
    return pauses, down


@functools.cache
def _history_sql() -> str:
    """`_history`'s two reads as one statement of fixed text (names from the models only):
    the moves first, in time order per endpoint, then the incidents, unsorted; last, one
    row of kind 2 if the endpoints' organizations have a maintenance window that may
    overlap the window (`alerts.maintenance`'s own read, asked whether it has anything)."""
    moves, incidents = StatusChange._meta.db_table, Incident._meta.db_table
    held, projects = MaintenanceWindow._meta.db_table, Project._meta.db_table
    # The statuses as constants, not a parameter: the planner then proves the partial
    # index `status_unwatched_idx` (migration monitoring.0028) answers the read.
    idle = ", ".join(f"'{status}'" for status in UNWATCHED)
    return (
        f"SELECT * FROM (SELECT 0 AS kind, endpoint_id, changed_at AS a, "  # noqa: S608
        f"NULL::timestamptz AS b, from_status, to_status, id FROM {moves} "
        f"WHERE endpoint_id = ANY(%(ids)s::uuid[]) "
        f"AND (to_status IN ({idle}) OR from_status IN ({idle})) "
        f"ORDER BY endpoint_id, changed_at, id) AS m "
        f"UNION ALL SELECT 1, endpoint_id, started_at, resolved_at, NULL, NULL, NULL "
        f"FROM {incidents} WHERE endpoint_id = ANY(%(ids)s::uuid[]) "
        f"AND started_at < %(end)s AND (resolved_at IS NULL OR resolved_at > %(start)s) "
        # `alerts.models.may_overlap`: recurring, or a one-off ending after the start.
        f"UNION ALL SELECT * FROM (SELECT 2, NULL::uuid, NULL::timestamptz, NULL::timestamptz, "
        f"NULL, NULL, NULL::uuid FROM {held} WHERE organization_id IN "
        f"(SELECT organization_id FROM {projects} WHERE id = ANY(%(projects)s::uuid[])) "
        f"AND starts_at < %(end)s AND (rrule <> '' OR ends_at > %(start)s) LIMIT 1) AS held"
    )


def _history_prepared(
    endpoints: Sequence[Endpoint], window: Window, now: datetime, using: BaseDatabaseWrapper
) -> tuple[dict[UUID, list[_Move]], dict[UUID, list[Interval]], bool]:
    """`_history` on PostgreSQL in one prepared statement, which also says whether any
    maintenance window may apply: one round trip where there were three, neither parsed
    nor planned again (they were two thirds of one endpoint's summary's database time)."""
    ids = [endpoint.pk for endpoint in endpoints]
    params = {
        "ids": ids,
        "projects": list({endpoint.project_id for endpoint in endpoints}),
        "start": window.start,
        "end": window.end,
    }
    # The rows' endpoint ids come as text and are matched to list positions: a UUID made
    # and hashed (in Python) for each row took half the read's client CPU at 1,000
    # endpoints (8,700 rows).
    at = {str(pk): n for n, pk in enumerate(ids)}
    pauses: list[list[_Move]] = [[] for _ in ids]
    down: list[list[Interval]] = [[] for _ in ids]
    with read_cursor(using, uuid_text=True) as cursor:
        cursor.execute(_history_sql(), params)
        rows = cursor.fetchall()
    maintenance = False
    for kind, endpoint_id, a, b, from_status, to_status, _ in rows:
        if kind == 0:
            pauses[at[endpoint_id]].append(_Move(a, from_status, to_status))
        elif kind == 1:
            down[at[endpoint_id]].append((a, b or now))
        else:
            maintenance = True
    return dict(zip(ids, pauses, strict=True)), dict(zip(ids, down, strict=True)), maintenance


def _watched(endpoint: Endpoint, changes: list[_Move], now: datetime) -> list[Interval]:
    """From creation to now, less the paused and pending stretches the status history
    records: watching starts with the first check."""
    # Unwatched at creation when the first recorded move leaves an unwatched status; with
    # no move at all, the status is still the one it was created with.
    idle = (changes[0].from_status if changes else endpoint.status) in UNWATCHED
    intervals, since = [], endpoint.created_at
    for change in changes:
        if change.to_status in UNWATCHED and not idle:
            intervals.append((since, change.changed_at))
            idle = True
        elif change.to_status not in UNWATCHED and idle:
            since, idle = change.changed_at, False
    if not idle:
        intervals.append((since, now))
    return intervals


def uptime_percent(watched: float, down: float, checks: int | None = None) -> float | None:
    """Uptime % of watched time; None when nothing was watched, or when `checks` (the
    checks in the same span, where known) is 0: no data is no perfect score."""
    if watched <= 0 or checks == 0:
        return None
    return round(100 * (1 - down / watched), 4)


def sla_tiers(
    watched: float,
    down: float,
    targets: Sequence[float] | None = None,
    checks: int | None = None,
) -> list[SlaTier]:
    """Each SLA tier's budget and standing for one watched span; with no data (nothing
    watched, or no check), its figures for the span are None, the tier's own allowances
    per month and year stay."""
    uptime = uptime_percent(watched, down, checks)
    rows: list[SlaTier] = []
    for target, label in SLA_TIERS:
        if targets and target not in targets:
            continue
        share = (100 - target) / 100
        allowed = share * watched
        measured = uptime is not None
        rows.append(
            {
                "target": target,
                "tier": label,
                "uptime": uptime,
                "allowed_downtime_month_s": round(share * MONTH, 3),
                "allowed_downtime_year_s": round(share * YEAR, 3),
                "allowed_downtime_s": round(allowed, 3) if measured else None,
                "downtime_s": round(down, 3) if measured else None,
                "budget_remaining_s": round(max(0.0, allowed - down), 3) if measured else None,
                # Against the unrounded budget: a rounded uptime could hide a second over.
                "compliant": down <= allowed + 1e-6 if measured else None,
            }
        )
    return rows
