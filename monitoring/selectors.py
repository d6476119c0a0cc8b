"""Reads of incidents with what their pages and API answers show, in a fixed number of
queries however many there are."""

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import Prefetch, QuerySet

from accounts.models import Project, User
from healthmon.db import ColumnRows
from monitoring.models import (
    Endpoint,
    Incident,
    IncidentActivity,
    IncidentNote,
    IncidentQuerySet,
    IncidentUpdate,
    visible_project_ids,
)
from monitoring.models.endpoints import as_uuid
from monitoring.models.incidents import OPEN_FIRST

# Endpoints a picker (the compare page's, the incident form's) lists at most; a search by
# name (at most SEARCH_LENGTH characters, as the pages' inputs allow) narrows them. Listing
# every endpoint made a 10,000-endpoint organization's page 2.2 MB and 360 ms of CPU, which
# held a web worker and moved other tenants' p95 (bench/README.md, load.py).
PICKER_LIMIT = 200
SEARCH_LENGTH = 100


@dataclass(frozen=True)
class Choices:
    """A picker's endpoints by project: those whose name holds `search` (the first
    PICKER_LIMIT by project and name) and the ones already picked; `total` match."""

    by_project: dict[Project, list[Endpoint]]
    total: int
    search: str

    @property
    def shown(self) -> int:
        return sum(len(endpoints) for endpoints in self.by_project.values())


def endpoint_choices(user: User, search: str = "", picked: Sequence[object] = ()) -> Choices:
    """The endpoints the user may see, by project, for a picker (names only): at most
    PICKER_LIMIT whose name holds `search` (as typed: trimmed and cut to SEARCH_LENGTH here),
    and every picked one (ids, or their text as a form sent them: a malformed one is left
    to the form's own errors)."""
    search = search.strip()[:SEARCH_LENGTH]
    wanted = set()
    for value in picked:
        try:
            wanted.add(as_uuid(value))
        except ValueError:
            continue
    visible = Endpoint.objects.visible_to(user)
    matching = visible.filter(name__icontains=search) if search else visible

    def read(rows: QuerySet[Endpoint], limit: int | None = None) -> list[Endpoint]:
        rows = rows.select_related("project").only(
            "id", "name", "status", "project__id", "project__name"
        )
        return list(rows.order_by("project__name", "name")[:limit])

    shown = read(matching, PICKER_LIMIT + 1)
    total = len(shown) if len(shown) <= PICKER_LIMIT else matching.count()
    shown = shown[:PICKER_LIMIT]
    missing = wanted - {endpoint.pk for endpoint in shown}
    if missing:
        shown += read(visible.filter(pk__in=missing))
        shown.sort(key=lambda endpoint: (endpoint.project.name, endpoint.name))
    found: dict[Project, list[Endpoint]] = defaultdict(list)
    for endpoint in shown:
        found[endpoint.project].append(endpoint)
    return Choices(dict(found), total, search)


def endpoint_rows_visible(user: User, fields: Sequence[str]) -> ColumnRows:
    """`Endpoint.objects.visible_to(user).values(*fields)`, in the endpoints' order, read
    window by window with a fixed statement (the visible projects are read now)."""
    return ColumnRows(Endpoint, fields, "project", visible_project_ids(user))


def incidents_visible(user: User) -> IncidentQuerySet:
    """The incidents the user sees, with their endpoint, updates and notes loaded.

    A declared incident lists only the endpoints the user sees: it is read by every member,
    and its other endpoints belong to projects they are not shown.
    """
    endpoints = Endpoint.objects.visible_to(user).only("id", "name", "project_id")
    notes = IncidentNote.objects.select_related("author").only(
        "id", "incident_id", "text", "created_at", "author__id", "author__email"
    )
    updates = IncidentUpdate.objects.select_related("author").defer(
        "author__password", "author__last_login"
    )
    activities = IncidentActivity.objects.select_related("actor").defer(
        "actor__password", "actor__last_login"
    )
    return (
        Incident.objects.visible_to(user)
        .select_related("endpoint", "acknowledged_by")
        .defer(
            "endpoint__target",
            "endpoint__config",
            "acknowledged_by__password",
            "acknowledged_by__last_login",
        )
        .prefetch_related(
            Prefetch("endpoints", endpoints.order_by("name", "id"), to_attr="loaded_endpoints"),
            Prefetch("updates", updates.order_by("created_at", "id"), to_attr="loaded_updates"),
            Prefetch("notes", notes.order_by("created_at", "id"), to_attr="loaded_notes"),
            Prefetch("activities", activities.order_by("at", "id"), to_attr="loaded_activities"),
        )
    )


def loaded(incident: Incident, relation: str) -> list[Any]:
    """An incident's `endpoints`, `updates`, `notes` or `activities` as `incidents_visible`
    loaded them, else read now.

    They are loaded into plain lists (`to_attr`): into the related managers, Django built
    a filtered queryset per incident and relation, and the callers one manager per access,
    a quarter of the CPU of the API's page of 50 incidents.
    """
    found: list[Any] | None = getattr(incident, f"loaded_{relation}", None)
    return found if found is not None else list(getattr(incident, relation).all())


def incidents_open_first(user: User) -> IncidentQuerySet:
    """The user's incidents, open ones first, each group newest first."""
    return incidents_visible(user).order_by(OPEN_FIRST, "-started_at", "-id")
