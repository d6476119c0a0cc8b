"""Reads of incidents with what their pages and API answers show, in a fixed number of
queries however many there are."""

from collections.abc import Sequence

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
            Prefetch("endpoints", endpoints.order_by("name", "id")),
            Prefetch("updates", updates.order_by("created_at", "id")),
            Prefetch("notes", notes.order_by("created_at", "id")),
            Prefetch("activities", activities.order_by("at", "id")),
        )
    )


def incidents_open_first(user: User) -> IncidentQuerySet:
    """The user's incidents, open ones first, each group newest first."""
    return incidents_visible(user).order_by(OPEN_FIRST, "-started_at", "-id")
