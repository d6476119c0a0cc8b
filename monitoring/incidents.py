"""Incident communication: people declare incidents, post updates (a state and a Markdown
message, kept with its sanitised HTML), add internal notes, and edit what readers see.

Automatic incidents are opened and resolved by the check pipeline (`monitoring.checks`);
here a person only speaks about them. Status pages read what is written here (`statuspages`
sits above this app and fans updates out to its subscribers itself).
"""

from collections.abc import Sequence
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from accounts.models import Organization, User
from monitoring.incident_text import markdown_html
from monitoring.models import (
    Endpoint,
    Incident,
    IncidentKind,
    IncidentNote,
    IncidentState,
    IncidentUpdate,
)
from monitoring.validation.incidents import update_status_check


def incident_title(incident: Incident) -> str:
    """The title readers see: the one given, else "<endpoint name> is down" for an
    automatic incident (its endpoint must be loaded or loadable)."""
    if incident.title:
        return incident.title
    if incident.endpoint_id is None:
        return "Incident"  # a declared incident always has a title; a safe word all the same
    return f"{incident.measured_endpoint.name} is down"


@transaction.atomic
def incident_declare(
    *,
    organization: Organization,
    author: User | None,
    title: str,
    endpoints: Sequence[Endpoint],
    impact: str,
    message: str = "",
    public: bool = True,
    notify_subscribers: bool = True,
) -> Incident:
    """Declare a manual incident on endpoints of the organization, investigating from now;
    a message given becomes its first update."""
    now = timezone.now()
    incident = Incident.objects.create(
        organization=organization,
        kind=IncidentKind.MANUAL,
        title=title,
        impact=impact,
        state=IncidentState.INVESTIGATING,
        public=public,
        started_at=now,
        updated_at=now,
    )
    incident.endpoints.set(endpoints)
    if message.strip():
        _update_add(
            incident,
            author=author,
            status=IncidentState.INVESTIGATING,
            message=message,
            notify_subscribers=notify_subscribers,
            now=now,
        )
    return incident


@transaction.atomic
def incident_update_post(
    *,
    incident: Incident,
    author: User | None,
    status: str,
    message: str,
    notify_subscribers: bool = True,
) -> IncidentUpdate:
    """Post an update: the incident takes its status; `resolved` closes a manual one.

    The incident row is locked, so two updates (or an update and the pipeline resolving
    it) are judged one after the other against the state each leaves.
    """
    locked = Incident.objects.select_for_update().get(pk=incident.pk)
    update_status_check(locked, status)
    now = timezone.now()
    locked.state = status
    locked.updated_at = now
    changed = ["state", "updated_at"]
    if status == IncidentState.RESOLVED and locked.resolved_at is None:
        locked.resolved_at = now  # only a manual one gets here (the check above)
        changed.append("resolved_at")
    locked.save(update_fields=changed)
    _refresh(incident, locked, changed)
    return _update_add(
        locked,
        author=author,
        status=status,
        message=message,
        notify_subscribers=notify_subscribers,
        now=now,
    )


def _update_add(
    incident: Incident,
    *,
    author: User | None,
    status: str,
    message: str,
    notify_subscribers: bool,
    now: datetime,
) -> IncidentUpdate:
    """Store an update with its HTML. A private incident's updates never notify
    subscribers, even once it is made public: its readers would get stale news."""
    return IncidentUpdate.objects.create(
        incident=incident,
        state=status,
        message=message,
        message_html=markdown_html(message),
        author=author,
        notify_subscribers=notify_subscribers and incident.public,
        created_at=now,
    )


def _refresh(incident: Incident, locked: Incident, changed: Sequence[str]) -> None:
    """Give the caller's instance the values just saved on the locked one."""
    for name in changed:
        setattr(incident, name, getattr(locked, name))


def incident_note_add(*, incident: Incident, author: User | None, text: str) -> IncidentNote:
    """Add an internal note for the team (never shown on a public route)."""
    return IncidentNote.objects.create(incident=incident, author=author, text=text)


@transaction.atomic
def incident_edit(
    *,
    incident: Incident,
    title: str | None = None,
    public: bool | None = None,
    impact: str | None = None,
) -> Incident:
    """Change what readers see of an incident (None: keep); hiding one takes it off status
    pages, titling an automatic one replaces "<endpoint> is down"."""
    locked = Incident.objects.select_for_update().get(pk=incident.pk)
    given = {"title": title, "public": public, "impact": impact}
    changed = [name for name, value in given.items() if value is not None]
    if not changed:
        return incident
    for name in changed:
        setattr(locked, name, given[name])
    locked.updated_at = timezone.now()
    changed.append("updated_at")
    locked.save(update_fields=changed)
    _refresh(incident, locked, changed)
    return incident
