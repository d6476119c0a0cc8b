"""Alert writes people make: channels and maintenance windows (audited), and the scrubbing
of a secret out of stored deliveries."""

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from django.db import transaction
from django.utils import timezone

from accounts.audit import audit_record
from accounts.models import AuditAction, Organization, Project
from alerts import validation
from alerts.apprise_transport import masked_apprise_url
from alerts.models import (
    URL_KINDS,
    ChannelKind,
    Delivery,
    MaintenanceWindow,
    NotificationChannel,
    Recurrence,
    Scoped,
    all_channel_events,
)
from alerts.recurrence import WEEKLY as WEEKLY_RULE
from alerts.standard_webhooks import new_secret
from monitoring.models import Endpoint
from monitoring.probes.secrets import masked
from monitoring.targets import MASK

# --- channels ---------------------------------------------------------------------------------


def mask_channel_config(kind: str, config: dict[str, Any]) -> dict[str, Any]:
    """The config as shown: a URL's path and query (where webhook credentials live) as ****."""
    if kind not in URL_KINDS:
        return dict(config)
    if kind == ChannelKind.APPRISE:
        return {**config, "url": masked_apprise_url(config["url"])}
    parts = urlsplit(config["url"])
    shown = f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"
    if parts.path not in ("", "/") or parts.query:
        shown += f"/{MASK}"
    return {**config, "url": shown}


@transaction.atomic
def channel_create(
    *,
    organization: Organization,
    name: str,
    kind: str,
    config: dict[str, Any],
    projects: Sequence[Project] = (),
    endpoints: Sequence[Endpoint] = (),
    enabled: bool = True,
    events: Sequence[str] | None = None,
) -> NotificationChannel:
    """Create a channel; a webhook gets a signing secret (readable once, as `secret`)."""
    channel = NotificationChannel(
        organization=organization,
        name=name,
        kind=kind,
        config=config,
        config_masked=mask_channel_config(kind, config),
        enabled=enabled,
        events=all_channel_events() if events is None else list(events),
        secret=new_secret() if kind == ChannelKind.WEBHOOK else "",
    )
    channel.save(force_insert=True)
    _set_scope(channel, projects, endpoints)
    audit_record(
        action=AuditAction.CHANNEL_CREATED,
        organization_id=organization.pk,
        target=channel,
        details={"kind": kind},
    )
    return channel


@transaction.atomic
def channel_delete(*, channel: NotificationChannel) -> None:
    """Delete a channel with its delivery history, in the audit log."""
    audit_record(
        action=AuditAction.CHANNEL_DELETED,
        organization_id=channel.organization_id,
        target=channel,
        details={"kind": channel.kind},
    )
    channel.delete()


@transaction.atomic
def channel_update(
    *,
    channel: NotificationChannel,
    name: str | None = None,
    config: dict[str, Any] | None = None,
    enabled: bool | None = None,
    projects: Sequence[Project] | None = None,
    endpoints: Sequence[Endpoint] | None = None,
    events: Sequence[str] | None = None,
) -> NotificationChannel:
    """Change what is given (None: keep it). Turning a channel on again, or a new
    destination, clears the failing flag: the cause may be fixed."""
    # `config` is read only when it is being changed: reading it decrypts it (and loads it,
    # when the caller deferred it, as the admin does).
    fresh = (config is not None and config != channel.config) or (
        enabled is True and not channel.enabled
    )
    given = {"name": name, "config": config, "enabled": enabled, "events": events}
    fields = {field for field, value in given.items() if value is not None}
    if name is not None:
        channel.name = name
    if enabled is not None:
        channel.enabled = enabled
    if events is not None:
        channel.events = list(events)
    if config is not None:
        channel.config = config
        channel.config_masked = mask_channel_config(channel.kind, config)
    if fresh:
        channel.consecutive_failures, channel.failing_since = 0, None
    channel.updated_at = timezone.now()
    channel.save(update_fields=sorted(_channel_columns(fields, fresh)))
    fields |= _set_scope(channel, projects, endpoints)
    # Which fields changed, never their values: a config holds the destination's credentials.
    audit_record(
        action=AuditAction.CHANNEL_UPDATED,
        organization_id=channel.organization_id,
        target=channel,
        details={"fields": sorted(fields)},
    )
    return channel


def _channel_columns(fields: set[str], fresh: bool) -> set[str]:
    """The columns a change writes: the fields given, what follows from them, the time."""
    columns = {*fields, "updated_at"}
    if "config" in fields:
        columns.add("config_masked")
    if fresh:
        columns |= {"consecutive_failures", "failing_since"}
    return columns


def _set_scope(
    row: Scoped, projects: Sequence[Project] | None, endpoints: Sequence[Endpoint] | None
) -> set[str]:
    """Narrow a channel or window to the projects and endpoints given (None: leave it);
    returns which of the two were set."""
    if projects is not None:
        row.projects.set(projects)
    if endpoints is not None:
        row.endpoints.set(endpoints)
    return {
        name for name, ids in (("projects", projects), ("endpoints", endpoints)) if ids is not None
    }


@transaction.atomic
def maintenance_window_save(
    *,
    window: MaintenanceWindow,
    starts_at: datetime,
    ends_at: datetime,
    name: str = "",
    recurrence: str = Recurrence.ONCE,
    projects: Sequence[Project] | None = None,
    endpoints: Sequence[Endpoint] | None = None,
    rrule: str = "",
    timezone: str = "UTC",
) -> MaintenanceWindow:
    """Create or change a maintenance window: its fields as given, its scope where given
    (None: leave that scope as it is). `recurrence="weekly"` is `rrule="FREQ=WEEKLY"`."""
    window.rrule, window.timezone = validation.maintenance_window(
        starts_at=starts_at,
        ends_at=ends_at,
        recurrence=recurrence,
        rrule=rrule,
        timezone=timezone,
    )
    # The old column, kept in step while it exists.
    weekly = window.rrule == WEEKLY_RULE
    window.name, window.recurrence = name, Recurrence.WEEKLY if weekly else Recurrence.ONCE
    window.starts_at, window.ends_at = starts_at, ends_at
    created = window._state.adding
    window.save()
    _set_scope(window, projects, endpoints)
    audit_record(
        action=AuditAction.MAINTENANCE_CREATED if created else AuditAction.MAINTENANCE_UPDATED,
        organization_id=window.organization_id,
        target=window,
        details=_window_details(window),
    )
    return window


@transaction.atomic
def maintenance_window_delete(*, window: MaintenanceWindow) -> None:
    """Delete a maintenance window, in the audit log (a window silences notifications)."""
    audit_record(
        action=AuditAction.MAINTENANCE_DELETED,
        organization_id=window.organization_id,
        target=window,
        details=_window_details(window),
    )
    window.delete()


def _window_details(window: MaintenanceWindow) -> dict[str, Any]:
    return {
        "starts_at": window.starts_at.isoformat(),
        "ends_at": window.ends_at.isoformat(),
        "recurrence": window.recurrence or None,
        "rrule": window.rrule or None,
        "timezone": window.timezone,
    }


@transaction.atomic
def deliveries_scrub(*, endpoint: Endpoint, secrets: Sequence[str]) -> int:
    """Mask the endpoint's secrets in the payloads and errors of its incidents' deliveries.

    For rows stored before probes masked every form a secret is sent in; returns how many
    changed.
    """
    deliveries = Delivery.objects.filter(incident__endpoint=endpoint).only("payload", "last_error")
    dirty = []
    for delivery in deliveries.iterator(chunk_size=1000):
        payload = _scrub_json(delivery.payload, secrets)
        last_error = masked(delivery.last_error, secrets)
        if payload != delivery.payload or last_error != delivery.last_error:
            delivery.payload, delivery.last_error = payload, last_error
            dirty.append(delivery)
    Delivery.objects.bulk_update(dirty, ["payload", "last_error"], batch_size=1000)
    return len(dirty)


def _scrub_json(value: Any, secrets: Sequence[str]) -> Any:
    if isinstance(value, str):
        return masked(value, secrets)
    if isinstance(value, list):
        return [_scrub_json(item, secrets) for item in value]
    if isinstance(value, dict):
        return {key: _scrub_json(item, secrets) for key, item in value.items()}
    return value
