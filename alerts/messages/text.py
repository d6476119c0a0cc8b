"""Notifications in words: the headline and lines every kind shows, chat webhooks' bodies
(Slack, Teams, Discord) and mail, read from an event document."""

from typing import Any

from alerts.messages.documents import (
    EndpointDocument,
    EventDocument,
    IncidentDocument,
    ProjectDocument,
)
from alerts.models import ChannelKind, NotificationEvent


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
        # Degraded by its probe locations: some fail, fewer than the quorum (the reason,
        # in the details, names them); otherwise by its response time.
        if (document["change"]["reason"] or "").startswith("Failing in "):
            return f"DEGRADED: {where} is failing in some of its locations"
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


def ack_lines(incident: IncidentDocument) -> list[str]:
    """The acknowledge line of an open, unacknowledged incident's message (else none)."""
    return [f"Acknowledge: {incident['ack_url']}"] if incident.get("ack_url") else []


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
