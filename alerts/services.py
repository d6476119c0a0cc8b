"""Alert writes: channels, maintenance windows, and the outbox of notifications that
incidents raise (sending them is `delivery`'s).

The delivery rows are written in the transaction that opens or resolves the incident, and
their tasks queued when it commits: no notification is lost between the two.
"""

import secrets
import uuid
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from django.db import transaction
from django.utils import timezone

from accounts.audit import audit_record
from accounts.models import AuditAction, Organization, Project
from alerts import messages, validation
from alerts.delivery import HOLD, queue
from alerts.maintenance import maintenance_intervals
from alerts.models import (
    URL_KINDS,
    ChannelKind,
    Delivery,
    DeliveryStatus,
    MaintenanceWindow,
    NotificationChannel,
    NotificationEvent,
    Recurrence,
    Scoped,
    load_scopes,
)
from monitoring.certificates import CertificateWarning
from monitoring.models import Endpoint, EndpointStatus, Incident, StatusChange
from monitoring.probes.secrets import masked
from monitoring.targets import MASK

_EVENT_NAMESPACE = uuid.UUID("4f1c3a52-6c2e-4d0a-9a57-8f0b7e9e2d11")


# --- channels ---------------------------------------------------------------------------------


def mask_channel_config(kind: str, config: dict[str, Any]) -> dict[str, Any]:
    """The config as shown: a URL's path and query (where webhook credentials live) as ****."""
    if kind not in URL_KINDS:
        return dict(config)
    parts = urlsplit(config["url"])
    shown = f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"
    if parts.path not in ("", "/") or parts.query:
        shown += f"/{MASK}"
    return {**config, "url": shown}


@transaction.atomic
def channel_create(
    *,
    organization: Organization,
    name: str,
    kind: str,
    config: dict[str, Any],
    projects: Sequence[Project] = (),
    endpoints: Sequence[Endpoint] = (),
    enabled: bool = True,
) -> NotificationChannel:
    """Create a channel; a webhook gets a signing secret (readable once, as `secret`)."""
    channel = NotificationChannel(
        organization=organization,
        name=name,
        kind=kind,
        config=config,
        config_masked=mask_channel_config(kind, config),
        enabled=enabled,
        secret=secrets.token_urlsafe(32) if kind == ChannelKind.WEBHOOK else "",
    )
    channel.save(force_insert=True)
    _set_scope(channel, projects, endpoints)
    audit_record(
        action=AuditAction.CHANNEL_CREATED,
        organization_id=organization.pk,
        target=channel,
        details={"kind": kind},
    )
    return channel


@transaction.atomic
def channel_delete(*, channel: NotificationChannel) -> None:
    """Delete a channel with its delivery history, in the audit log."""
    audit_record(
        action=AuditAction.CHANNEL_DELETED,
        organization_id=channel.organization_id,
        target=channel,
        details={"kind": channel.kind},
    )
    channel.delete()


@transaction.atomic
def channel_update(
    *,
    channel: NotificationChannel,
    name: str | None = None,
    config: dict[str, Any] | None = None,
    enabled: bool | None = None,
    projects: Sequence[Project] | None = None,
    endpoints: Sequence[Endpoint] | None = None,
) -> NotificationChannel:
    """Change what is given (None: keep it). Turning a channel on again, or a new
    destination, clears the failing flag: the cause may be fixed."""
    # `config` is read only when it is being changed: reading it decrypts it (and loads it,
    # when the caller deferred it, as the admin does).
    fresh = (config is not None and config != channel.config) or (
        enabled is True and not channel.enabled
    )
    given = {"name": name, "config": config, "enabled": enabled}
    fields = {field for field, value in given.items() if value is not None}
    if name is not None:
        channel.name = name
    if enabled is not None:
        channel.enabled = enabled
    if config is not None:
        channel.config = config
        channel.config_masked = mask_channel_config(channel.kind, config)
    if fresh:
        channel.consecutive_failures, channel.failing_since = 0, None
    channel.updated_at = timezone.now()
    channel.save(update_fields=sorted(_channel_columns(fields, fresh)))
    fields |= _set_scope(channel, projects, endpoints)
    # Which fields changed, never their values: a config holds the destination's credentials.
    audit_record(
        action=AuditAction.CHANNEL_UPDATED,
        organization_id=channel.organization_id,
        target=channel,
        details={"fields": sorted(fields)},
    )
    return channel


def _channel_columns(fields: set[str], fresh: bool) -> set[str]:
    """The columns a change writes: the fields given, what follows from them, the time."""
    columns = {*fields, "updated_at"}
    if "config" in fields:
        columns.add("config_masked")
    if fresh:
        columns |= {"consecutive_failures", "failing_since"}
    return columns


def _set_scope(
    row: Scoped, projects: Sequence[Project] | None, endpoints: Sequence[Endpoint] | None
) -> set[str]:
    """Narrow a channel or window to the projects and endpoints given (None: leave it);
    returns which of the two were set."""
    if projects is not None:
        row.projects.set(projects)
    if endpoints is not None:
        row.endpoints.set(endpoints)
    return {
        name for name, ids in (("projects", projects), ("endpoints", endpoints)) if ids is not None
    }


@transaction.atomic
def maintenance_window_save(
    *,
    window: MaintenanceWindow,
    starts_at: datetime,
    ends_at: datetime,
    name: str = "",
    recurrence: str = Recurrence.ONCE,
    projects: Sequence[Project] | None = None,
    endpoints: Sequence[Endpoint] | None = None,
) -> MaintenanceWindow:
    """Create or change a maintenance window: its fields as given, its scope where given
    (None: leave that scope as it is)."""
    validation.maintenance_window(starts_at=starts_at, ends_at=ends_at, recurrence=recurrence)
    window.name, window.recurrence = name, recurrence
    window.starts_at, window.ends_at = starts_at, ends_at
    created = window._state.adding
    window.save()
    _set_scope(window, projects, endpoints)
    audit_record(
        action=AuditAction.MAINTENANCE_CREATED if created else AuditAction.MAINTENANCE_UPDATED,
        organization_id=window.organization_id,
        target=window,
        details=_window_details(window),
    )
    return window


@transaction.atomic
def maintenance_window_delete(*, window: MaintenanceWindow) -> None:
    """Delete a maintenance window, in the audit log (a window silences notifications)."""
    audit_record(
        action=AuditAction.MAINTENANCE_DELETED,
        organization_id=window.organization_id,
        target=window,
        details=_window_details(window),
    )
    window.delete()


def _window_details(window: MaintenanceWindow) -> dict[str, Any]:
    return {
        "starts_at": window.starts_at.isoformat(),
        "ends_at": window.ends_at.isoformat(),
        "recurrence": window.recurrence or None,
    }


# --- events -----------------------------------------------------------------------------------


def event_key(incident_id: object, event: str) -> uuid.UUID:
    """The idempotency key of an incident's event: the same wherever and however often it
    is computed, so a duplicate outbox write is refused by the unique constraint."""
    return uuid.uuid5(_EVENT_NAMESPACE, f"{incident_id}:{event}")


def _channels_by_org(org_ids: set[uuid.UUID]) -> dict[uuid.UUID, list[NotificationChannel]]:
    """Enabled channels of the organizations, by organization, with their scopes loaded."""
    channels = list(NotificationChannel.objects.filter(organization_id__in=org_ids, enabled=True))
    if not channels:
        return {}
    load_scopes(channels)
    found: dict[uuid.UUID, list[NotificationChannel]] = defaultdict(list)
    for channel in channels:
        found[channel.organization_id].append(channel)
    return found


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
    rows_of = Project.objects.filter(
        pk__in={endpoints[i.endpoint_id].project_id for i, _ in events}
    )
    found = list(rows_of.values_list("pk", "organization_id", "name"))
    projects = {pk: org for pk, org, _ in found}
    names = {pk: name for pk, _, name in found}
    channels = _channels_by_org(set(projects.values()))
    # Each event with the channels covering its endpoint; events nobody hears of are dropped.
    heard = [
        (incident, event, covering)
        for incident, event in events
        if (covering := _covering(channels, projects, endpoints[incident.endpoint_id]))
    ]
    if not heard:
        return 0
    held = _held_back([(i, e) for i, e, _ in heard], endpoints)
    quiet = _suppressed_openings([i for i, e, _ in heard if e == NotificationEvent.RESOLVED])
    rows = []
    for incident, event, covering in heard:
        endpoint = endpoints[incident.endpoint_id]
        key = event_key(incident.pk, event)
        document = messages.event_document(
            event=event,
            event_id=key,
            occurred_at=now,
            incident=incident,
            endpoint=endpoint,
            project_name=names[endpoint.project_id],
        )
        # A resolution is told only where its opening was: held in this batch, everywhere;
        # held earlier (and not released since), on those channels.
        resolution = event == NotificationEvent.RESOLVED
        everywhere = (incident.pk, event) in held or (
            resolution and (incident.pk, NotificationEvent.OPENED) in held
        )
        for channel in covering:
            suppressed = everywhere or (resolution and (incident.pk, channel.pk) in quiet)
            rows.append(_delivery(channel, event, key, incident, now, document, suppressed))
    stored = Delivery.objects.bulk_create(rows, ignore_conflicts=True)
    pending = [(str(d.pk), 0) for d in stored if d.status == DeliveryStatus.PENDING]
    if pending:
        transaction.on_commit(lambda: queue(pending))
    return len(stored)


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
    found = Project.objects.filter(pk__in={endpoints[c.endpoint_id].project_id for c, _ in events})
    rows_of = {
        pk: (org, name) for pk, org, name in found.values_list("pk", "organization_id", "name")
    }
    projects = {pk: org for pk, (org, _) in rows_of.items()}
    channels = _channels_by_org(set(projects.values()))
    heard = [
        (change, event, covering)
        for change, event in events
        if (covering := _covering(channels, projects, endpoints[change.endpoint_id]))
    ]
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
            project_name=rows_of[endpoint.project_id][1],
            change=change,
        )
        quiet = any(s <= change.changed_at < e for s, e in windows.get(endpoint.pk, ()))
        rows += [
            Delivery(
                channel=channel,
                event=event,
                event_id=key,
                endpoint=endpoint,
                occurred_at=now,
                payload=document,
                status=DeliveryStatus.SUPPRESSED if quiet else DeliveryStatus.PENDING,
                next_attempt_at=None if quiet else now + HOLD,
            )
            for channel in covering
        ]
    stored = Delivery.objects.bulk_create(rows, ignore_conflicts=True)
    pending = [(str(d.pk), 0) for d in stored if d.status == DeliveryStatus.PENDING]
    if pending:
        transaction.on_commit(lambda: queue(pending))
    return len(stored)


def _covering(
    channels: dict[uuid.UUID, list[NotificationChannel]],
    projects: dict[uuid.UUID, uuid.UUID],
    endpoint: Endpoint,
) -> list[NotificationChannel]:
    """The channels of the endpoint's organization whose scope covers it."""
    mine = channels.get(projects[endpoint.project_id], [])
    return [channel for channel in mine if channel.covers(endpoint)]


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
    involved = list({i.endpoint_id: endpoints[i.endpoint_id] for i, _ in events}.values())
    intervals = maintenance_intervals(involved, min(times), max(times) + timedelta(microseconds=1))
    return {
        (incident.pk, event)
        for (incident, event), moment in zip(events, times, strict=True)
        if any(s <= moment < e for s, e in intervals.get(incident.endpoint_id, ()))
    }


def _suppressed_openings(resolved: Sequence[Incident]) -> set[tuple[uuid.UUID, uuid.UUID]]:
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


def _delivery(
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
    found = Project.objects.filter(
        pk__in={endpoints[w.endpoint_id].project_id for w in warnings}
    ).values_list("pk", "organization_id", "name")
    projects = {pk: org for pk, org, _ in found}
    names = {pk: name for pk, _, name in found}
    channels = _channels_by_org(set(projects.values()))
    rows = []
    for warning in warnings:
        endpoint = endpoints[warning.endpoint_id]
        key = certificate_event_key(warning)
        document = messages.certificate_document(
            event_id=key,
            occurred_at=now,
            warning=warning,
            endpoint=endpoint,
            project_name=names[endpoint.project_id],
        )
        rows += [
            Delivery(
                channel=channel,
                event=NotificationEvent.CERTIFICATE_EXPIRING,
                event_id=key,
                endpoint=endpoint,
                occurred_at=now,
                payload=document,
                next_attempt_at=now + HOLD,
            )
            for channel in _covering(channels, projects, endpoint)
        ]
    stored = Delivery.objects.bulk_create(rows, ignore_conflicts=True)
    pending = [(str(d.pk), 0) for d in stored]
    if pending:
        transaction.on_commit(lambda: queue(pending))
    return len(stored)


@transaction.atomic
def deliveries_scrub(*, endpoint: Endpoint, secrets: Sequence[str]) -> int:
    """Mask the endpoint's secrets in the payloads and errors of its incidents' deliveries.

    For rows stored before probes masked every form a secret is sent in; returns how many
    changed.
    """
    deliveries = Delivery.objects.filter(incident__endpoint=endpoint).only("payload", "last_error")
    dirty = []
    for delivery in deliveries.iterator(chunk_size=1000):
        payload = _scrub_json(delivery.payload, secrets)
        last_error = masked(delivery.last_error, secrets)
        if payload != delivery.payload or last_error != delivery.last_error:
            delivery.payload, delivery.last_error = payload, last_error
            dirty.append(delivery)
    Delivery.objects.bulk_update(dirty, ["payload", "last_error"], batch_size=1000)
    return len(dirty)


def _scrub_json(value: Any, secrets: Sequence[str]) -> Any:
    if isinstance(value, str):
        return masked(value, secrets)
    if isinstance(value, list):
        return [_scrub_json(item, secrets) for item in value]
    if isinstance(value, dict):
        return {key: _scrub_json(item, secrets) for key, item in value.items()}
    return value
