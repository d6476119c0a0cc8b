"""Pages for people: sign in and out, register, reset a password, accept an invitation,
verify an address, change a password; the team and the projects.

Each form is checked by the API's serializer and handled by the API's service, so the
rules (password strength, one owner at least, throttling per IP and per account) are the
same on both sides.
"""

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login, logout, update_session_auth_hash
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from accounts import selectors, services
from accounts.access import (
    access_pending_invitation,
    access_project,
    access_user,
    manager_required,
    member_required,
    page_user,
)
from accounts.api import serializers as s
from accounts.api.throttling import page_throttle_wait
from accounts.models import Invitation, Project, Role
from accounts.tokens import hash_opaque_token
from healthmon.pages import PageForm, safe_next


def _render(
    request: HttpRequest, template: str, context: dict[str, Any], form: PageForm | None = None
) -> HttpResponse:
    """A page with its form; a form with errors answers 400 (or the service's status)."""
    status = form.status if form is not None and form.errors else 200
    return render(request, template, {"form": form or PageForm(), **context}, status=status)


def _throttled(
    request: HttpRequest, action: str, account: str, form: PageForm, user_id: object = None
) -> bool:
    """Count the post against the auth limits; over them, the form says when to retry."""
    wait = page_throttle_wait(request, action, account, user_id)
    if wait is None:
        return False
    form.errors["__all__"] = [f"Too many attempts. Try again in {int(wait) + 1} seconds."]
    form.status = 429
    return True


def _submit(
    request: HttpRequest,
    action: str,
    serializer: type[Any],
    account_field: str = "email",
    user_id: object = None,
) -> PageForm:
    """Throttle, then validate a form with the API's serializer."""
    form = PageForm(request.POST)
    if _throttled(request, action, str(request.POST.get(account_field, "")), form, user_id):
        return form
    return PageForm.check(serializer, request.POST)


@require_http_methods(["GET", "POST"])
def login_page(request: HttpRequest) -> HttpResponse:
    """Sign in with email and password."""
    form = PageForm()
    if request.method == "POST":
        form = _submit(request, "login", s.LoginSerializer)
        user = form.attempt(services.account_login)
        if user is not None:
            login(request, user)
            return redirect(safe_next(request))
    return _render(request, "accounts/login.html", {"next": safe_next(request, "")}, form)


@require_POST
def logout_page(request: HttpRequest) -> HttpResponse:
    """Sign out (a POST, so that no link or image can sign anyone out)."""
    logout(request)
    messages.info(request, "You are signed out.")
    return redirect("login")


@require_http_methods(["GET", "POST"])
def register_page(request: HttpRequest) -> HttpResponse:
    """Create an organization and its owner, then sign in."""
    form = PageForm()
    if request.method == "POST":
        form = _submit(request, "register", s.RegisterSerializer)
        created = form.attempt(services.account_register)
        if created is not None:
            user, organization, _project = created
            if settings.REQUIRE_EMAIL_VERIFICATION and not user.email_verified:
                # As at sign-in: no session until the mailed link proves the address.
                messages.success(request, f"We mailed a link to {user.email}: open it to finish.")
                return redirect("login")
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            messages.success(request, f"Welcome to healthmon, {organization.name}.")
            return redirect("overview")
    return _render(request, "accounts/register.html", {}, form)


@require_http_methods(["GET", "POST"])
def forgot_password_page(request: HttpRequest) -> HttpResponse:
    """Ask for a reset link; the answer is the same whether the address is known or not."""
    form, sent = PageForm(), False
    if request.method == "POST":
        form = _submit(request, "forgot_password", s.EmailSerializer)
        form.attempt(services.password_reset_request)
        sent = form.is_valid
    return _render(request, "accounts/forgot_password.html", {"sent": sent}, form)


def _link_token(request: HttpRequest) -> str:
    """The token of a mailed link: from the form once posted, from the link before."""
    return request.POST.get("token") or request.GET.get("token", "")


@require_http_methods(["GET", "POST"])
def reset_password_page(request: HttpRequest) -> HttpResponse:
    """Set a new password from a mailed link; every earlier session and token stops working."""
    token = _link_token(request)
    form = PageForm()
    if request.method == "POST":
        form = _submit(request, "reset_password", s.TokenPasswordSerializer, "token")
        form.attempt(services.password_reset_complete)
        if form.is_valid:
            messages.success(request, "Your password is changed. Sign in with it.")
            return redirect("login")
    return _render(request, "accounts/reset_password.html", {"token": token}, form)


def _pending_invitation(token: str) -> Invitation | None:
    if not token or len(token) > 512:
        return None
    return (
        Invitation.objects.pending()
        .select_related("organization")
        .filter(token_hash=hash_opaque_token(token))
        .first()
    )


@require_http_methods(["GET", "POST"])
def accept_invite_page(request: HttpRequest) -> HttpResponse:
    """Join an organization from a mailed invitation: choose a password, then sign in."""
    token = _link_token(request)
    form = PageForm()
    if request.method == "POST":
        form = _submit(request, "accept_invite", s.TokenPasswordSerializer, "token")
        user = form.attempt(services.invitation_accept)
        if user is not None:
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            messages.success(request, f"Welcome to {user.organization.name}.")
            return redirect("overview")
    invitation = _pending_invitation(token)
    response = _render(
        request, "accounts/accept_invite.html", {"token": token, "invitation": invitation}, form
    )
    if invitation is None and request.method == "GET":
        response.status_code = 400
    return response


@require_http_methods(["GET", "POST"])
def verify_email_page(request: HttpRequest) -> HttpResponse:
    """Confirm an email address from a mailed link."""
    token = _link_token(request)
    form = PageForm()
    if request.method == "POST":
        form = _submit(request, "verify_email", s.VerifyEmailSerializer, "")
        form.attempt(services.email_verify)
        if form.is_valid:
            messages.success(request, "Your email address is verified.")
            return redirect("overview" if request.user.is_authenticated else "login")
    return _render(request, "accounts/verify_email.html", {"token": token}, form)


@member_required
@require_http_methods(["GET", "POST"])
def account_page(request: HttpRequest) -> HttpResponse:
    """The signed-in user's account: change the password (other sessions end)."""
    user = page_user(request)
    form = PageForm()
    if request.method == "POST":
        form = _submit(request, "change_password", s.ChangePasswordSerializer, "", user_id=user.pk)
        changed = form.attempt(services.password_change, user=user)
        if changed is not None:
            update_session_auth_hash(request, changed)  # keep this session, end the others
            messages.success(request, "Your password is changed; other sessions are signed out.")
            return redirect("account")
    return _render(request, "accounts/account.html", {"account": user}, form)


# --- Team -----------------------------------------------------------------------------------


def _team(request: HttpRequest, form: PageForm | None = None) -> HttpResponse:
    user = page_user(request)
    organization = user.organization
    context = {
        "members": selectors.user_list(organization=organization),
        "invitations": selectors.invitation_list_pending(organization=organization),
        "projects": Project.objects.for_org(organization).order_by("name"),
        "roles": Role.choices if user.role == Role.OWNER else Role.choices[1:],
        "all_roles": Role.choices,
    }
    return _render(request, "accounts/team.html", context, form)


@manager_required
def team_page(request: HttpRequest) -> HttpResponse:
    """The organization's users and pending invitations, for owners and admins."""
    return _team(request)


@manager_required
@require_POST
def team_invite(request: HttpRequest) -> HttpResponse:
    """Invite someone by email with a role and projects."""
    form = PageForm.check(s.InvitationCreateSerializer, request.POST, context={"request": request})
    invitation = form.attempt(services.invitation_create, inviter=page_user(request))
    if invitation is None:
        return _team(request, form)
    messages.success(request, f"Invitation sent to {invitation.email}.")
    return redirect("team")


def team_action(request: HttpRequest, call: Any, done: str, **kwargs: Any) -> HttpResponse:
    """Run a service on a team member: back to the team page saying `done`, or showing
    the service's refusal there. (Removal, in `apikeys.views`, is one.)"""
    form = PageForm()
    form.attempt(call, **kwargs)
    if not form.is_valid:
        return _team(request, form)
    messages.success(request, done)
    return redirect("team")


@manager_required
@require_POST
def team_change_role(request: HttpRequest, user_id: str) -> HttpResponse:
    """Give a user another role (owners alone touch the owner role)."""
    target = access_user(page_user(request), user_id)
    form = PageForm.check(s.RoleSerializer, request.POST)
    if not form.is_valid:
        return _team(request, form)
    role = form.validated["role"]
    return team_action(
        request,
        services.user_change_role,
        f"{target.email} is now {Role(role).label.lower()}.",
        actor=page_user(request),
        user=target,
        role=role,
    )


@manager_required
@require_POST
def team_set_projects(request: HttpRequest, user_id: str) -> HttpResponse:
    """Replace the projects a member is granted."""
    target = access_user(page_user(request), user_id)
    form = PageForm.check(s.UserProjectsSerializer, request.POST, context={"request": request})
    form.attempt(services.user_set_projects, user=target)
    if not form.is_valid:
        return _team(request, form)
    messages.success(request, f"Projects of {target.email} saved.")
    return redirect("team")


@manager_required
@require_POST
def team_revoke_invitation(request: HttpRequest, invitation_id: str) -> HttpResponse:
    """Withdraw a pending invitation: its link stops working."""
    invitation = access_pending_invitation(page_user(request), invitation_id)
    services.invitation_revoke(invitation=invitation)
    messages.success(request, f"The invitation to {invitation.email} is withdrawn.")
    return redirect("team")


# --- Projects -------------------------------------------------------------------------------


def _projects(request: HttpRequest, form: PageForm | None = None) -> HttpResponse:
    projects = (
        Project.objects.visible_to(page_user(request))
        .annotate(endpoint_count=Count("endpoints"))
        .order_by("name")
    )
    return _render(request, "accounts/projects.html", {"projects": projects}, form)


@member_required
def projects_page(request: HttpRequest) -> HttpResponse:
    """The projects the user can see; owners and admins create, rename and delete them."""
    return _projects(request)


@manager_required
@require_POST
def project_create(request: HttpRequest) -> HttpResponse:
    """Add a project to the organization."""
    form = PageForm.check(s.ProjectSerializer, request.POST)
    project = form.attempt(services.project_create, organization=page_user(request).organization)
    if project is None:
        return _projects(request, form)
    messages.success(request, f"Project {project.name} created.")
    return redirect("projects")


@manager_required
@require_POST
def project_rename(request: HttpRequest, project_id: str) -> HttpResponse:
    """Rename a project."""
    project = access_project(page_user(request), project_id)
    form = PageForm.check(s.ProjectSerializer, request.POST)
    form.attempt(services.project_rename, project=project)
    if not form.is_valid:
        return _projects(request, form)
    messages.success(request, "Project renamed.")
    return redirect("projects")


@manager_required
@require_POST
def project_delete(request: HttpRequest, project_id: str) -> HttpResponse:
    """Delete a project with its endpoints and their history."""
    project = access_project(page_user(request), project_id)
    form = PageForm()
    form.attempt(services.project_delete, project=project)
    if not form.is_valid:
        return _projects(request, form)
    messages.success(request, f"Project {project.name} deleted.")
    return redirect("projects")
