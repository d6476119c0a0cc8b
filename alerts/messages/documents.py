"""The event documents notifications carry: what webhooks receive as JSON, and what the
renderings (`alerts.messages.text`) read. Each names the endpoint, its project, the cause
and a link to the endpoint's page; a resolution also says how long the incident lasted."""

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any, NotRequired, TypedDict

from django.conf import settings
from django.urls import reverse

from alerts.models import MaintenanceWindow, NotificationEvent
from monitoring.acknowledgement import ack_link
from monitoring.certificates import CertificateWarning
from monitoring.incidents import incident_title
from monitoring.models import AckVia, Endpoint, Incident, IncidentUpdate, StatusChange


class IncidentDocument(TypedDict):
    """The incident in an event document."""

    id: str
    endpoint: str | None  # None: a declared incident (its endpoints: `endpoints`)
    started_at: str
    resolved_at: str | None
    duration_seconds: float | None
    cause: str
    # The one-click acknowledge link while the incident is open and unacknowledged.
    ack_url: str | None


class EndpointDocument(TypedDict):
    """The endpoint in an event document: no target (it may hold credentials)."""

    id: str
    name: str
    type: str
    url: str


class ProjectDocument(TypedDict):
    """The endpoint's project in an event document."""

    id: str
    name: str


class ChangeDocument(TypedDict):
    """The status change an `endpoint.*` event tells of."""

    from_status: str
    to_status: str
    changed_at: str
    reason: str


class CertificateDocument(TypedDict):
    """The certificate in a `certificate.expiring` event."""

    expires_at: str
    days_left: int
    threshold: int | str  # as configured: days, or a share of the lifetime ("20%")
    issuer: str
    subject: str
    fingerprint: str


class EventDocument(TypedDict):
    """An event as webhooks receive it and deliveries store it."""

    event: str
    id: str
    occurred_at: str
    incident: IncidentDocument | None
    endpoint: EndpointDocument | None
    project: ProjectDocument | None
    change: NotRequired[ChangeDocument]  # `endpoint.degraded` and `endpoint.recovered` only
    certificate: NotRequired[CertificateDocument]  # `certificate.expiring` only
    escalation: NotRequired["EscalationDetails"]  # `incident.escalated` only
    # `incident.acknowledged` and `incident.updated`: the incident's title and page, and a
    # declared incident's endpoints (its `endpoint` and `project` are null).
    title: NotRequired[str]
    incident_url: NotRequired[str]
    endpoints: NotRequired[list[EndpointDocument]]
    acknowledgement: NotRequired["AcknowledgementDocument"]  # `incident.acknowledged` only
    update: NotRequired["UpdateDocument"]  # `incident.updated` only
    heartbeat: NotRequired["HeartbeatDocument"]  # `heartbeat.late` only
    maintenance: NotRequired["MaintenanceDocument"]  # `maintenance.started` and `.ended` only


def endpoint_link(endpoint_id: object) -> str:
    """The absolute URL of an endpoint's dashboard page."""
    return settings.WEB_BASE_URL + reverse("endpoint", kwargs={"endpoint_id": endpoint_id})


def _incident(incident: Incident) -> IncidentDocument:
    return {
        "id": str(incident.pk),
        "endpoint": str(incident.endpoint_id) if incident.endpoint_id else None,
        "started_at": incident.started_at.isoformat(),
        "resolved_at": incident.resolved_at.isoformat() if incident.resolved_at else None,
        "duration_seconds": incident.duration_seconds,
        "cause": incident.cause,
        "ack_url": ack_link(incident.pk)
        if incident.resolved_at is None and incident.acknowledged_at is None
        else None,
    }


def event_document(
    *,
    event: str,
    event_id: object,
    occurred_at: datetime,
    incident: Incident | None,
    endpoint: Endpoint | None,
    project_name: str,
    change: StatusChange | None = None,
) -> EventDocument:
    """The event as webhooks receive it: `{event, id, occurred_at, incident, endpoint,
    project}` (the endpoint without its target, which may hold credentials), and the
    `change` of an `endpoint.*` event."""
    document = _document(event, event_id, occurred_at, incident, endpoint, project_name)
    if change is not None:
        document["change"] = {
            "from_status": change.from_status,
            "to_status": change.to_status,
            "changed_at": change.changed_at.isoformat(),
            "reason": change.reason,
        }
    return document


def _document(
    event: str,
    event_id: object,
    occurred_at: datetime,
    incident: Incident | None,
    endpoint: Endpoint | None,
    project_name: str,
) -> EventDocument:
    return {
        "event": event,
        "id": str(event_id),
        "occurred_at": occurred_at.isoformat(),
        "incident": _incident(incident) if incident else None,
        "endpoint": None
        if endpoint is None
        else {
            "id": str(endpoint.pk),
            "name": endpoint.name,
            "type": endpoint.type,
            "url": endpoint_link(endpoint.pk),
        },
        "project": None
        if endpoint is None
        else {"id": str(endpoint.project_id), "name": project_name},
    }


def certificate_document(
    *,
    event_id: object,
    occurred_at: datetime,
    warning: CertificateWarning,
    endpoint: Endpoint,
    project_name: str,
) -> EventDocument:
    """A `certificate.expiring` event: the endpoint, and the certificate with the threshold
    it crossed (no incident: an expiring certificate is no downtime)."""
    document = event_document(
        event=NotificationEvent.CERTIFICATE_EXPIRING,
        event_id=event_id,
        occurred_at=occurred_at,
        incident=None,
        endpoint=endpoint,
        project_name=project_name,
    )
    certificate = warning.certificate
    document["certificate"] = {
        "expires_at": certificate.expires_at.isoformat(),
        "days_left": warning.days_left,
        "threshold": warning.threshold,
        "issuer": certificate.issuer,
        "subject": certificate.subject,
        "fingerprint": certificate.fingerprint,
    }
    return document


def encode(document: Mapping[str, Any]) -> bytes:
    """The exact bytes sent (and signed): compact, keys in a fixed order."""
    return json.dumps(document, separators=(",", ":"), sort_keys=True).encode()


class EscalationPolicyDocument(TypedDict):
    """The policy an `incident.escalated` event follows."""

    id: str
    name: str


class EscalationDetails(TypedDict):
    """Where an `incident.escalated` event stands in its policy: `step` of `steps` (from 1),
    and `reminder` (0 for the step itself, then 1, 2, ... for re-sends of the last step)."""

    policy: EscalationPolicyDocument
    step: int
    steps: int
    reminder: int


def escalation_document(
    *,
    event_id: object,
    occurred_at: datetime,
    incident: Incident,
    endpoint: Endpoint,
    project_name: str,
    policy_id: object,
    policy_name: str,
    step: int,
    steps: int,
    reminder: int,
) -> EventDocument:
    """An `incident.escalated` event: the opening's document, and `escalation` saying which
    policy, which step of how many (from 1) and which reminder (0: the step itself)."""
    document = event_document(
        event=NotificationEvent.ESCALATED,
        event_id=event_id,
        occurred_at=occurred_at,
        incident=incident,
        endpoint=endpoint,
        project_name=project_name,
    )
    document["escalation"] = {
        "policy": {"id": str(policy_id), "name": policy_name},
        "step": step,
        "steps": steps,
        "reminder": reminder,
    }
    return document


class HeartbeatDocument(TypedDict):
    """The missed ping of a `heartbeat.late` event."""

    expected_at: str  # when a ping was due (the lateness deadline)
    grace_seconds: int  # how much later the heartbeat goes down and opens an incident
    down_at: str | None  # that moment


class MaintenanceScopeDocument(TypedDict):
    """What a window covers, by name (both empty: the whole organization)."""

    projects: list[str]
    endpoints: list[str]


class MaintenanceDocument(TypedDict):
    """The occurrence of a maintenance window a `maintenance.*` event tells of."""

    id: str
    name: str
    starts_at: str
    ends_at: str
    rrule: str | None
    timezone: str
    scope: MaintenanceScopeDocument


def heartbeat_late_document(
    *,
    event_id: object,
    occurred_at: datetime,
    endpoint: Endpoint,
    project_name: str,
    expected_at: datetime,
    grace_seconds: int,
    down_at: datetime | None,
) -> EventDocument:
    """A `heartbeat.late` event: the endpoint and project, when a ping was expected and the
    grace left before it goes down (no incident: late is no downtime yet)."""
    document = event_document(
        event=NotificationEvent.HEARTBEAT_LATE,
        event_id=event_id,
        occurred_at=occurred_at,
        incident=None,
        endpoint=endpoint,
        project_name=project_name,
    )
    document["heartbeat"] = {
        "expected_at": expected_at.isoformat(),
        "grace_seconds": grace_seconds,
        "down_at": down_at.isoformat() if down_at else None,
    }
    return document


class AcknowledgementDocument(TypedDict):
    """Who acknowledged an incident, when and how (`by`: null for a notification link)."""

    at: str
    by: str | None
    via: str


class UpdateDocument(TypedDict):
    """An update posted on an incident: its status and Markdown message."""

    id: str
    status: str
    message: str
    created_at: str


def incident_link(incident_id: object) -> str:
    """The absolute URL of an incident's page."""
    return settings.WEB_BASE_URL + reverse("incident", kwargs={"incident_id": incident_id})


def _news_document(
    event: str,
    event_id: object,
    occurred_at: datetime,
    incident: Incident,
    endpoints: list[Endpoint],
    project_name: str,
) -> EventDocument:
    """The shared part of `incident.acknowledged` and `incident.updated`: the incident with
    its title and page; its endpoint and project, or a declared incident's endpoints."""
    measured = incident.measured_endpoint if incident.endpoint_id else None
    document = _document(event, event_id, occurred_at, incident, measured, project_name)
    document["title"] = incident_title(incident)
    document["incident_url"] = incident_link(incident.pk)
    document["endpoints"] = [
        {"id": str(e.pk), "name": e.name, "type": e.type, "url": endpoint_link(e.pk)}
        for e in endpoints
    ]
    return document


def acknowledgement_document(
    *,
    event_id: object,
    incident: Incident,
    endpoints: list[Endpoint],
    project_name: str,
    by_email: str | None,
) -> EventDocument:
    """An `incident.acknowledged` event: the incident (acknowledged: no link any more) and
    `acknowledgement: {at, by, via}`."""
    at = incident.acknowledged_at or incident.started_at
    document = _news_document(
        NotificationEvent.ACKNOWLEDGED, event_id, at, incident, endpoints, project_name
    )
    by = None if incident.acknowledged_via == AckVia.LINK else by_email
    document["acknowledgement"] = {
        "at": at.isoformat(),
        "by": by,
        "via": incident.acknowledged_via,
    }
    return document


def update_document(
    *,
    event_id: object,
    incident: Incident,
    update: IncidentUpdate,
    endpoints: list[Endpoint],
    project_name: str,
) -> EventDocument:
    """An `incident.updated` event: the incident (its acknowledge link while open and
    unacknowledged) and `update: {id, status, message, created_at}`."""
    document = _news_document(
        NotificationEvent.UPDATED, event_id, update.created_at, incident, endpoints, project_name
    )
    document["update"] = {
        "id": str(update.pk),
        "status": update.state,
        "message": update.message,
        "created_at": update.created_at.isoformat(),
    }
    return document


def maintenance_document(
    *,
    event: str,
    event_id: object,
    occurred_at: datetime,
    window: MaintenanceWindow,
    starts_at: datetime,
    ends_at: datetime,
    scope: MaintenanceScopeDocument,
) -> EventDocument:
    """A `maintenance.started` or `maintenance.ended` event: the window's name, the
    occurrence's start and end, and the names of what it covers."""
    document = _document(event, event_id, occurred_at, None, None, "")
    document["maintenance"] = {
        "id": str(window.pk),
        "name": window.name or "Scheduled maintenance",
        "starts_at": starts_at.isoformat(),
        "ends_at": ends_at.isoformat(),
        "rrule": window.rrule or None,
        "timezone": window.timezone,
        "scope": scope,
    }
    return document
