"""Which endpoints are in maintenance, and when: read for notifications (now) and for
uptime and SLA figures (a range)."""

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

from accounts.models import Project
from alerts.models import MaintenanceWindow, load_scopes, may_overlap
from healthmon.intervals import Interval, Window, clip, merge
from monitoring.models import Endpoint


def _windows(
    endpoints: Sequence[Endpoint], start: datetime, end: datetime
) -> list[MaintenanceWindow]:
    """The windows of the endpoints' organizations that may overlap [start, end), with
    their scopes loaded: one query, two more only when some window is found."""
    projects = Project.objects.filter(pk__in={e.project_id for e in endpoints})
    windows = list(
        MaintenanceWindow.objects.filter(
            organization_id__in=projects.values("organization_id"), starts_at__lt=end
        ).filter(may_overlap(start))
    )
    if not windows:
        return []
    load_scopes(windows)
    return windows


def maintenance_intervals(
    endpoints: Sequence[Endpoint], start: datetime, end: datetime
) -> dict[UUID, list[Interval]]:
    """Per endpoint, its maintenance inside [start, end): merged, clipped, in time order
    (endpoints with none are left out)."""
    found: dict[UUID, list[Interval]] = defaultdict(list)
    windows = _windows(endpoints, start, end)
    if not windows:
        return {}
    span = Window(start, end)
    for window in windows:
        occurrences = clip(window.occurrences(start, end), span)
        if not occurrences:
            continue
        for endpoint in endpoints:
            if window.covers(endpoint):
                found[endpoint.pk] += occurrences
    return {pk: merge(intervals) for pk, intervals in found.items()}
