"""Reads of incidents with what their pages and API answers show, in a fixed number of
queries however many there are."""

from collections.abc import Sequence
from typing import Any

from django.db.models import Prefetch

from accounts.models import User
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
from monitoring.models.incidents import OPEN_FIRST


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
