"""What notifications say: the event document webhooks receive, and its renderings for
chat webhooks and mail. Each names the endpoint, its project, the cause and a link to
the endpoint's page; a resolution also says how long the incident lasted."""

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any, NotRequired, TypedDict

from django.conf import settings
from django.urls import reverse

from alerts.models import ChannelKind, MaintenanceWindow, NotificationEvent
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


def duration_text(seconds: float) -> str:
    """`1 h 4 min`, `3 min 20 s`, `12 s`."""
    whole = round(seconds)
    parts: list[str] = []
    for unit, size in (("d", 86_400), ("h", 3600), ("min", 60), ("s", 1)):
        if whole >= size or (unit == "s" and not parts):
            parts.append(f"{whole // size} {unit}")
            whole %= size
    return " ".join(parts[:2])


def _about(document: EventDocument) -> tuple[IncidentDocument, EndpointDocument, ProjectDocument]:
    """The incident, endpoint and project of an incident event (a test event has none)."""
    incident, endpoint, project = document["incident"], document["endpoint"], document["project"]
    if incident is None or endpoint is None or project is None:
        raise ValueError(f"A {document['event']} event names no incident.")
    return incident, endpoint, project


def headline(document: EventDocument) -> str:
    """One line: what happened to what."""
    if document["event"] == NotificationEvent.TEST:
        return "healthmon test notification: this channel works."
    if "acknowledgement" in document or "update" in document:
        return news_headline(document)
    if "heartbeat" in document or "maintenance" in document:
        return schedule_headline(document)
    if "change" in document:
        return _change_headline(document)
    if "certificate" in document and document["endpoint"] and document["project"]:
        endpoint, days = document["endpoint"], document["certificate"]["days_left"]
        where = f"{endpoint['name']} ({document['project']['name']})"
        return f"CERTIFICATE EXPIRING: {where} in {days} day{'' if days == 1 else 's'}"
    if "escalation" in document:
        return escalation_headline(document)
    incident, endpoint, project = _about(document)
    where = f"{endpoint['name']} ({project['name']})"
    if document["event"] == NotificationEvent.OPENED:
        return f"DOWN: {where}"
    duration = incident["duration_seconds"] or 0
    return f"RECOVERED: {where} after {duration_text(duration)}"


def _change_headline(document: EventDocument) -> str:
    endpoint, project = document["endpoint"], document["project"]
    if endpoint is None or project is None:
        raise ValueError(f"A {document['event']} event names no endpoint.")
    where = f"{endpoint['name']} ({project['name']})"
    if document["event"] == NotificationEvent.DEGRADED:
        return f"DEGRADED: {where} is slower than its threshold"
    return f"NO LONGER DEGRADED: {where}"


def details(document: EventDocument) -> list[str]:
    """The lines under the headline."""
    if document["event"] == NotificationEvent.TEST:
        return [f"Sent at {document['occurred_at']}."]
    if "acknowledgement" in document or "update" in document:
        return news_details(document)
    if "heartbeat" in document or "maintenance" in document:
        return schedule_details(document)
    if "change" in document and document["endpoint"] is not None:
        change = document["change"]
        return [
            f"Last check: {change['reason'] or 'ok'}",
            f"Since: {change['changed_at']}",
            document["endpoint"]["url"],
        ]
    if "certificate" in document and document["endpoint"]:
        certificate = document["certificate"]
        return [
            f"Expires: {certificate['expires_at']}",
            f"Issuer: {certificate['issuer']}",
            f"Subject: {certificate['subject']}",
            document["endpoint"]["url"],
        ]
    incident, endpoint, _ = _about(document)
    lines = [f"Cause: {incident['cause'] or 'unknown'}", f"Since: {incident['started_at']}"]
    lines += escalation_lines(document)
    if incident["resolved_at"]:
        lines += [
            f"Resolved: {incident['resolved_at']}",
            f"Duration: {duration_text(incident['duration_seconds'] or 0)}",
        ]
    return [*lines, endpoint["url"], *ack_lines(incident)]


def chat_body(kind: str, document: EventDocument) -> dict[str, Any]:
    """The JSON a Slack, Teams (Workflows) or Discord incoming webhook takes."""
    title, lines = headline(document), details(document)
    if kind == ChannelKind.SLACK:
        return {"text": "\n".join([f"*{title}*", *lines])}
    if kind == ChannelKind.DISCORD:
        # Discord caps content at 2,000 characters; mentions in names must not ping anyone.
        return {
            "content": "\n".join([f"**{title}**", *lines])[:2000],
            "allowed_mentions": {"parse": []},
        }
    card = {
        "type": "AdaptiveCard",
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "version": "1.4",
        "body": [
            {"type": "TextBlock", "text": title, "weight": "Bolder", "wrap": True},
            *({"type": "TextBlock", "text": line, "wrap": True} for line in lines),
        ],
    }
    return {
        "type": "message",
        "attachments": [
            {"contentType": "application/vnd.microsoft.card.adaptive", "content": card}
        ],
    }


def mail_subject(document: EventDocument) -> str:
    """A one-line subject (names cannot break it: mail headers take no newlines)."""
    return " ".join(f"[healthmon] {headline(document)}".split())


def mail_body(document: EventDocument) -> str:
    """A plain-text body."""
    return "\n".join([headline(document), "", *details(document), ""])


# --- escalation -------------------------------------------------------------------------------


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


# --- heartbeat.late, maintenance.started and maintenance.ended --------------------------------


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


# --- acknowledgements and updates ---------------------------------------------------------


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


def ack_lines(incident: IncidentDocument) -> list[str]:
    """The acknowledge line of an open, unacknowledged incident's message (else none)."""
    return [f"Acknowledge: {incident['ack_url']}"] if incident.get("ack_url") else []


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


def escalation_headline(document: EventDocument) -> str:
    """`ESCALATED (step 2 of 3): name (project)`, or `STILL DOWN (reminder 1): ...`."""
    _, endpoint, project = _about(document)
    where = f"{endpoint['name']} ({project['name']})"
    escalation = document["escalation"]
    if escalation["reminder"]:
        return f"STILL DOWN, not acknowledged (reminder {escalation['reminder']}): {where}"
    return f"ESCALATED (step {escalation['step']} of {escalation['steps']}): {where} is down"


def escalation_lines(document: EventDocument) -> list[str]:
    """The escalation's line under an incident's details (none for other events)."""
    if "escalation" not in document:
        return []
    escalation = document["escalation"]
    policy = escalation["policy"]["name"]
    return [f"Escalation policy: {policy}, step {escalation['step']} of {escalation['steps']}"]


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


def _where(document: EventDocument) -> str:
    """The incident's title, and its project when it has one."""
    project = document["project"]
    title = document.get("title", "")
    return f"{title} ({project['name']})" if project else title


def news_headline(document: EventDocument) -> str:
    """`ACKNOWLEDGED: <title>` or `UPDATE (<status>): <title>`."""
    if "update" in document:
        return f"UPDATE ({document['update']['status']}): {_where(document)}"
    return f"ACKNOWLEDGED: {_where(document)}"


def news_details(document: EventDocument) -> list[str]:
    """An update's message, or who acknowledged; the incident's page; the ack link."""
    incident = document["incident"]
    page = document.get("incident_url", "")
    if "update" in document:
        lines = [document["update"]["message"]]
    else:
        ack = document["acknowledgement"]
        who = f"by {ack['by']}" if ack["by"] else "from a notification link"
        lines = [f"Acknowledged {who} at {ack['at']}"]
    if incident is not None:
        lines.append(f"Since: {incident['started_at']}")
    return [*lines, page, *(ack_lines(incident) if incident else [])]


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


def schedule_headline(document: EventDocument) -> str:
    """The headline of a `heartbeat.late` or `maintenance.*` event."""
    if "maintenance" in document:
        name = document["maintenance"]["name"]
        if document["event"] == NotificationEvent.MAINTENANCE_STARTED:
            return f"MAINTENANCE STARTED: {name}"
        return f"MAINTENANCE ENDED: {name}"
    endpoint, project = document["endpoint"], document["project"]
    if endpoint is None or project is None:
        raise ValueError(f"A {document['event']} event names no endpoint.")
    return f"LATE: {endpoint['name']} ({project['name']}) missed its expected ping"


def schedule_details(document: EventDocument) -> list[str]:
    """The lines of a `heartbeat.late` or `maintenance.*` event."""
    if "maintenance" in document:
        window = document["maintenance"]
        names = window["scope"]["projects"] + window["scope"]["endpoints"]
        return [
            f"From: {window['starts_at']}",
            f"Until: {window['ends_at']}",
            f"Covers: {', '.join(names) if names else 'the whole organization'}",
        ]
    heartbeat, endpoint = document["heartbeat"], document["endpoint"]
    lines = [
        f"Expected: {heartbeat['expected_at']}",
        f"Grace: {duration_text(heartbeat['grace_seconds'])}",
    ]
    if heartbeat["down_at"]:
        lines.append(f"Down (and an incident) at: {heartbeat['down_at']} unless it pings")
    return [*lines, endpoint["url"]] if endpoint else lines
