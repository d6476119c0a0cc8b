"""Endpoint management pages: create, edit, pause, resume, check now and delete.

The forms are checked by the API's `EndpointSerializer`, whose checks of the fields together
are the domain's (`monitoring.validation`), and written by the same services, so a page
accepts exactly what the API accepts; targets are shown masked, and sending the mask back
keeps the stored secret.
"""

import json
from datetime import datetime
from typing import Any

from django.contrib import messages
from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.access import member_required, page_user
from accounts.models import Project
from healthmon.errors import PROBLEM_CONTENT_TYPE, ErrorCode, InvalidInput, problem
from healthmon.pages import PageForm
from monitoring import forms, services
from monitoring.access import access_endpoint
from monitoring.api.serializers import LOCATIONS_SHOWN, EndpointSerializer
from monitoring.models import SLA_TIERS, Endpoint, EndpointType
from monitoring.schedules import Schedule, describe, expected_times, schedule_of
from monitoring.validation import (
    DEFAULT_INTERVAL,
    DEFAULT_TIMEOUT,
    OPTIONS,
    endpoint_limits,
    schedule_input,
)

# Fields the edit form posts (the API's writable ones, less `enabled`: pause and resume are
# buttons); anything else in the body is ignored.
EDITABLE = [
    name
    for name in EndpointSerializer.Meta.fields
    if name not in {*EndpointSerializer.Meta.read_only_fields, "enabled"}
]


# The form's fields as the page names them, for the errors listed above the form.
LABELS = {
    "project": "Project",
    "name": "Name",
    "type": "Type",
    "target": "Target",
    "slug": "Slug",
    "interval_seconds": "Interval (s)",
    "timeout_seconds": "Timeout (s)",
    "failure_threshold": "Failures to open an incident",
    "recovery_threshold": "Successes to resolve it",
    "sla_target": "SLA target",
    "locations": "Locations",
    "quorum": "Quorum",
    "config": "Options (JSON)",
}

# A filled example of the Options box per type (a test checks each one validates).
CONFIG_EXAMPLES: dict[str, dict[str, Any]] = {
    EndpointType.HTTP: {
        "method": "GET",
        "expected_status": [200, 204],
        "headers": {"Accept": "application/json"},
        "body_contains": "ok",
    },
    EndpointType.GRAPHQL: {"query": "{ __typename }", "degraded_above_ms": 800},
    EndpointType.GRPC: {"service": "payments.v1.Payments", "tls": True},
    EndpointType.POSTGRESQL: {"verify_tls": True, "degraded_above_ms": 500},
    EndpointType.MYSQL: {"verify_tls": True, "degraded_above_ms": 500},
    EndpointType.REDIS: {"verify_tls": False, "degraded_above_ms": 200},
    EndpointType.ELASTICSEARCH: {"min_status": "green"},
    EndpointType.WEBSOCKET: {"send": "ping", "expect": "pong"},
    EndpointType.TCP: {"send": "PING\r\n", "expect": "+PONG"},
    EndpointType.SMTP: {"starttls": True, "verify_tls": True},
    EndpointType.CUSTOM: {"verify_tls": True, "degraded_above_ms": 1000},
    EndpointType.HEARTBEAT: {"grace_seconds": 3600, "min_run_seconds": 30},
    EndpointType.ICMP: {"count": 5, "max_loss_percent": 20, "degraded_above_ms": 100},
    EndpointType.DNS: {"record_type": "MX", "expected": ["10 mail.example.com"]},
    EndpointType.TLS: {"certificate_expiry_days": [30, 14, 7, "10%"], "verify_tls": True},
}

# An example target per type, shown beside its options.
TARGET_EXAMPLES: dict[str, str] = {
    EndpointType.TCP: "tcp://db.example.com:5432",
    EndpointType.SMTP: "smtp://mail.example.com:587 (or smtps://mail.example.com:465)",
    EndpointType.TLS: "tls://mail.example.com:993",
}


def type_help() -> list[dict[str, Any]]:
    """Per type: its label, its options (name, default, help) and a filled example."""
    return [
        {
            "value": value,
            "label": label,
            "options": [
                (name, json.dumps(option.default()), option.help)
                for name, option in OPTIONS[value].items()
            ],
            "example": json.dumps(CONFIG_EXAMPLES[value], indent=2),
            "target_example": TARGET_EXAMPLES.get(value, ""),
        }
        for value, label in EndpointType.choices
    ]


def _posted(request: HttpRequest, fields: list[str]) -> QueryDict:
    """The posted endpoint fields; a blank config means "leave it" (the defaults on create)."""
    data = QueryDict(mutable=True)
    for name in fields:
        if name in request.POST:
            data[name] = request.POST[name]
    if LOCATIONS_SHOWN in request.POST:  # the boxes ticked, perhaps none
        data.setlist("locations", request.POST.getlist("locations"))
        data[LOCATIONS_SHOWN] = "1"
    if not data.get("config", "").strip():
        data.pop("config", None)
    if data.get("type") == EndpointType.HEARTBEAT and data.get("target") == "":
        data.pop("target")  # a heartbeat has none: the form's empty box sends nothing
    if data.get("slug") == "":
        data.pop("slug")  # no slug; an edit that empties the box removes it (`_slug_cleared`)
    return data


def _slug_cleared(request: HttpRequest, endpoint: Endpoint) -> bool:
    """The edit form's slug box was emptied: the heartbeat's slug goes (null in the API)."""
    return endpoint.slug is not None and request.POST.get("slug") == ""


def preview(schedule: Schedule, now: datetime) -> dict[str, Any]:
    """A schedule's next five expected times, as the form and the schedule preview show them."""
    times = expected_times(schedule, now)
    return {
        "description": describe(schedule),
        "times": [moment.isoformat() for moment in times],
        "shown": [f"{moment:%Y-%m-%d %H:%M} {moment.tzname()}" for moment in times],
    }


def _form_page(
    request: HttpRequest, form: PageForm, endpoint: Endpoint | None = None
) -> HttpResponse:
    chosen = form.data.get("type") or (endpoint.type if endpoint else EndpointType.HTTP)
    types = type_help()
    saved = None
    if endpoint is not None and endpoint.type == EndpointType.HEARTBEAT:
        saved = preview(schedule_of(endpoint.interval_seconds, endpoint.config), timezone.now())
        saved["pairs"] = list(zip(saved["times"], saved["shown"], strict=True))
    context = {
        "form": form,
        "endpoint": endpoint,
        "chosen": chosen,
        "saved_schedule": saved,
        "projects": Project.objects.visible_to(page_user(request)).order_by("name"),
        "types": EndpointType.choices,
        "type_help": types,
        "example": next((t["example"] for t in types if t["value"] == chosen), ""),
        "limits": endpoint_limits(),
        "default_timeout": DEFAULT_TIMEOUT,
        "sla_tiers": SLA_TIERS,
    }
    context.update(_assertion_context(request, form, endpoint))
    context.update(_location_context(request, form, endpoint))
    status = form.status if form.errors else 200
    return render(request, "monitoring/endpoint_form.html", context, status=status)


def _assertion_context(
    request: HttpRequest, form: PageForm, endpoint: Endpoint | None
) -> dict[str, Any]:
    """The assertion editor's rows: as posted (with their errors), or as saved."""
    posted = request.method == "POST" and forms.SHOWN_MARK in request.POST
    rows = forms.posted_rows(request.POST) if posted else forms.stored_rows(endpoint)
    return {
        "assertion_rows": forms.shown_rows(rows, form.errors.get("config", [])),
        "assertion_sources": forms.SOURCE_CHOICES,
        "assertion_comparisons": forms.COMPARISON_CHOICES,
        "assertion_help": forms.SUPPORTED_HELP,
    }


def _location_context(
    request: HttpRequest, form: PageForm, endpoint: Endpoint | None
) -> dict[str, Any]:
    """The location boxes (ticked as posted, or as saved) and the quorum box."""
    post = request.POST if request.method == "POST" else None
    # The quorum is typed in its own box: its errors are shown (and summed up) there, once,
    # not under the Options box it is merged into.
    config_errors = form.errors.get("config", [])
    quorum_errors = [m.removeprefix("quorum: ") for m in config_errors if m.startswith("quorum: ")]
    if quorum_errors:
        rest = [m for m in config_errors if not m.startswith("quorum: ")]
        if rest:
            form.errors["config"] = rest
        else:
            form.errors.pop("config", None)
        form.errors["quorum"] = quorum_errors
    return {
        "location_choices": forms.location_choices(),
        "chosen_locations": forms.chosen_locations(post, endpoint),
        "quorum": forms.shown_quorum(post, endpoint),
        "quorum_errors": quorum_errors,
    }


def _with_rows(request: HttpRequest, data: QueryDict, endpoint: Endpoint | None) -> QueryDict:
    """The posted fields with the assertion rows and the quorum box put into the config
    they are checked in."""
    kind = data.get("type") or (endpoint.type if endpoint else "")
    merged = forms.merge_rows(request.POST, request.POST.get("config", ""), endpoint, kind)
    if merged is not None:
        data["config"] = merged
    merged = forms.merge_quorum(request.POST, data.get("config", ""), endpoint, kind)
    if merged is not None:
        data["config"] = merged
    return data


def _shown_as_typed(form: PageForm, request: HttpRequest) -> PageForm:
    """The options box shows what was typed in it, not the config the rows went into."""
    form.data = {**dict(form.data.items()), "config": request.POST.get("config", "")}
    return form


def _initial(endpoint: Endpoint) -> dict[str, Any]:
    """The edit form's values: the masked target and config, never the secrets."""
    return {
        "project": str(endpoint.project_id),
        "name": endpoint.name,
        "type": endpoint.type,
        "target": endpoint.target_masked,
        "slug": endpoint.slug or "",
        "interval_seconds": endpoint.interval_seconds,
        "timeout_seconds": endpoint.timeout_seconds,
        "failure_threshold": endpoint.failure_threshold,
        "recovery_threshold": endpoint.recovery_threshold,
        "sla_target": endpoint.sla_target,
        "config": json.dumps(forms.without_assertions(endpoint.config_masked), indent=2),
    }


@member_required
@require_http_methods(["GET", "POST"])
def endpoint_create(request: HttpRequest) -> HttpResponse:
    """Start monitoring a service (members in their projects, owners and admins anywhere)."""
    if request.method == "GET":
        form = PageForm(
            {
                "project": request.GET.get("project", ""),
                "interval_seconds": DEFAULT_INTERVAL,
                "failure_threshold": 2,
                "recovery_threshold": 1,
                "sla_target": 99.9,
                "enabled": "on",
            },
            LABELS,
        )
        return _form_page(request, form)
    data = _with_rows(request, _posted(request, [*EDITABLE, "enabled"]), None)
    form = PageForm.check(EndpointSerializer, data, LABELS, context={"request": request})
    endpoint = form.attempt(services.endpoint_create)
    if endpoint is None:
        return _form_page(request, _shown_as_typed(form, request))
    messages.success(request, f"{endpoint.name} is monitored now.")
    return redirect("endpoint", endpoint_id=endpoint.pk)


@member_required
@require_http_methods(["GET", "POST"])
def endpoint_edit(request: HttpRequest, endpoint_id: str) -> HttpResponse:
    """Change what and how an endpoint is probed."""
    user = page_user(request)
    if request.method == "GET":
        endpoint = access_endpoint(user, endpoint_id)
        return _form_page(request, PageForm(_initial(endpoint), LABELS), endpoint)
    with transaction.atomic():
        endpoint = access_endpoint(user, endpoint_id, for_update=True)
        data = _with_rows(request, _posted(request, EDITABLE), endpoint)
        form = PageForm.check(
            EndpointSerializer,
            data,
            LABELS,
            instance=endpoint,
            partial=True,
            context={"request": request},
        )
        if form.is_valid and _slug_cleared(request, endpoint):
            form.validated["slug"] = None
        form.attempt(_update, endpoint=endpoint)
    if not form.is_valid:
        return _form_page(request, _shown_as_typed(form, request), endpoint)
    messages.success(request, f"{endpoint.name} is saved.")
    return redirect("endpoint", endpoint_id=endpoint.pk)


@member_required
@require_GET
def schedule_preview(request: HttpRequest) -> HttpResponse:
    """The next five times a heartbeat schedule typed in the form expects a ping (nothing is
    read or stored): `interval_seconds`, or `cron` with `timezone`; a 400 names bad fields."""
    query = request.GET
    try:
        schedule = schedule_input(
            interval_seconds=query.get("interval_seconds", ""),
            cron=query.get("cron", ""),
            timezone=query.get("timezone", ""),
        )
    except InvalidInput as exc:
        body = problem(400, ErrorCode.VALIDATION_ERROR, "The schedule is not valid.")
        body["errors"] = exc.errors
        return JsonResponse(body, status=400, content_type=PROBLEM_CONTENT_TYPE)
    return JsonResponse(preview(schedule, timezone.now()))


def _update(*, endpoint: Endpoint, **validated: Any) -> Endpoint:
    """Write the edit form's validated fields."""
    changes = services.EndpointChanges(**validated)
    return services.endpoint_update(endpoint=endpoint, changes=changes)


def _toggle(request: HttpRequest, endpoint_id: str, enabled: bool) -> HttpResponse:
    with transaction.atomic():
        endpoint = access_endpoint(page_user(request), endpoint_id, for_update=True)
        endpoint = services.endpoint_set_enabled(endpoint=endpoint, enabled=enabled)
    messages.success(request, f"{endpoint.name} is {'resumed' if enabled else 'paused'}.")
    return redirect("endpoint", endpoint_id=endpoint.pk)


@member_required
@require_POST
def endpoint_pause(request: HttpRequest, endpoint_id: str) -> HttpResponse:
    """Stop checking an endpoint; its history stays."""
    return _toggle(request, endpoint_id, enabled=False)


@member_required
@require_POST
def endpoint_resume(request: HttpRequest, endpoint_id: str) -> HttpResponse:
    """Check an endpoint again, at once."""
    return _toggle(request, endpoint_id, enabled=True)


@member_required
@require_POST
def endpoint_check_now(request: HttpRequest, endpoint_id: str) -> HttpResponse:
    """Queue an immediate check."""
    endpoint = access_endpoint(page_user(request), endpoint_id)
    form = PageForm()
    form.attempt(services.endpoint_check_now, endpoint=endpoint)
    for field_messages in form.errors.values():
        for message in field_messages:
            messages.error(request, message)
    if form.is_valid:
        messages.success(request, f"A check of {endpoint.name} is queued.")
    return redirect("endpoint", endpoint_id=endpoint.pk)


@member_required
@require_POST
def endpoint_delete(request: HttpRequest, endpoint_id: str) -> HttpResponse:
    """Stop monitoring and delete an endpoint with its history."""
    with transaction.atomic():
        endpoint = access_endpoint(page_user(request), endpoint_id, for_update=True)
        name = endpoint.name
        services.endpoint_delete(endpoint=endpoint)
    messages.success(request, f"{name} is deleted with its history.")
    return redirect("overview")
