"""What a status page shows, read in a fixed number of queries whatever its size.

Everything is scoped by the page: its components, their endpoints' statuses, the page
organization's maintenance windows, and the public incidents that name its components. Day
bars come from the daily rollups (checks and failed checks per UTC day), the sparkline from
the hourly ones: no raw check is read. Nothing here carries a target, host, error text,
cause or note: the dataclasses have no field for them.
"""

import functools
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import NamedTuple
from uuid import UUID

from django.db import connection
from django.db.models import Q, Subquery

from alerts.models import MaintenanceWindow, load_scopes, may_overlap
from analytics.fold import tail_sql
from analytics.models import DayRollup, FiveMinuteRollup, HourRollup, RollupFold
from analytics.rows import SeriesPoint
from analytics.selectors import series, series_points
from healthmon.db import read_cursor
from healthmon.dbrouting import read_connection
from healthmon.intervals import Window
from monitoring.models import Endpoint, Incident, IncidentKind, IncidentState, IncidentUpdate
from statuspages import states
from statuspages.models import Component, StatusPage

HISTORY_DAYS = 14
UPCOMING_DAYS = 30
SPARKLINE_HOURS = 24
DAY = timedelta(days=1)


class DayBar(NamedTuple):
    """One UTC day of a component: its uptime % (None: no data), its public incidents,
    and how the bar is coloured (no data, clean, or how bad: `day_tone`). A tuple: a page
    of 50 components by 90 days builds 4,500 of them on every cold render."""

    day: date
    uptime: float | None
    incidents: tuple[str, ...]
    tone: str


def day_tone(uptime: float | None, incidents: tuple[str, ...]) -> str:
    """How a day's bar is coloured: none (no data), ok, minor or major."""
    if uptime is None:
        # A day without checks can still have had a declared incident.
        return "minor" if incidents else "none"
    if uptime >= 99.9 and not incidents:
        return "ok"
    return "minor" if uptime >= 99.0 else "major"


@dataclass
class ComponentRow:
    """A component as readers see it."""

    id: int
    endpoint_id: UUID
    project_id: UUID
    name: str
    section_id: UUID
    section: str
    endpoint_status: str
    status: str = states.ComponentStatus.OPERATIONAL
    uptime_percent: float | None = None
    bars: list[DayBar] = field(default_factory=list)
    sparkline: list[SeriesPoint] | None = None

    @property
    def label(self) -> str:
        """The status in words."""
        return states.COMPONENT_LABELS[self.status]


@dataclass
class SectionRow:
    """A section and its components, in the page's order."""

    id: UUID
    name: str
    components: list[ComponentRow]


@dataclass(frozen=True)
class UpdateRow:
    """A public word on an incident; `html` is sanitised at write time."""

    id: str
    state: str
    html: str
    text: str
    created_at: datetime

    @property
    def state_label(self) -> str:
        """The state in words."""
        return IncidentState(self.state).label


@dataclass
class IncidentRow:
    """A public incident: title, impact, state, the components it names, its updates
    (newest first). Automatic ones are titled by their component, never by their cause."""

    id: UUID
    title: str
    impact: str
    state: str
    started_at: datetime
    resolved_at: datetime | None
    updated_at: datetime
    component_ids: list[int]
    automatic: bool = False
    updates: list[UpdateRow] = field(default_factory=list)

    @property
    def state_label(self) -> str:
        """The state in words."""
        return IncidentState(self.state).label

    @property
    def impact_label(self) -> str:
        """The impact in words."""
        return states.COMPONENT_LABELS[self.impact]


@dataclass(frozen=True)
class MaintenanceRow:
    """A maintenance occurrence touching the page: name and times only."""

    id: UUID
    name: str
    starts_at: datetime
    ends_at: datetime
    active: bool
    component_ids: tuple[int, ...]


@dataclass
class PageView:
    """Everything a status page, its summary.json and its feeds show."""

    page: StatusPage
    now: datetime
    overall: states.Overall
    sections: list[SectionRow]
    components: list[ComponentRow]
    active_incidents: list[IncidentRow]
    history: list[IncidentRow]
    maintenances: list[MaintenanceRow]
    days: list[date]
    # Every public incident loaded (open, or resolved within the uptime period): the feeds'.
    incidents: list[IncidentRow] = field(default_factory=list)

    @property
    def updated_at(self) -> datetime:
        """The latest change the view shows (the page itself, or an incident)."""
        moments = [self.page.updated_at]
        moments += [i.updated_at for i in self.incidents]
        moments += [u.created_at for i in self.incidents for u in i.updates]
        return max(moments)


def _components(page: StatusPage) -> list[ComponentRow]:
    """The page's components, in section and position order, with their endpoints' names
    and statuses only (the endpoint rows themselves, with their encrypted targets, are
    never loaded). Endpoints of another organization are left out."""
    rows = (
        Component.objects.filter(page=page, endpoint__project__organization_id=page.organization_id)
        .order_by("section__position", "section_id", "position", "id")
        .values_list(
            "id",
            "endpoint_id",
            "endpoint__project_id",
            "endpoint__name",
            "section_id",
            "section__name",
            "endpoint__status",
        )
    )
    return [ComponentRow(*row) for row in rows]


def _maintenances(
    page: StatusPage, rows: list[ComponentRow], now: datetime
) -> list[MaintenanceRow]:
    """Active and upcoming (next `UPCOMING_DAYS`) occurrences of the organization's windows
    that cover a component: one query, two more when some window is found."""
    end = now + timedelta(days=UPCOMING_DAYS)
    windows = list(
        MaintenanceWindow.objects.filter(organization_id=page.organization_id, starts_at__lt=end)
        .filter(may_overlap(now))
        .only("id", "name", "starts_at", "ends_at", "rrule", "timezone")
    )
    load_scopes(windows)
    found = []
    for window in windows:
        covered = tuple(
            row.id
            for row in rows
            if window.covers(Endpoint(id=row.endpoint_id, project_id=row.project_id))
        )
        occurrences = window.occurrences(now, end)
        if covered and occurrences:
            starts_at, ends_at = occurrences[0]  # the next one is enough to announce
            name = window.name or "Scheduled maintenance"
            found.append(
                MaintenanceRow(window.id, name, starts_at, ends_at, starts_at <= now, covered)
            )
    return sorted(found, key=lambda m: (m.starts_at, str(m.id)))


def _incidents(page: StatusPage, rows: list[ComponentRow], since: datetime) -> list[IncidentRow]:
    """Public incidents naming the page's components, open or resolved since `since`,
    newest first, with their updates (three queries)."""
    by_endpoint = {row.endpoint_id: row for row in rows}
    through = Incident.endpoints.through
    declared = through.objects.filter(endpoint_id__in=list(by_endpoint))
    found = (
        Incident.objects.filter(organization_id=page.organization_id, public=True)
        .filter(Q(endpoint_id__in=list(by_endpoint)) | Q(pk__in=declared.values("incident_id")))
        .filter(Q(resolved_at__isnull=True) | Q(resolved_at__gte=since))
        .order_by("-started_at", "-id")
        .values_list(
            "id",
            "kind",
            "endpoint_id",
            "title",
            "impact",
            "state",
            "started_at",
            "resolved_at",
            "updated_at",
        )
    )
    incidents: dict[UUID, IncidentRow] = {}
    automatic: dict[UUID, ComponentRow] = {}
    for pk, kind, endpoint_id, title, impact, state, started, resolved, updated in found:
        incident = IncidentRow(pk, title, impact, state, started, resolved, updated, [])
        if kind == IncidentKind.AUTOMATIC:
            incident.automatic = True
            row = by_endpoint[endpoint_id]
            automatic[pk] = row
            incident.component_ids.append(row.id)
            incident.title = title or f"{row.name} is down"
            incident.impact = impact or states.ComponentStatus.MAJOR_OUTAGE
        incidents[pk] = incident
    for incident_id, endpoint_id in declared.filter(incident_id__in=list(incidents)).values_list(
        "incident_id", "endpoint_id"
    ):
        incidents[incident_id].component_ids.append(by_endpoint[endpoint_id].id)
    _add_updates(incidents, automatic)
    return list(incidents.values())


def _add_updates(incidents: dict[UUID, IncidentRow], automatic: dict[UUID, ComponentRow]) -> None:
    """Give each incident its updates, newest first (one query); an automatic one nobody
    has written on yet gets the line readers are told instead."""
    for pk, state, html, text, created_at, incident_id in (
        IncidentUpdate.objects.filter(incident_id__in=list(incidents))
        .order_by("-created_at", "-id")
        .values_list("id", "state", "message_html", "message", "created_at", "incident_id")
    ):
        incidents[incident_id].updates.append(UpdateRow(str(pk), state, html, text, created_at))
    for pk, row in automatic.items():
        incident = incidents[pk]
        if incident.updates:
            continue
        # The component and the state, never the measured cause (an error text can name
        # hosts and ports).
        if incident.resolved_at is not None:
            words = f"{row.name} is back up"
            incident.updates.append(
                UpdateRow(f"{pk}-resolved", "resolved", "", words, incident.resolved_at)
            )
        words = f"{row.name} is down — investigating"
        incident.updates.append(
            UpdateRow(f"{pk}-opened", "investigating", "", words, incident.started_at)
        )


def _rollup_days(
    rows: list[ComponentRow], days: list[date], end: datetime
) -> dict[UUID, list[tuple[int, int]]]:
    """Each endpoint's (checks, failed checks) per day of `days` from the daily rollups,
    in one query; a day without a rollup row is (0, 0). The five-minute rows not folded
    into the daily ones yet (`analytics.fold`) are read beside them, in the same statement.

    On PostgreSQL the database groups the rows by endpoint into three integer arrays (day
    offset, checks, failures): 50 components of 90 days are 50 rows rather than 4,500, which
    the driver reads in a fraction of the time (bench: `tests/statuspages`' cold-render
    test). Elsewhere the rows are read one per day."""
    found: dict[UUID, list[tuple[int, int]]] = {}
    if not rows:  # an empty IN cannot be written as SQL
        return found
    first = days[0]
    start = datetime.combine(first, time.min, tzinfo=end.tzinfo)
    ids = [row.endpoint_id for row in rows]
    using = read_connection(DayRollup)
    if using.vendor == "postgresql":
        with read_cursor(using) as cursor:
            cursor.execute(_days_sql(), [first, ids, start, end, ids, start, end, end])
            for endpoint_id, offsets, counts, fails in cursor.fetchall():
                sums = found[endpoint_id] = [(0, 0)] * len(days)
                for offset, count, failures in zip(offsets, counts, fails, strict=True):
                    sums[offset] = (count, failures)
        return found
    columns = ("endpoint_id", "bucket", "count", "failures")
    plain = DayRollup.objects.filter(endpoint_id__in=ids).between(start, end)
    tail = (
        FiveMinuteRollup.objects.filter(endpoint_id__in=ids)
        .between(start, end)
        .filter(bucket__gte=Subquery(RollupFold.objects.values("folded_to")[:1]))
    )
    read = plain.values_list(*columns).order_by()
    for endpoint_id, bucket, count, failures in read.union(
        tail.values_list(*columns).order_by(), all=True
    ):
        sums = found.setdefault(endpoint_id, [(0, 0)] * len(days))
        offset = (bucket.date() - first).days
        sums[offset] = (sums[offset][0] + count, sums[offset][1] + failures)
    return found


@functools.cache
def _days_sql() -> str:
    """The statement of `_rollup_days` on PostgreSQL: per UTC day (its offset from the
    first day, the first parameter) the daily rows of the endpoints in [start, end), with
    the tail their five-minute rows in [start, end) from the watermark on, summed and
    grouped per endpoint into arrays."""
    quote = connection.ops.quote_name
    branch = (
        "SELECT endpoint_id, bucket, count, failures FROM {} "
        "WHERE endpoint_id = ANY(%b::uuid[]) AND bucket >= %b AND bucket < %b"
    )
    source = branch.format(quote(DayRollup._meta.db_table))
    source += " UNION ALL " + branch.format(quote(FiveMinuteRollup._meta.db_table))
    source += tail_sql(connection, "%b")
    return (
        "SELECT endpoint_id, array_agg(d), array_agg(c), array_agg(f) FROM ("  # noqa: S608
        "SELECT endpoint_id, (bucket AT TIME ZONE 'UTC')::date - %b::date AS d, "
        "SUM(count)::int AS c, SUM(failures)::int AS f "
        f"FROM ({source}) AS r GROUP BY 1, 2) AS days GROUP BY 1"
    )


def _day_uptime(count: int, failures: int) -> float | None:
    """A day's uptime %: its successful checks over its checks; None without a check."""
    return round(100 * (count - failures) / count, 2) if count else None


def _day_bars(
    rows: list[ComponentRow], incidents: list[IncidentRow], days: list[date], end: datetime
) -> None:
    """Fill each component's day bars and period uptime from the daily rollups (one
    query): a day's uptime is its successful checks over its checks; a day with no check
    is no data, never 100 %."""
    sums = _rollup_days(rows, days, end)
    titles: dict[int, dict[date, list[str]]] = defaultdict(lambda: defaultdict(list))
    for incident in incidents:
        first = max(incident.started_at.date(), days[0])
        last = (incident.resolved_at or end).date()
        for offset in range((last - first).days + 1):
            for component_id in incident.component_ids:
                titles[component_id][first + timedelta(days=offset)].append(incident.title)
    empty = [(0, 0)] * len(days)
    # Most days of most components add up alike (a whole day of checks, none failed):
    # each (checks, failures) pair is worked out once per page.
    plain: dict[tuple[int, int], tuple[float | None, str]] = {}
    for row in rows:
        marks = titles.get(row.id, {})
        total = failed = 0
        bars = row.bars
        for day, sums_of_day in zip(days, sums.get(row.endpoint_id, empty), strict=True):
            count, failures = sums_of_day
            total, failed = total + count, failed + failures
            if day in marks:
                named = tuple(marks[day])
                uptime = _day_uptime(count, failures)
                bars.append(DayBar(day, uptime, named, day_tone(uptime, named)))
                continue
            known = plain.get(sums_of_day)
            if known is None:
                uptime = _day_uptime(count, failures)
                known = plain[sums_of_day] = (uptime, day_tone(uptime, ()))
            bars.append(DayBar(day, known[0], (), known[1]))
        row.uptime_percent = round(100 * (total - failed) / total, 3) if total else None


def _sparklines(rows: list[ComponentRow], now: datetime) -> None:
    """Each component's last 24 hours of average response time (one query)."""
    window = Window(now - timedelta(hours=SPARKLINE_HOURS), now)
    owners = {row.endpoint_id: row.endpoint_id for row in rows}
    found = series(HourRollup, owners, window, histograms=False) if owners else {}
    for row in rows:
        row.sparkline = series_points(found.get(row.endpoint_id, {}), window, HourRollup.width)


def _statuses(
    rows: list[ComponentRow], incidents: list[IncidentRow], maintenances: list[MaintenanceRow]
) -> None:
    """Set each component's status in the shared vocabulary (`states.component_status`)."""
    held = {pk for m in maintenances if m.active for pk in m.component_ids}
    declared: dict[int, list[str]] = defaultdict(list)
    for incident in incidents:
        if incident.resolved_at is None and not incident.automatic:
            for pk in incident.component_ids:
                declared[pk].append(incident.impact)
    for row in rows:
        row.status = states.component_status(
            row.endpoint_status, in_maintenance=row.id in held, declared=declared[row.id]
        )


def page_view(*, page: StatusPage, now: datetime) -> PageView:
    """Read everything a status page shows, in a fixed number of queries (nine at most,
    whatever the number of components and days)."""
    today = now.date()
    days = [today - timedelta(days=n) for n in reversed(range(page.uptime_days))]
    rows = _components(page)
    since = min(now - timedelta(days=HISTORY_DAYS), datetime.combine(days[0], time.min, now.tzinfo))
    incidents = _incidents(page, rows, since) if rows else []
    maintenances = _maintenances(page, rows, now) if rows else []
    _statuses(rows, incidents, maintenances)
    _day_bars(rows, incidents, days, now)
    if page.show_response_times:
        _sparklines(rows, now)
    sections: list[SectionRow] = []
    for row in rows:
        if not sections or sections[-1].id != row.section_id:
            sections.append(SectionRow(row.section_id, row.section, []))
        sections[-1].components.append(row)
    history_since = now - timedelta(days=HISTORY_DAYS)
    return PageView(
        page=page,
        now=now,
        overall=states.overall(row.status for row in rows),
        sections=sections,
        components=rows,
        active_incidents=[i for i in incidents if i.resolved_at is None],
        history=[i for i in incidents if i.resolved_at and i.resolved_at >= history_since],
        maintenances=maintenances,
        days=days,
        incidents=incidents,
    )
