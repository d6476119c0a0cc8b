"""The alerts page: notification channels and maintenance windows.

Everyone reads the channels and windows they can see; owners and admins create, enable,
disable, test and delete channels, and plan and delete windows. A channel's destination
is shown masked; a webhook's signing secret is shown once, in the answer that creates it.
"""

from datetime import datetime
from typing import Any

from django.contrib import messages
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST, require_safe

from accounts.access import manager_required, member_required, page_user
from accounts.models import Project, User
from alerts import delivery, services
from alerts.access import access_channel, access_maintenance_window
from alerts.errors import TestTooSoon
from alerts.forms import ChannelForm, WindowForm
from alerts.models import (
    CHANNEL_EVENTS,
    ChannelKind,
    Delivery,
    DeliveryStatus,
    MaintenanceWindow,
    NotificationChannel,
    Scoped,
    ScopeIds,
    scopes_of,
)
from monitoring.models import Endpoint

RECENT_DELIVERIES = 5


def _channels(user: User) -> list[NotificationChannel]:
    """The channels the user sees, each with its latest deliveries as `recent` (a member's:
    tests and those about incidents in its projects, as in the API)."""
    recent = (
        Delivery.objects.visible_to(user)
        .only("channel", "event", "status", "occurred_at", "created_at", "last_error")
        .order_by("-created_at", "-id")[:RECENT_DELIVERIES]
    )
    rows = NotificationChannel.objects.visible_to(user).without_secrets()
    return list(rows.prefetch_related(Prefetch("deliveries", recent, to_attr="recent")))


def _windows(user: User, now: datetime) -> list[MaintenanceWindow]:
    """The windows the user sees, each with `in_progress` and `ended` set for `now`."""
    windows = list(MaintenanceWindow.objects.visible_to(user))
    for window in windows:
        window.in_progress = window.active_at(now)
        window.ended = not window.in_progress and window.next_start(now) is None
    return windows


def _label_scopes(rows: list[Scoped], projects: dict[Any, str]) -> None:
    """Set `scope` on each channel or window: None for the whole organization, else the
    names of its projects and endpoints that the user sees (`projects`: id -> name)."""
    scopes: dict[Any, ScopeIds] = {}
    for model in (NotificationChannel, MaintenanceWindow):
        scopes |= scopes_of(model, [row.pk for row in rows if isinstance(row, model)])
    wanted = {pk for _, endpoint_ids in scopes.values() for pk in endpoint_ids}
    found = Endpoint.objects.filter(pk__in=wanted, project_id__in=list(projects))
    endpoints = dict(found.values_list("pk", "name"))
    for row in rows:
        project_ids, endpoint_ids = scopes[row.pk]
        names = sorted(projects[pk] for pk in project_ids if pk in projects)
        names += sorted(endpoints[pk] for pk in endpoint_ids if pk in endpoints)
        row.scope = names if project_ids or endpoint_ids else None  # type: ignore[attr-defined]


def _page(
    request: HttpRequest,
    channel_form: ChannelForm | None = None,
    window_form: WindowForm | None = None,
    created: NotificationChannel | None = None,
) -> HttpResponse:
    """The page, with the forms as posted (a form with errors answers 400)."""
    user = page_user(request)
    projects = list(Project.objects.visible_to(user).order_by("name"))
    names = {project.pk: project.name for project in projects}
    channels, windows = _channels(user), _windows(user, timezone.now())
    _label_scopes([*channels, *windows], names)
    forms = (channel_form, window_form)
    context = {
        "channels": channels,
        "windows": windows,
        "projects": projects,
        "kinds": ChannelKind.choices,
        "all_events": CHANNEL_EVENTS,
        "channel_form": channel_form or ChannelForm(user=user),
        "window_form": window_form or WindowForm(user=user),
        "created": created,
        "signature_header": delivery.SIGNATURE_HEADER,
    }
    status = 400 if any(form is not None and form.errors for form in forms) else 200
    return render(request, "alerts/alerts.html", context, status=status)


@member_required
@require_safe
def alerts_page(request: HttpRequest) -> HttpResponse:
    """Channels and maintenance windows; owners and admins manage them here."""
    return _page(request)


@never_cache
@manager_required
@require_POST
def channel_new(request: HttpRequest) -> HttpResponse:
    """Add a channel; a webhook's signing secret is shown in this answer only."""
    user = page_user(request)
    form = ChannelForm(request.POST, user=user)
    if not form.is_valid():
        return _page(request, channel_form=form)
    data = form.cleaned_data
    channel = services.channel_create(
        organization=user.organization,
        name=data["name"],
        kind=data["kind"],
        config=form.config,
        projects=list(data["projects"]),
        events=form.channel_events,
    )
    if channel.kind == ChannelKind.WEBHOOK:
        return _page(request, created=channel)
    messages.success(request, f"The channel {channel.name} is added.")
    return redirect("alerts")


def _set_enabled(request: HttpRequest, channel_id: str, enabled: bool) -> HttpResponse:
    channel = access_channel(page_user(request), channel_id)
    services.channel_update(channel=channel, enabled=enabled)
    messages.success(request, f"{channel.name} is {'enabled' if enabled else 'disabled'}.")
    return redirect("alerts")


@manager_required
@require_POST
def channel_enable(request: HttpRequest, channel_id: str) -> HttpResponse:
    """Send notifications to a channel again (its failing flag is cleared)."""
    return _set_enabled(request, channel_id, enabled=True)


@manager_required
@require_POST
def channel_disable(request: HttpRequest, channel_id: str) -> HttpResponse:
    """Stop sending notifications to a channel."""
    return _set_enabled(request, channel_id, enabled=False)


@manager_required
@require_POST
def channel_send_test(request: HttpRequest, channel_id: str) -> HttpResponse:
    """Send a test event now and tell how it went; once per channel every few seconds
    (the API shares the limit)."""
    channel = access_channel(page_user(request), channel_id)
    try:
        sent = delivery.channel_test(channel=channel)
    except TestTooSoon:
        messages.error(request, f"A test was just sent to {channel.name}: wait a few seconds.")
        return redirect("alerts")
    if sent.status == DeliveryStatus.DELIVERED:
        messages.success(request, f"The test reached {channel.name}.")
    else:
        messages.error(request, f"The test to {channel.name} failed: {sent.last_error}.")
    return redirect("alerts")


@manager_required
@require_POST
def channel_delete(request: HttpRequest, channel_id: str) -> HttpResponse:
    """Delete a channel with its delivery history."""
    channel = access_channel(page_user(request), channel_id)
    services.channel_delete(channel=channel)
    messages.success(request, f"The channel {channel.name} is deleted.")
    return redirect("alerts")


@manager_required
@require_POST
def window_new(request: HttpRequest) -> HttpResponse:
    """Plan a maintenance window (times in its time zone, UTC by default)."""
    user = page_user(request)
    form = WindowForm(request.POST, user=user)
    if not form.is_valid():
        return _page(request, window_form=form)
    data = form.cleaned_data
    window = services.maintenance_window_save(
        window=MaintenanceWindow(organization=user.organization),
        name=data["name"],
        starts_at=data["starts_at"],
        ends_at=data["ends_at"],
        rrule=form.rule,
        timezone=data["timezone"],
        projects=list(data["projects"]),
    )
    messages.success(request, f"The maintenance window {window} is planned.")
    return redirect("alerts")


@manager_required
@require_POST
def window_delete(request: HttpRequest, window_id: str) -> HttpResponse:
    """Delete a maintenance window."""
    window = access_maintenance_window(page_user(request), window_id)
    services.maintenance_window_delete(window=window)
    messages.success(request, f"The maintenance window {window} is deleted.")
    return redirect("alerts")
