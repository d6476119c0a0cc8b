"""Reads of incidents with what their pages and API answers show, in a fixed number of
queries however many there are."""

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from django.db.models import (
    Exists,
    OuterRef,
    Prefetch,
    QuerySet,
    prefetch_related_objects,
)

from accounts.models import Project, User
from healthmon.db import ColumnRows, own_fields
from monitoring.models import (
    Endpoint,
    Incident,
    IncidentActivity,
    IncidentKind,
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
    """The incidents the user sees, with their endpoint and acknowledger joined, and flags
    (`has_updates`, `has_notes`, `has_activities`) saying which of their lines exist.

    `incidents_load` reads the lines of a page of them; a list that shows none (the pages'
    incident list) reads nothing more.
    """
    return (
        Incident.objects.visible_to(user)
        .select_related("endpoint", "acknowledged_by")
        # What the answers show of the endpoint and the acknowledger: their ~40 and ~15
        # columns (JSON and times parsed per row) were a third of a page's CPU.
        .only(*own_fields(Incident), "endpoint__name", "acknowledged_by__email")
        .annotate(
            **{
                f"has_{relation}": Exists(lines.model.objects.filter(incident_id=OuterRef("pk")))
                for relation, lines in _LINES.items()
            }
        )
    )


class _Lines(NamedTuple):
    """An incident's relation of lines: their model, the person each names (shown by
    email), and their order."""

    model: type[IncidentUpdate | IncidentNote | IncidentActivity]
    person: str
    order: tuple[str, str]

    def queryset(self) -> QuerySet[Any]:
        """The lines in order, each with its person's email and no other column of theirs."""
        model, person = self.model, self.person
        # Django's stubs type `objects` per model; the three are alike here.
        manager: Any = model.objects
        return (
            manager.select_related(person)
            .only(*own_fields(model), f"{person}__email")
            .order_by(*self.order)
        )


_LINES: dict[str, _Lines] = {
    "updates": _Lines(IncidentUpdate, "author", ("created_at", "id")),
    "notes": _Lines(IncidentNote, "author", ("created_at", "id")),
    "activities": _Lines(IncidentActivity, "actor", ("at", "id")),
}


def incidents_load(incidents: Sequence[Incident], user: User) -> None:
    """Read the lines of some incidents of `incidents_visible` into plain lists (`loaded`
    returns them): the declared endpoints the user sees of manual ones, and the updates,
    notes and activities, each relation only for the incidents its flag says have some.

    A declared incident lists only the endpoints the user sees: it is read by every member,
    and its other endpoints belong to projects they are not shown.

    At most five queries however many incidents (the declared endpoints need the visible
    projects' ids), none for a relation no incident has. A page of 50 incidents with no
    lines (automatic ones nobody was notified of) read all four relations in ~5 of its
    12 ms of CPU when they were prefetched with every read.
    """
    manual = [incident for incident in incidents if incident.kind == IncidentKind.MANUAL]
    if manual:  # the endpoints visible to the user are a query of their own
        endpoints = Endpoint.objects.visible_to(user).only("id", "name", "project_id")
        prefetch_related_objects(
            manual,
            Prefetch("endpoints", endpoints.order_by("name", "id"), to_attr="loaded_endpoints"),
        )
    for relation, lines in _LINES.items():
        having = []
        for incident in incidents:
            if getattr(incident, f"has_{relation}", True):
                having.append(incident)
            else:
                setattr(incident, f"loaded_{relation}", [])
        if having:
            read = Prefetch(relation, lines.queryset(), to_attr=f"loaded_{relation}")
            prefetch_related_objects(having, read)


def loaded(incident: Incident, relation: str) -> list[Any]:
    """An incident's `endpoints`, `updates`, `notes` or `activities` as `incidents_load`
    read them, else read now (not the declared endpoints: only `incidents_load` knows
    which the user may see, so their absence is a `LookupError`).

    They are loaded into plain lists (`to_attr`): into the related managers, Django built
    a filtered queryset per incident and relation, and the callers one manager per access,
    a quarter of the CPU of the API's page of 50 incidents.
    """
    found: list[Any] | None = getattr(incident, f"loaded_{relation}", None)
    if found is not None:
        return found
    if relation == "endpoints":
        # Read unfiltered, they would include endpoints of projects the user is not shown.
        raise LookupError("a declared incident's endpoints are read by incidents_load")
    return list(getattr(incident, relation).all())


def incidents_open_first(user: User) -> IncidentQuerySet:
    """The user's incidents, open ones first, each group newest first."""
    return incidents_visible(user).order_by(OPEN_FIRST, "-started_at", "-id")
