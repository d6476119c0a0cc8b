"""Events no check raises: a heartbeat turned late (`heartbeat.late`, written in the deadline
loop's transaction) and the start and end of maintenance occurrences (`maintenance.*`,
written by a beat loop).

Each is written once per channel that covers it and chose it, keyed so that the outbox's
unique constraint refuses a second write: loops racing, or a loop run twice, write each
event once.
"""

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from accounts.models import Project
from alerts import messages
from alerts.maintenance import maintenance_intervals
from alerts.models import (
    MaintenanceWindow,
    NotificationChannel,
    NotificationEvent,
    load_scopes,
    may_overlap,
)
from alerts.services.events import audience_of, channels_by_org, deliveries_store, delivery_rows
from monitoring.models import Endpoint

_NAMESPACE = uuid.UUID("0b7d1f8e-3c52-4f6e-9a1d-5e2c7b9f4a30")
# How far back the maintenance loop looks for occurrences that started or ended: enough to
# outlast a beat restart or a slow worker, short enough that a loop back after a long outage
# does not announce maintenance long over.
MAINTENANCE_LOOKBACK = timedelta(minutes=5)
_EVENTS = (NotificationEvent.MAINTENANCE_STARTED, NotificationEvent.MAINTENANCE_ENDED)


def heartbeat_late_key(endpoint_id: object, expected_at: datetime) -> uuid.UUID:
    """The idempotency key of one lateness of one heartbeat (by the deadline it missed)."""
    return uuid.uuid5(_NAMESPACE, f"{endpoint_id}:heartbeat.late:{expected_at.isoformat()}")


def maintenance_key(window_id: object, starts_at: datetime, event: str) -> uuid.UUID:
    """The idempotency key of an occurrence's start or end."""
    return uuid.uuid5(_NAMESPACE, f"{window_id}:{starts_at.isoformat()}:{event}")


def heartbeat_late_queue(*, endpoint_ids: Sequence[uuid.UUID]) -> int:
    """Write a `heartbeat.late` delivery per channel covering each heartbeat just turned
    late that chose the event, and queue them once the transaction commits. Called by the
    deadline loop (`pipeline.heartbeats`) in the transaction that flips them.

    A lateness inside a maintenance window of its endpoint is stored suppressed. Returns
    the deliveries written; no query runs with no heartbeat.
    """
    if not endpoint_ids:
        return 0
    now = timezone.now()
    endpoints = list(
        Endpoint.objects.filter(pk__in=endpoint_ids).only(
            "id", "name", "type", "project_id", "config", "late_after", "alert_after"
        )
    )
    audience = audience_of({e.project_id for e in endpoints})
    heard = [
        (endpoint, covering)
        for endpoint in endpoints
        if (covering := audience.covering(endpoint, NotificationEvent.HEARTBEAT_LATE))
    ]
    quiet = _in_maintenance([endpoint for endpoint, _ in heard], now)
    rows = []
    for endpoint, covering in heard:
        document = _late_document(endpoint, audience.names[endpoint.project_id], now)
        rows += delivery_rows(covering, document, now, endpoint, endpoint.pk in quiet)
    return deliveries_store(rows)


def _late_document(endpoint: Endpoint, project_name: str, now: datetime) -> messages.EventDocument:
    expected = endpoint.late_after or now
    down_at = endpoint.alert_after
    grace = int((down_at - expected).total_seconds()) if down_at else 0
    return messages.heartbeat_late_document(
        event_id=heartbeat_late_key(endpoint.pk, expected),
        occurred_at=now,
        endpoint=endpoint,
        project_name=project_name,
        expected_at=expected,
        grace_seconds=int(endpoint.config.get("grace_seconds", grace)),
        down_at=down_at,
    )


def _in_maintenance(endpoints: Sequence[Endpoint], now: datetime) -> set[uuid.UUID]:
    """Ids of the endpoints whose lateness (its deadline) falls in one of their maintenance
    windows: one read of the windows for all."""
    if not endpoints:
        return set()
    moments = {endpoint.pk: endpoint.late_after or now for endpoint in endpoints}
    start, end = min(moments.values()), max(moments.values()) + timedelta(microseconds=1)
    windows = maintenance_intervals(endpoints, start, end)
    return {
        pk for pk, moment in moments.items() if any(s <= moment < e for s, e in windows.get(pk, ()))
    }


@transaction.atomic
def maintenance_events_queue(*, now: datetime | None = None) -> int:
    """Write a `maintenance.started` or `maintenance.ended` delivery per channel for each
    occurrence that started or ended in the last `MAINTENANCE_LOOKBACK` (beat runs this
    every 20 s), to the channels that chose the event and cover the window's scope. Safe to
    run concurrently: each (window, occurrence, event) has one key. Returns the deliveries
    written."""
    now = now or timezone.now()
    since = now - MAINTENANCE_LOOKBACK
    windows = list(MaintenanceWindow.objects.filter(starts_at__lte=now).filter(may_overlap(since)))
    happened = [
        (window, start, end, event, moment)
        for window in windows
        for start, end in window.occurrences(since, now + timedelta(microseconds=1))
        for event, moment in zip(_EVENTS, (start, end), strict=True)
        if since <= moment <= now
    ]
    if not happened:
        return 0
    load_scopes([w for w, *_ in happened])
    channels = channels_by_org({w.organization_id for w, *_ in happened})
    rows = []
    for window, start, end, event, _ in happened:
        covering, scope = _window_audience(window, channels.get(window.organization_id, []), event)
        document = messages.maintenance_document(
            event=event,
            event_id=maintenance_key(window.pk, start, event),
            occurred_at=now,
            window=window,
            starts_at=start,
            ends_at=end,
            scope=scope,
        )
        rows += delivery_rows(covering, document, now)
    return deliveries_store(rows)


def _window_audience(
    window: MaintenanceWindow, channels: Sequence[NotificationChannel], event: str
) -> tuple[list[NotificationChannel], messages.MaintenanceScopeDocument]:
    """The channels that chose the event and cover the window's scope (an
    organization-wide window: all of them; else those covering any of its projects or
    endpoints), and the scope's names."""
    project_ids, endpoint_ids = window.scope_ids
    hearing = [channel for channel in channels if channel.hears(event)]
    names: messages.MaintenanceScopeDocument = {"projects": [], "endpoints": []}
    if not project_ids and not endpoint_ids:
        return hearing, names
    inside = _scope_endpoints(project_ids, endpoint_ids)
    all_projects = set(project_ids) | {project for _, project, _ in inside}
    all_endpoints = {pk for pk, _, _ in inside}
    names["projects"] = sorted(
        Project.objects.filter(pk__in=project_ids).values_list("name", flat=True)
    )
    names["endpoints"] = sorted(name for pk, _, name in inside if pk in endpoint_ids)
    covering = []
    for channel in hearing:
        projects, endpoints = channel.scope_ids
        if (not projects and not endpoints) or projects & all_projects or endpoints & all_endpoints:
            covering.append(channel)
    return covering, names


def _scope_endpoints(
    project_ids: set[uuid.UUID], endpoint_ids: set[uuid.UUID]
) -> list[tuple[uuid.UUID, uuid.UUID, str]]:
    """(id, project id, name) of the window's endpoints and of its projects' endpoints."""
    rows = Endpoint.objects.filter(Q(pk__in=endpoint_ids) | Q(project_id__in=project_ids))
    return list(rows.values_list("id", "project_id", "name"))
