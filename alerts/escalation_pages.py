"""The escalation policies pages: the list (everyone with access), and the form to create
or change a policy and the button to delete one (owners and admins)."""

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from accounts.access import manager_required, member_required, page_user
from accounts.models import Project, User
from alerts import escalation_validation as rules
from alerts import services
from alerts.escalation_forms import PolicyForm
from alerts.escalation_selectors import access_policy, load_steps, policies_visible
from alerts.models import EscalationPolicy, NotificationChannel, load_scopes

BLANK_ROWS = 3


def _channel_names(user: User) -> dict[Any, str]:
    """The organization's channels by id (no config loaded)."""
    rows = NotificationChannel.objects.for_org(user.organization).only("pk", "name")
    return dict(rows.values_list("pk", "name"))


@member_required
@require_safe
def policies_page(request: HttpRequest) -> HttpResponse:
    """The policies the user sees, each with its steps and the channels' names."""
    user = page_user(request)
    policies: list[EscalationPolicy] = list(policies_visible(user))
    load_steps(policies)
    load_scopes(policies)
    names = _channel_names(user)
    projects = dict(Project.objects.visible_to(user).values_list("pk", "name"))
    for policy in policies:
        policy.shown_steps = [  # type: ignore[attr-defined]
            (step, [names[pk] for pk in step.channel_ids if pk in names])
            for step in policy.step_list  # type: ignore[attr-defined]
        ]
        scoped, endpoint_ids = policy.scope_ids
        policy.scope = (  # type: ignore[attr-defined]
            [projects[pk] for pk in scoped if pk in projects]
            + [f"{len(endpoint_ids)} endpoint(s)"] * bool(endpoint_ids)
            if scoped or endpoint_ids
            else None
        )
    return render(request, "alerts/escalation_policies.html", {"policies": policies})


def _rows(form: PolicyForm, policy: EscalationPolicy | None) -> list[dict[str, Any]]:
    """The step rows to show: as posted, else the stored steps, then blank ones."""
    if form.is_bound:
        return [
            {
                "number": row,
                "after": form.data.get(f"step-{row}-after", ""),
                "chosen": set(form.posted_list(f"step-{row}-channels")),
                "errors": form.row_errors.get(row, []),
            }
            for row in range(form.rows)
        ]
    stored = policy.step_list if policy else []  # type: ignore[attr-defined]
    rows = [
        {"number": n, "after": s.after_minutes, "chosen": {str(pk) for pk in s.channel_ids}}
        for n, s in enumerate(stored)
    ]
    return rows + [{"number": n, "after": "", "chosen": set()} for n in range(len(rows), form.rows)]


def _form_page(
    request: HttpRequest, form: PolicyForm, policy: EscalationPolicy | None
) -> HttpResponse:
    user = page_user(request)
    context = {
        "form": form,
        "policy": policy,
        "rows": _rows(form, policy),
        "channels": sorted(_channel_names(user).items(), key=lambda item: item[1].lower()),
        "projects": list(Project.objects.visible_to(user).order_by("name")),
    }
    status = 400 if form.is_bound and form.errors else 200
    return render(request, "alerts/escalation_policy_form.html", context, status=status)


def _row_count(policy: EscalationPolicy | None) -> int:
    stored = len(policy.step_list) if policy else 0  # type: ignore[attr-defined]
    return min(rules.MAX_STEPS, stored + BLANK_ROWS)


@manager_required
@require_http_methods(["GET", "HEAD", "POST"])
def policy_new(request: HttpRequest) -> HttpResponse:
    """A form for a new policy; posted, the policy is created."""
    user = page_user(request)
    data = request.POST if request.method == "POST" else None
    form = PolicyForm(data, user=user, organization_id=user.organization_id, rows=_row_count(None))
    if data is None or not form.is_valid():
        return _form_page(request, form, None)
    policy = services.escalation_policy_create(
        organization=user.organization,
        name=form.cleaned_data["name"],
        steps=form.steps,
        repeat_every_minutes=form.cleaned_data["repeat_every_minutes"],
        projects=list(form.cleaned_data["projects"]),
    )
    messages.success(request, f"The escalation policy {policy.name} is added.")
    return redirect("escalation-policies")


@manager_required
@require_http_methods(["GET", "HEAD", "POST"])
def policy_edit(request: HttpRequest, policy_id: str) -> HttpResponse:
    """The form of a policy; posted, the policy is changed (its steps replaced)."""
    user = page_user(request)
    policy = access_policy(user, policy_id)
    load_steps([policy])
    load_scopes([policy])
    data = request.POST if request.method == "POST" else None
    initial = {
        "name": policy.name,
        "repeat_every_minutes": policy.repeat_every_minutes,
        "projects": list(policy.scope_ids[0]),
    }
    form = PolicyForm(
        data,
        user=user,
        organization_id=user.organization_id,
        rows=_row_count(policy),
        initial=initial,
    )
    if data is None or not form.is_valid():
        return _form_page(request, form, policy)
    services.escalation_policy_update(
        policy=policy,
        name=form.cleaned_data["name"],
        steps=form.steps,
        repeat_every_minutes=form.cleaned_data["repeat_every_minutes"],
        projects=list(form.cleaned_data["projects"]),
    )
    messages.success(request, f"The escalation policy {policy.name} is saved.")
    return redirect("escalation-policies")


@manager_required
@require_POST
def policy_delete(request: HttpRequest, policy_id: str) -> HttpResponse:
    """Delete a policy: incidents following it stop escalating."""
    policy = access_policy(page_user(request), policy_id)
    services.escalation_policy_delete(policy=policy)
    messages.success(request, f"The escalation policy {policy.name} is deleted.")
    return redirect("escalation-policies")
