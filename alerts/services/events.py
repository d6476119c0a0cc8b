"""The outbox of notifications that the check pipeline's changes raise: incidents opened
and resolved, endpoints degraded and recovered, certificates nearing their expiry (sending
them is `alerts.delivery`'s).

The delivery rows are written in the transaction that opens or resolves the incident, and
their tasks queued when it commits: no notification is lost between the two.
"""

import uuid
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import NamedTuple, TypeVar

from django.db import transaction
from django.utils import timezone

from accounts.models import Project
from alerts import messages
from alerts.delivery import HOLD, queue
from alerts.maintenance import maintenance_intervals
from alerts.models import (
    Delivery,
    DeliveryStatus,
    NotificationChannel,
    NotificationEvent,
    load_scopes,
)
from monitoring.certificates import CertificateWarning
from monitoring.models import Endpoint, EndpointStatus, Incident, StatusChange

_Source = TypeVar("_Source")  # what an event is about: an incident, a status change
_EVENT_NAMESPACE = uuid.UUID("4f1c3a52-6c2e-4d0a-9a57-8f0b7e9e2d11")

# --- events -----------------------------------------------------------------------------------


def event_key(incident_id: object, event: str) -> uuid.UUID:
    """The idempotency key of an incident's event: the same wherever and however often it
    is computed, so a duplicate outbox write is refused by the unique constraint."""
    return uuid.uuid5(_EVENT_NAMESPACE, f"{incident_id}:{event}")


def channels_by_org(org_ids: set[uuid.UUID]) -> dict[uuid.UUID, list[NotificationChannel]]:
    """Enabled channels of the organizations, by organization, with their scopes loaded."""
    channels = list(NotificationChannel.objects.filter(organization_id__in=org_ids, enabled=True))
    if not channels:
        return {}
    load_scopes(channels)
    found: dict[uuid.UUID, list[NotificationChannel]] = defaultdict(list)
    for channel in channels:
        found[channel.organization_id].append(channel)
    return found


class Audience(NamedTuple):
    """Who may hear of events on endpoints of some projects: each project's organization and
    name, and those organizations' enabled channels."""

    organizations: dict[uuid.UUID, uuid.UUID]
    names: dict[uuid.UUID, str]
    channels: dict[uuid.UUID, list[NotificationChannel]]

    def covering(self, endpoint: Endpoint, event: str) -> list[NotificationChannel]:
        """The channels of the endpoint's organization whose scope covers it and that chose
        the event."""
        mine = self.channels.get(self.organizations[endpoint.project_id], [])
        return [c for c in mine if c.covers(endpoint) and c.hears(event)]


def audience_of(project_ids: set[uuid.UUID]) -> Audience:
    """The audience of events on endpoints of these projects, read once for a batch."""
    found = list(
        Project.objects.filter(pk__in=project_ids).values_list("pk", "organization_id", "name")
    )
    organizations = {pk: organization for pk, organization, _ in found}
    names = {pk: name for pk, _, name in found}
    return Audience(organizations, names, channels_by_org(set(organizations.values())))


def _heard(
    events: Sequence[tuple[_Source, str]], endpoint_of: Callable[[_Source], Endpoint]
) -> tuple[Audience, list[tuple[_Source, str, list[NotificationChannel]]]]:
    """The events' audience, and each event with the channels covering its endpoint; the
    events nobody hears of are left out."""
    audience = audience_of({endpoint_of(source).project_id for source, _ in events})
    heard = [
        (source, event, covering)
        for source, event in events
        if (covering := audience.covering(endpoint_of(source), event))
    ]
    return audience, heard


def delivery_rows(
    channels: Sequence[NotificationChannel],
    document: messages.EventDocument,
    now: datetime,
    endpoint: Endpoint | None = None,
    quiet: bool = False,
) -> list[Delivery]:
    """A delivery of the document per channel (suppressed for good when `quiet`)."""
    return [
        Delivery(
            channel=channel,
            event=document["event"],
            event_id=uuid.UUID(document["id"]),
            endpoint=endpoint,
            occurred_at=now,
            payload=document,
            status=DeliveryStatus.SUPPRESSED if quiet else DeliveryStatus.PENDING,
            next_attempt_at=None if quiet else now + HOLD,
        )
        for channel in channels
    ]


def deliveries_store(rows: list[Delivery]) -> int:
    """Insert the deliveries not written yet (a key written before is refused) and queue the
    pending ones when the transaction commits; returns the deliveries written."""
    if not rows:
        return 0
    stored = Delivery.objects.bulk_create(rows, ignore_conflicts=True)
    pending = [(str(d.pk), 0) for d in stored if d.status == DeliveryStatus.PENDING]
    if pending:
        transaction.on_commit(lambda: queue(pending))
    return len(stored)


def notifications_queue(
    *,
    opened: Sequence[Incident],
    resolved: Sequence[Incident],
    endpoints: dict[uuid.UUID, Endpoint],
) -> int:
    """Write a delivery per channel for each incident opened or resolved, and queue them
    once the transaction commits. Called by `checks_record`, inside its transaction.

    Nothing is sent for an endpoint in maintenance: its deliveries are stored as
    suppressed, and so is the resolution of an incident whose opening was. A held opening
    is sent when the maintenance ends if the incident is still open
    (`delivery.openings_release`). Returns the deliveries written. No query runs when no
    incident moved.
    """
    events = [(i, NotificationEvent.OPENED) for i in opened]
    events += [(i, NotificationEvent.RESOLVED) for i in resolved]
    if not events:
        return 0
    now = timezone.now()
    audience, heard = _heard(events, lambda incident: endpoints[incident.measured_endpoint_id])
    if not heard:
        return 0
    held = _held_back([(i, e) for i, e, _ in heard], endpoints)
    quiet = suppressed_openings([i for i, e, _ in heard if e == NotificationEvent.RESOLVED])
    rows = []
    for incident, event, covering in heard:
        endpoint = endpoints[incident.measured_endpoint_id]
        key = event_key(incident.pk, event)
        document = messages.event_document(
            event=event,
            event_id=key,
            occurred_at=now,
            incident=incident,
            endpoint=endpoint,
            project_name=audience.names[endpoint.project_id],
        )
        # A resolution is told only where its opening was: held in this batch, everywhere;
        # held earlier (and not released since), on those channels.
        resolution = event == NotificationEvent.RESOLVED
        everywhere = (incident.pk, event) in held or (
            resolution and (incident.pk, NotificationEvent.OPENED) in held
        )
        for channel in covering:
            suppressed = everywhere or (resolution and (incident.pk, channel.pk) in quiet)
            rows.append(delivery_build(channel, event, key, incident, now, document, suppressed))
    return deliveries_store(rows)


def _degradation_event(change: StatusChange) -> str:
    """`endpoint.degraded` on entering degraded, `endpoint.recovered` on leaving it for up;
    "" for any other move (going down or back up from down is an incident's to tell)."""
    if change.to_status == EndpointStatus.DEGRADED:
        return NotificationEvent.DEGRADED
    if change.from_status == EndpointStatus.DEGRADED and change.to_status == EndpointStatus.UP:
        return NotificationEvent.RECOVERED
    return ""


def degradations_queue(
    *, changes: Sequence[StatusChange], endpoints: dict[uuid.UUID, Endpoint]
) -> int:
    """Write a delivery per channel for each endpoint that became degraded or recovered from
    it, and queue them once the transaction commits. Called by `checks_record`, inside its
    transaction, with the status changes it just made.

    Each change happens once (a batch delivered twice moves nothing), and its key is derived
    from the change, so the outbox's unique constraint refuses a second write all the same.
    A change inside a maintenance window of its endpoint is stored suppressed, for good:
    slowness during maintenance is expected, and stale once it ends. Returns the deliveries
    written; no query runs when no endpoint entered or left degraded.
    """
    events = [(c, event) for c in changes if (event := _degradation_event(c))]
    if not events:
        return 0
    now = timezone.now()
    audience, heard = _heard(events, lambda change: endpoints[change.endpoint_id])
    if not heard:
        return 0
    times = [change.changed_at for change, _, _ in heard]
    involved = list({c.endpoint_id: endpoints[c.endpoint_id] for c, _, _ in heard}.values())
    windows = maintenance_intervals(involved, min(times), max(times) + timedelta(microseconds=1))
    rows = []
    for change, event, covering in heard:
        endpoint = endpoints[change.endpoint_id]
        key = event_key(change.pk, event)
        document = messages.event_document(
            event=event,
            event_id=key,
            occurred_at=now,
            incident=None,
            endpoint=endpoint,
            project_name=audience.names[endpoint.project_id],
            change=change,
        )
        quiet = any(s <= change.changed_at < e for s, e in windows.get(endpoint.pk, ()))
        rows += delivery_rows(covering, document, now, endpoint, quiet)
    return deliveries_store(rows)


def _event_time(incident: Incident, event: str) -> datetime:
    """When the event happened: the incident's start, or its end."""
    moment = incident.started_at if event == NotificationEvent.OPENED else incident.resolved_at
    return moment or incident.started_at


def _held_back(
    events: Sequence[tuple[Incident, str]], endpoints: dict[uuid.UUID, Endpoint]
) -> set[tuple[uuid.UUID, str]]:
    """(incident id, event) of the events maintenance holds back: those that happened
    inside a window of their endpoint (judged at their own time, not at ingest's)."""
    times = [_event_time(incident, event) for incident, event in events]
    involved = list(
        {i.measured_endpoint_id: endpoints[i.measured_endpoint_id] for i, _ in events}.values()
    )
    intervals = maintenance_intervals(involved, min(times), max(times) + timedelta(microseconds=1))
    return {
        (incident.pk, event)
        for (incident, event), moment in zip(events, times, strict=True)
        if any(s <= moment < e for s, e in intervals.get(incident.measured_endpoint_id, ()))
    }


def suppressed_openings(resolved: Sequence[Incident]) -> set[tuple[uuid.UUID, uuid.UUID]]:
    """(incident id, channel id) of the openings of these incidents that maintenance held
    back and that were not sent since: their resolutions are held back too."""
    if not resolved:
        return set()
    # By incident (an indexed foreign key): the deliveries table only grows.
    held = Delivery.objects.filter(
        incident_id__in=[i.pk for i in resolved],
        event=NotificationEvent.OPENED,
        status=DeliveryStatus.SUPPRESSED,
    )
    return set(held.values_list("incident_id", "channel_id"))


def delivery_build(
    channel: NotificationChannel,
    event: str,
    key: uuid.UUID,
    incident: Incident,
    now: datetime,
    document: messages.EventDocument,
    suppressed: bool,
) -> Delivery:
    next_look: datetime | None = now + HOLD
    if suppressed:  # an opening is looked at again: it is sent if it outlasts the window
        next_look = now if event == NotificationEvent.OPENED else None
    return Delivery(
        channel=channel,
        event=event,
        event_id=key,
        incident=incident,
        occurred_at=now,
        payload=document,
        status=DeliveryStatus.SUPPRESSED if suppressed else DeliveryStatus.PENDING,
        next_attempt_at=next_look,
    )


def certificate_event_key(warning: CertificateWarning) -> uuid.UUID:
    """The idempotency key of a threshold crossed by one certificate of one endpoint: the
    same however often it is computed, so the outbox refuses a second write of it."""
    certificate, threshold = warning.certificate, warning.threshold
    return uuid.uuid5(
        _EVENT_NAMESPACE, f"{warning.endpoint_id}:{certificate.fingerprint}:{threshold}"
    )


def certificate_notifications_queue(
    *, warnings: Sequence[CertificateWarning], endpoints: dict[uuid.UUID, Endpoint]
) -> int:
    """Write a `certificate.expiring` delivery per channel for each threshold a certificate
    crossed, and queue them once the transaction commits. Called by `checks_record`.

    Maintenance holds nothing back: an expiring certificate is news whatever the endpoint
    is going through, and nothing would tell it again. No query runs with no warning.
    """
    if not warnings:
        return 0
    now = timezone.now()
    audience = audience_of({endpoints[w.endpoint_id].project_id for w in warnings})
    rows = []
    for warning in warnings:
        endpoint = endpoints[warning.endpoint_id]
        key = certificate_event_key(warning)
        document = messages.certificate_document(
            event_id=key,
            occurred_at=now,
            warning=warning,
            endpoint=endpoint,
            project_name=audience.names[endpoint.project_id],
        )
        covering = audience.covering(endpoint, NotificationEvent.CERTIFICATE_EXPIRING)
        rows += delivery_rows(covering, document, now, endpoint)
    return deliveries_store(rows)
