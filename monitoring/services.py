"""Endpoint writes: creation, changes, pausing and resuming, with the schedule kept right."""

from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone
from rest_framework import serializers

from accounts.models import Project
from monitoring.models import Endpoint, EndpointStatus
from monitoring.targets import mask_config, mask_target

# A change to any of these makes the endpoint due at once, so the user sees its effect.
_PROBE_FIELDS = frozenset(
    {"type", "target", "interval_seconds", "timeout_seconds", "config", "project"}
)


def _lock_project(project: Project) -> Project:
    """Lock the project row, so that it cannot be deleted while an endpoint joins it."""
    locked = Project.objects.select_for_update().filter(pk=project.pk).first()
    if locked is None:
        raise serializers.ValidationError({"project": [f"Unknown project: {project.pk}."]})
    return locked


@transaction.atomic
def endpoint_create(
    *, project: Project, target: str, config: dict[str, Any], enabled: bool = True, **fields: Any
) -> Endpoint:
    """Create an endpoint; an enabled one is due for its first check at once."""
    now = timezone.now()
    endpoint = Endpoint(
        project=_lock_project(project),
        target=target,
        target_masked=mask_target(target),
        config=config,
        config_masked=mask_config(config),
        enabled=enabled,
        status=EndpointStatus.PENDING if enabled else EndpointStatus.PAUSED,
        next_check_at=now if enabled else None,
        created_at=now,
        updated_at=now,
        **fields,
    )
    endpoint.save(force_insert=True)
    return endpoint


@transaction.atomic
def endpoint_update(*, endpoint: Endpoint, **changes: Any) -> Endpoint:
    """Change an endpoint; a change to what or how it is probed makes it due now.

    The caller holds the endpoint's row lock (see the view), so that concurrent changes
    apply one after the other. A new target or type resets the status to pending: the last
    result was about another service.
    """
    if "project" in changes and changes["project"].pk != endpoint.project_id:
        changes["project"] = _lock_project(changes["project"])
    toggled = changes.get("enabled", endpoint.enabled) != endpoint.enabled
    retargeted = any(
        name in changes and changes[name] != getattr(endpoint, name) for name in ("target", "type")
    )
    for field, value in changes.items():
        setattr(endpoint, field, value)
    fields = set(changes) | {"updated_at"}
    now = timezone.now()
    endpoint.updated_at = now
    if "target" in changes:
        endpoint.target_masked = mask_target(endpoint.target)
        fields.add("target_masked")
    if "config" in changes:
        endpoint.config_masked = mask_config(endpoint.config)
        fields.add("config_masked")
    if toggled or retargeted:
        endpoint.status = EndpointStatus.PENDING if endpoint.enabled else EndpointStatus.PAUSED
        fields.add("status")
    due = endpoint.next_check_at if endpoint.enabled else None
    if endpoint.enabled and (toggled or _PROBE_FIELDS & set(changes)):
        due = now
    if due != endpoint.next_check_at:
        endpoint.next_check_at = due
        fields.add("next_check_at")
    endpoint.save(update_fields=sorted(fields))
    return endpoint


def endpoints_set_enabled(*, endpoints: QuerySet[Endpoint], enabled: bool) -> int:
    """Pause or resume many endpoints; those already in that state are left alone."""
    now = timezone.now()
    return endpoints.filter(enabled=not enabled).update(
        enabled=enabled,
        status=EndpointStatus.PENDING if enabled else EndpointStatus.PAUSED,
        next_check_at=now if enabled else None,
        updated_at=now,
    )


def endpoint_set_enabled(*, endpoint: Endpoint, enabled: bool) -> Endpoint:
    """Pause or resume one endpoint (a resumed one is due at once)."""
    endpoints_set_enabled(endpoints=Endpoint.objects.filter(pk=endpoint.pk), enabled=enabled)
    endpoint.refresh_from_db()
    return endpoint
