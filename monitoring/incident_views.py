"""Incident pages: the organization's incidents (open first) with a form to declare one,
and an incident with its updates, internal notes and the forms to post an update, add a
note and edit what readers see.

Everyone reads what the API lets them read; owners and admins write. The forms are checked
by the API's serializers and written by the same services, so a page accepts exactly what
the API accepts.
"""

from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe

from accounts.access import get_or_404, manager_required, member_required, page_user
from accounts.models import User
from healthmon.pages import PageForm
from monitoring import incidents
from monitoring.access import access_incident
from monitoring.acknowledgement import incident_acknowledge
from monitoring.api.incident_serializers import (
    IncidentDeclareSerializer,
    IncidentEditSerializer,
    IncidentNoteCreateSerializer,
    IncidentUpdateCreateSerializer,
)
from monitoring.errors import IncidentResolved
from monitoring.models import AckVia, Incident, IncidentImpact, IncidentState
from monitoring.selectors import (
    Choices,
    endpoint_choices,
    incidents_load,
    incidents_open_first,
    incidents_visible,
    loaded,
)
from monitoring.timeline import incident_timeline
from monitoring.validation.incidents import allowed_statuses

PER_PAGE = 50
DECLARE_LABELS = {
    "title": "Title",
    "endpoints": "Endpoints",
    "impact": "Impact",
    "message": "First update",
    "public": "Public",
}
UPDATE_LABELS = {"status": "Status", "message": "Message"}
NOTE_LABELS = {"text": "Note"}
EDIT_LABELS = {"title": "Title", "impact": "Impact", "public": "Public"}


def _posted(
    request: HttpRequest, *, boxes: tuple[str, ...] = (), lists: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The posted form as the API's JSON would say it: checkboxes as booleans (a browser
    leaves an unchecked one out, which would read as "use the default"), lists as lists."""
    data: dict[str, Any] = request.POST.dict()
    data.pop("csrfmiddlewaretoken", None)
    data.update({name: name in request.POST for name in boxes})
    data.update({name: request.POST.getlist(name) for name in lists})
    return data


def _choices(request: HttpRequest, user: User, form: PageForm | None) -> Choices:
    """The declaration form's endpoints: those found by name (`q`), and those it was
    posted with."""
    picked = form.data.get("endpoints", []) if form is not None else []
    return endpoint_choices(user, request.GET.get("q", ""), picked)


def _list_page(request: HttpRequest, form: PageForm | None = None) -> HttpResponse:
    """The incidents, the declaration form as posted (its errors answer 400)."""
    user = page_user(request)
    page = Paginator(incidents_open_first(user), PER_PAGE).get_page(request.GET.get("page"))
    for incident in page.object_list:
        incident.shown_title = incidents.incident_title(incident)  # type: ignore[attr-defined]
    context = {
        "page": page,
        "form": form or PageForm({"public": "on", "notify_subscribers": "on"}),
        "choices": _choices(request, user, form) if user.is_manager else None,
        "impacts": IncidentImpact.choices,
    }
    status = form.status if form is not None and form.errors else 200
    return render(request, "monitoring/incidents.html", context, status=status)


@member_required
@require_safe
def incident_list(request: HttpRequest) -> HttpResponse:
    """The organization's incidents the user sees, open ones first."""
    return _list_page(request)


@manager_required
@require_POST
def incident_declare(request: HttpRequest) -> HttpResponse:
    """Declare an incident; back to the list with the errors when refused."""
    user = page_user(request)
    data = _posted(request, boxes=("public", "notify_subscribers"), lists=("endpoints",))
    form = PageForm.check(
        IncidentDeclareSerializer, data, DECLARE_LABELS, context={"request": request}
    )
    incident = form.attempt(incidents.incident_declare, organization=user.organization, author=user)
    if incident is None:
        form.data = {**request.POST.dict(), "endpoints": data["endpoints"]}
        return _list_page(request, form)
    messages.success(request, f"The incident “{incident.title}” is declared.")
    return redirect("incident", incident_id=incident.pk)


def _detail_page(
    request: HttpRequest, incident_id: str, forms: dict[str, PageForm] | None = None
) -> HttpResponse:
    """One incident, the forms as posted (one with errors answers 400)."""
    user = page_user(request)
    incident = get_or_404(incidents_visible(user), incident_id)
    incidents_load([incident], user)
    forms = forms or {}
    title = incidents.incident_title(incident)
    context: dict[str, Any] = {
        "incident": incident,
        "title": title,
        "endpoints": [incident.endpoint] if incident.endpoint else loaded(incident, "endpoints"),
        "updates": list(reversed(loaded(incident, "updates"))),
        "notes": loaded(incident, "notes"),
        "timeline": incident_timeline(incident),
        "statuses": [(s, IncidentState(s).label) for s in allowed_statuses(incident)],
        "impacts": IncidentImpact.choices,
        "update_form": forms.get("update") or PageForm({"notify_subscribers": "on"}),
        "note_form": forms.get("note") or PageForm(),
        "edit_form": forms.get("edit") or PageForm(_edit_initial(incident, title)),
    }
    failed = [form for form in forms.values() if form.errors]
    status = failed[0].status if failed else 200
    return render(request, "monitoring/incident.html", context, status=status)


def _edit_initial(incident: Incident, title: str) -> dict[str, Any]:
    return {"title": title, "impact": incident.impact, "public": "on" if incident.public else ""}


@member_required
@require_safe
def incident_detail(request: HttpRequest, incident_id: str) -> HttpResponse:
    """An incident with its updates and internal notes."""
    return _detail_page(request, incident_id)


@manager_required
@require_POST
def incident_post_update(request: HttpRequest, incident_id: str) -> HttpResponse:
    """Post an update; the incident takes its state."""
    user = page_user(request)
    incident = access_incident(user, incident_id)
    context = {"request": request, "incident": incident}
    data = _posted(request, boxes=("notify_subscribers",))
    form = PageForm.check(IncidentUpdateCreateSerializer, data, UPDATE_LABELS, context=context)
    if form.attempt(incidents.incident_update_post, incident=incident, author=user) is None:
        form.data = request.POST  # shown as posted: a box left unchecked stays so
        return _detail_page(request, incident_id, {"update": form})
    messages.success(request, "The update is posted.")
    return redirect("incident", incident_id=incident.pk)


@manager_required
@require_POST
def incident_add_note(request: HttpRequest, incident_id: str) -> HttpResponse:
    """Add an internal note."""
    user = page_user(request)
    incident = access_incident(user, incident_id)
    form = PageForm.check(IncidentNoteCreateSerializer, _posted(request), NOTE_LABELS)
    if form.attempt(incidents.incident_note_add, incident=incident, author=user) is None:
        return _detail_page(request, incident_id, {"note": form})
    messages.success(request, "The note is added.")
    return redirect("incident", incident_id=incident.pk)


@manager_required
@require_POST
def incident_edit(request: HttpRequest, incident_id: str) -> HttpResponse:
    """Change the title, the impact and whether status pages show the incident."""
    incident = access_incident(page_user(request), incident_id)
    form = PageForm.check(IncidentEditSerializer, _posted(request, boxes=("public",)), EDIT_LABELS)
    if form.attempt(incidents.incident_edit, incident=incident) is None:
        form.data = request.POST
        return _detail_page(request, incident_id, {"edit": form})
    messages.success(request, "The incident is saved.")
    return redirect("incident", incident_id=incident.pk)


@member_required
@require_POST
def incident_acknowledge_view(request: HttpRequest, incident_id: str) -> HttpResponse:
    """Acknowledge the incident (every member who sees it may): escalation stops."""
    user = page_user(request)
    incident = access_incident(user, incident_id)
    try:
        done = incident_acknowledge(incident=incident, by=user, via=AckVia.PAGE)
    except IncidentResolved as exc:
        messages.error(request, exc.detail)
    else:
        if done.acknowledged_now:
            messages.success(request, "The incident is acknowledged: escalation stops.")
        else:
            messages.info(request, "The incident was already acknowledged.")
    return redirect("incident", incident_id=incident.pk)
