"""An incident's timeline: every line in time order, merged from what is stored apart.

Its opening and resolution (the incident's own times), its updates, internal notes, and the
lines the machinery wrote (`IncidentActivity`: acknowledgement, escalation steps and
reminders, each notification's outcome). Internal notes make it a team view: no public
route reads it (status pages read updates only).
"""

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from accounts.models import User
from monitoring.models import Incident, IncidentKind
from monitoring.selectors import loaded

OPENED = "opened"
DECLARED = "declared"
UPDATE = "update"
NOTE = "note"
RESOLVED = "resolved"
LABELS = {
    OPENED: "Opened",
    DECLARED: "Declared",
    UPDATE: "Update",
    NOTE: "Internal note",
    RESOLVED: "Resolved",
    "acknowledged": "Acknowledged",
    "escalated": "Escalated",
    "reminded": "Reminder",
    "delivered": "Delivered",
    "delivery_failed": "Delivery failed",
}
# Lines at the same moment keep a sense: what started it first, what ended it last.
_RANK = {OPENED: 0, DECLARED: 0, RESOLVED: 2}


@dataclass(frozen=True)
class TimelineEntry:
    """One line: when, what kind (`opened`, `declared`, `update`, `note`, `acknowledged`,
    `escalated`, `reminded`, `delivered`, `delivery_failed`, `resolved`), the words, who (a
    user, or None for the machinery or a link), and kind-specific ids in `detail`."""

    at: datetime
    kind: str
    text: str
    actor: User | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    # An update's sanitised HTML (rendered from its Markdown when written), for pages.
    html: str = field(default="", compare=False)

    @property
    def label(self) -> str:
        """The kind in words, for pages."""
        return LABELS.get(self.kind, self.kind.replace("_", " ").capitalize())


def _bounds(incident: Incident) -> list[TimelineEntry]:
    """The opening (or declaration) and the resolution."""
    if incident.kind == IncidentKind.MANUAL:
        first = TimelineEntry(incident.started_at, DECLARED, "Declared")
    else:
        cause = f": {incident.cause}" if incident.cause else ""
        first = TimelineEntry(incident.started_at, OPENED, f"Opened{cause}")
    lines = [first]
    if incident.resolved_at is not None:
        lines.append(TimelineEntry(incident.resolved_at, RESOLVED, "Resolved"))
    return lines


def incident_timeline(incident: Incident) -> list[TimelineEntry]:
    """Every line of the incident in time order (reads its prefetched `updates`, `notes`
    and `activities` when the selector loaded them: no query per incident then)."""
    lines = _bounds(incident)
    lines += [
        TimelineEntry(
            u.created_at,
            UPDATE,
            u.message,
            u.author,
            {"id": str(u.pk), "status": u.state},
            html=u.message_html,
        )
        for u in loaded(incident, "updates")
    ]
    lines += [
        TimelineEntry(n.created_at, NOTE, n.text, n.author, {"id": str(n.pk)})
        for n in loaded(incident, "notes")
    ]
    lines += [
        TimelineEntry(a.at, a.kind, a.text, a.actor, {**a.detail, "id": str(a.pk)})
        for a in loaded(incident, "activities")
    ]
    return sorted(lines, key=lambda line: (line.at, _RANK.get(line.kind, 1)))
