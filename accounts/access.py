"""The only functions that fetch organization-owned objects for a caller.

Anything outside the caller's organization (or, for members, outside their projects) is
reported exactly like a missing id: a 404, so that no other tenant's ids can be probed.
"""

import uuid
from collections.abc import Iterable
from typing import TypeVar

from django.core.exceptions import ObjectDoesNotExist
from django.db import models
from django.http import Http404
from rest_framework import serializers

from accounts.models import Invitation, Project, User
from alerts.models import MaintenanceWindow, NotificationChannel
from apikeys.models import ApiKey
from monitoring.models import Endpoint, Incident

M = TypeVar("M", bound=models.Model)


def _get_or_404(queryset: models.QuerySet[M], pk: object) -> M:
    try:
        return queryset.get(pk=uuid.UUID(str(pk)))
    except (ValueError, ObjectDoesNotExist) as exc:
        raise Http404 from exc


def access_user(caller: User, user_id: object) -> User:
    """A user of the caller's organization."""
    return _get_or_404(User.objects.for_org(caller.organization), user_id)


def access_project(caller: User, project_id: object) -> Project:
    """A project the caller can see."""
    return _get_or_404(Project.objects.visible_to(caller), project_id)


def access_pending_invitation(caller: User, invitation_id: object) -> Invitation:
    """A pending invitation of the caller's organization."""
    queryset = Invitation.objects.for_org(caller.organization).pending()
    return _get_or_404(queryset, invitation_id)


def access_api_key(caller: User, api_key_id: object) -> ApiKey:
    """A key the caller manages (all of the organization's for managers, else its own)."""
    return _get_or_404(ApiKey.objects.visible_to(caller).not_revoked(), api_key_id)


def access_endpoint(caller: User, endpoint_id: object, *, for_update: bool = False) -> Endpoint:
    """An endpoint in a project the caller can see; locked (in a transaction) to write it."""
    endpoints = Endpoint.objects.visible_to(caller)
    return _get_or_404(endpoints.select_for_update() if for_update else endpoints, endpoint_id)


def access_incident(caller: User, incident_id: object) -> Incident:
    """An incident of an endpoint in a project the caller can see."""
    return _get_or_404(Incident.objects.visible_to(caller), incident_id)


def access_projects(caller: User, project_ids: Iterable[uuid.UUID]) -> list[Project]:
    """Projects by id for a request body; an id the caller cannot see is a validation error."""
    wanted = set(project_ids)
    found = list(Project.objects.visible_to(caller).filter(pk__in=wanted))
    missing = wanted - {project.pk for project in found}
    if missing:
        raise serializers.ValidationError(
            [f"Unknown project: {project_id}." for project_id in sorted(map(str, missing))]
        )
    return found


def access_channel(caller: User, channel_id: object) -> NotificationChannel:
    """A notification channel the caller can see (members: those touching their projects)."""
    return _get_or_404(NotificationChannel.objects.visible_to(caller), channel_id)


def access_maintenance_window(caller: User, window_id: object) -> MaintenanceWindow:
    """A maintenance window the caller can see (members: those touching their projects)."""
    return _get_or_404(MaintenanceWindow.objects.visible_to(caller), window_id)


def access_endpoints(caller: User, endpoint_ids: Iterable[uuid.UUID]) -> list[Endpoint]:
    """Endpoints by id for a request body; an id the caller cannot see is a validation error."""
    wanted = set(endpoint_ids)
    found = list(
        Endpoint.objects.visible_to(caller).defer("target", "config").filter(pk__in=wanted)
    )
    missing = wanted - {endpoint.pk for endpoint in found}
    if missing:
        raise serializers.ValidationError(
            [f"Unknown endpoint: {endpoint_id}." for endpoint_id in sorted(map(str, missing))]
        )
    return found
