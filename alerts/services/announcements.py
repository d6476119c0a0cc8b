"""Announcing what people do on incidents: acknowledgements (`incident.acknowledged`) and
updates (`incident.updated`), read from `monitoring`'s outboxes by the beat sweep.

`monitoring` cannot call up into `alerts`, so it leaves marks: an acknowledgement's
`IncidentActivity` row with `announced_at` null, an `IncidentUpdate` with
`channels_notified_at` null. Each pass claims a batch of them (skip-locked, then a
conditional UPDATE that only unmarked rows take), writes one delivery per channel that
chose the event and covers the incident, keyed so that the outbox's unique constraint
refuses a second write of it, and queues them when the claim commits: each announcement is
written exactly once however many sweeps race.

An announcement of an incident whose opening maintenance held back from a channel is held
back from that channel for good, as its resolution is: the channel never heard of it.
"""

import uuid
from collections.abc import Callable, Sequence
from datetime import datetime

from django.db import transaction
from django.db.models import Prefetch
from django.utils import timezone

from alerts import messages
from alerts.models import NotificationChannel, NotificationEvent
from alerts.services.events import (
    channels_by_org,
    deliveries_store,
    delivery_build,
    event_key,
    suppressed_openings,
)
from healthmon.encryption import encrypted_fields
from monitoring.models import (
    ActivityKind,
    Endpoint,
    Incident,
    IncidentActivity,
    IncidentUpdate,
)

BATCH = 200


def announcements_queue(*, now: datetime | None = None, limit: int = BATCH) -> int:
    """Announce pending acknowledgements and updates; returns the deliveries written."""
    now = now or timezone.now()
    return acknowledgements_announce(now=now, limit=limit) + updates_announce(now=now, limit=limit)


@transaction.atomic
def acknowledgements_announce(*, now: datetime, limit: int = BATCH) -> int:
    """Claim unannounced acknowledgements and write their `incident.acknowledged`
    deliveries (queued on commit)."""
    pending = IncidentActivity.objects.filter(
        kind=ActivityKind.ACKNOWLEDGED, announced_at__isnull=True
    )
    claimed = list(
        pending.order_by("at")
        .select_for_update(skip_locked=True)
        .values_list("pk", "incident_id")[:limit]
    )
    ids = [pk for pk, _ in claimed]
    if not ids or not pending.filter(pk__in=ids).update(announced_at=now):
        return 0
    incidents = _incidents({incident_id for _, incident_id in claimed})

    def document(
        incident: Incident, key: uuid.UUID, endpoints: list[Endpoint]
    ) -> messages.EventDocument:
        by = incident.acknowledged_by
        return messages.acknowledgement_document(
            event_id=key,
            incident=incident,
            endpoints=endpoints,
            project_name=_project_name(incident),
            by_email=by.email if by else None,
        )

    news = [(incidents[i], event_key(i, NotificationEvent.ACKNOWLEDGED)) for _, i in claimed]
    return _write(NotificationEvent.ACKNOWLEDGED, news, document, now)


@transaction.atomic
def updates_announce(*, now: datetime, limit: int = BATCH) -> int:
    """Claim updates not yet told to channels and write their `incident.updated`
    deliveries (queued on commit)."""
    pending = IncidentUpdate.objects.filter(channels_notified_at__isnull=True)
    claimed = list(
        pending.order_by("created_at")
        .select_for_update(skip_locked=True)
        .only("id", "incident_id", "state", "message", "created_at")[:limit]
    )
    ids = [u.pk for u in claimed]
    if not ids or not pending.filter(pk__in=ids).update(channels_notified_at=now):
        return 0
    incidents = _incidents({u.incident_id for u in claimed})
    updates = {event_key(u.pk, NotificationEvent.UPDATED): u for u in claimed}

    def document(
        incident: Incident, key: uuid.UUID, endpoints: list[Endpoint]
    ) -> messages.EventDocument:
        return messages.update_document(
            event_id=key,
            incident=incident,
            update=updates[key],
            endpoints=endpoints,
            project_name=_project_name(incident),
        )

    news = [(incidents[u.incident_id], key) for key, u in updates.items()]
    return _write(NotificationEvent.UPDATED, news, document, now)


Document = Callable[[Incident, uuid.UUID, list[Endpoint]], messages.EventDocument]


def _write(
    event: str, news: Sequence[tuple[Incident, uuid.UUID]], document: Document, now: datetime
) -> int:
    """Write a delivery per channel that chose the event and covers the incident; queue
    the pending ones when the transaction commits."""
    channels = channels_by_org({incident.organization_id for incident, _ in news})
    quiet = suppressed_openings([incident for incident, _ in news])
    rows = []
    for incident, key in news:
        endpoints = _endpoints(incident)
        hearing = _hearing(channels.get(incident.organization_id, []), event, endpoints)
        if not hearing:
            continue
        body = document(incident, key, endpoints)
        rows += [
            delivery_build(
                channel, event, key, incident, now, body, (incident.pk, channel.pk) in quiet
            )
            for channel in hearing
        ]
    return deliveries_store(rows)


def _hearing(
    channels: list[NotificationChannel], event: str, endpoints: list[Endpoint]
) -> list[NotificationChannel]:
    """The channels that chose the event and cover one of the endpoints (or the whole
    organization: a declared incident whose endpoints are gone still reaches those)."""
    return [
        channel
        for channel in channels
        if event in (channel.events or [])
        and (any(channel.covers(endpoint) for endpoint in endpoints) or not any(channel.scope_ids))
    ]


def _incidents(ids: set[uuid.UUID]) -> dict[uuid.UUID, Incident]:
    """The incidents with their endpoint and project, declared endpoints, and acknowledger,
    in a fixed number of queries (no endpoint's target is read)."""
    declared = Endpoint.objects.without_secrets().order_by("name", "id")
    rows = (
        Incident.objects.filter(pk__in=ids)
        .select_related("endpoint__project", "acknowledged_by")
        .defer(*encrypted_fields(Endpoint, "endpoint"))
        .prefetch_related(Prefetch("endpoints", declared))
    )
    return {incident.pk: incident for incident in rows}


def _endpoints(incident: Incident) -> list[Endpoint]:
    """The measured endpoint, or the declared incident's endpoints."""
    if incident.endpoint is not None:
        return [incident.endpoint]
    return list(incident.endpoints.all())


def _project_name(incident: Incident) -> str:
    """The measured endpoint's project's name ("" for a declared incident)."""
    return incident.endpoint.project.name if incident.endpoint is not None else ""
