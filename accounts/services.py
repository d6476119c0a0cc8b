"""Account workflows: registration, invitations, passwords, roles, removal and projects."""

import uuid
from collections.abc import Iterable
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth import authenticate
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction
from django.http import Http404
from django.utils import timezone

from accounts.audit import audit_record, authentication_failed, client_ip
from accounts.errors import (
    CannotRemoveSelf,
    EmailNotVerified,
    InvalidCredentials,
    LastOwner,
    ManagerRoleRequired,
    OwnerRoleRequired,
)
from accounts.models import (
    AuditAction,
    Invitation,
    Organization,
    Project,
    Role,
    User,
    new_ping_key,
    normalize_email,
)
from accounts.tokens import (
    hash_opaque_token,
    make_email_verification_token,
    make_password_reset_token,
    new_opaque_token,
    user_for_email_verification_token,
    user_for_password_reset_token,
)
from healthmon.errors import Conflict, InvalidInput
from healthmon.queue import enqueue, enqueue_on_commit

# The names `accounts.tasks` registers its tasks under (the tasks call these services).
SEND_EMAIL_TASK = "accounts.tasks.send_email"
SEND_PASSWORD_RESET_TASK = "accounts.tasks.send_password_reset"  # noqa: S105 - a task name

# What a mail template reads besides the site's address; it travels to the worker as JSON.
MailContext = dict[str, str | int]

INVALID_LINK = "This link is invalid, expired or already used."
EMAIL_TAKEN = "An account with this email already exists."
PROJECT_NAME_TAKEN = "A project with this name already exists."


def _mail(template: str, to: str, context: MailContext) -> None:
    """Send a templated email once the surrounding transaction has committed."""
    enqueue_on_commit(SEND_EMAIL_TASK, kwargs={"template": template, "to": to, "context": context})


def _link(path: str, token: str) -> str:
    """A link into the web UI; the origin comes from settings, never from the request."""
    return f"{settings.WEB_BASE_URL}{path}?{urlencode({'token': token})}"


def _check_new_password(password: str, user: User, field: str = "password") -> None:
    """Django's validators (minimum length 8, common, numeric, similar to the email)."""
    try:
        validate_password(password, user=user)
    except DjangoValidationError as exc:
        raise InvalidInput({field: list(exc.messages)}) from exc


def _set_password_and_revoke_tokens(locked: User, password: str) -> User:
    """Store a new password and invalidate every JWT issued before; the caller locked the row."""
    locked.set_password(password)
    locked.token_version += 1
    fields = ["password", "token_version"]
    if locked.email_verified_at is None:
        # Following a link mailed to the address proves the user owns it.
        locked.email_verified_at = timezone.now()
        fields.append("email_verified_at")
    locked.save(update_fields=fields)
    return locked


def _lock_for_role_change(actor: User, user: User) -> tuple[User, User]:
    """Lock the organization and re-read both users, so role checks see committed truth.

    Role changes and removals in one organization are serialized by this lock; a target
    removed meanwhile is a 404, an actor demoted meanwhile loses its rights.
    """
    Organization.objects.select_for_update().filter(pk=actor.organization_id).first()
    users = User.objects.for_org(actor.organization).in_bulk([actor.pk, user.pk])
    if user.pk not in users:
        raise Http404
    fresh_actor = users.get(actor.pk)
    if fresh_actor is None or not fresh_actor.is_manager:
        raise ManagerRoleRequired
    return fresh_actor, users[user.pk]


def _ensure_email_free(email: str) -> None:
    if User.objects.filter(email=email).exists():
        raise Conflict(EMAIL_TAKEN)


@transaction.atomic
def organization_create(*, name: str) -> tuple[Organization, Project]:
    """Create an organization with its default project."""
    return Organization.objects.create_with_default_project(name=name)


@transaction.atomic
def account_register(
    *, email: str, password: str, organization_name: str
) -> tuple[User, Organization, Project]:
    """Create an organization, its owner and its default project."""
    email = normalize_email(email)
    _check_new_password(password, User(email=email))
    _ensure_email_free(email)
    organization, project = organization_create(name=organization_name)
    try:
        with transaction.atomic():
            user = User.objects.create_user(
                email, password, organization=organization, role=Role.OWNER
            )
    except IntegrityError as exc:  # a concurrent registration took the email
        raise Conflict(EMAIL_TAKEN) from exc
    if settings.REQUIRE_EMAIL_VERIFICATION:
        email_verification_send(user=user)
    return user, organization, project


def account_login(*, email: str, password: str) -> User:
    """Check credentials; unknown email and wrong password are indistinguishable.

    Both outcomes are audited; a failure for an existing account shows in its
    organization's log.
    """
    email = normalize_email(email)
    user = authenticate(None, email=email, password=password)
    if not isinstance(user, User):
        known = User.objects.filter(email=email).values_list("organization_id", flat=True)
        audit_record(
            action=AuditAction.LOGIN_FAILED,
            organization_id=known.first(),
            details={"email": email},
        )
        authentication_failed(method="password", reason="wrong email or password")
        raise InvalidCredentials()
    if settings.REQUIRE_EMAIL_VERIFICATION and not user.email_verified:
        audit_record(
            action=AuditAction.LOGIN_FAILED,
            organization_id=user.organization_id,
            actor=user,
            details={"email": email, "reason": "email_not_verified"},
        )
        raise EmailNotVerified()
    audit_record(
        action=AuditAction.LOGIN_SUCCEEDED, organization_id=user.organization_id, actor=user
    )
    return user


def email_verification_send(*, user: User) -> None:
    """Mail a link that verifies the user's email address."""
    token = make_email_verification_token(user)
    _mail("verify_email", user.email, {"link": _link("/verify-email", token)})


@transaction.atomic
def email_verify(*, token: str) -> User:
    """Mark the address in a verification token as verified."""
    user = user_for_email_verification_token(token)
    if user is None:
        raise InvalidInput({"token": [INVALID_LINK]})
    if user.email_verified_at is None:
        user.email_verified_at = timezone.now()
        user.save(update_fields=["email_verified_at"])
    return user


def password_reset_request(*, email: str) -> None:
    """Queue the reset mail for this address.

    The worker looks the account up, so known and unknown emails take the same time here.
    """
    enqueue(SEND_PASSWORD_RESET_TASK, kwargs={"email": normalize_email(email), "ip": client_ip()})


@transaction.atomic
def password_reset_send(*, email: str, ip: str | None = None) -> None:
    """Mail a one-hour reset link if an active account has this email; else do nothing.

    `ip` is the requester's address, recorded in the account's audit log.
    """
    user = User.objects.filter(email=email, is_active=True).first()
    if user is None:
        return
    audit_record(
        action=AuditAction.PASSWORD_RESET_REQUESTED,
        organization_id=user.organization_id,
        target=user,
        ip=ip,
    )
    token = make_password_reset_token(user)
    hours = max(1, settings.PASSWORD_RESET_TIMEOUT // 3600)
    _mail(
        "password_reset",
        user.email,
        {"link": _link("/reset-password", token), "valid_hours": hours},
    )


@transaction.atomic
def password_reset_complete(*, token: str, password: str) -> User:
    """Set a new password from a reset link; revokes every earlier JWT and the link itself."""
    user = user_for_password_reset_token(token)
    if user is None:
        raise InvalidInput({"token": [INVALID_LINK]})
    _check_new_password(password, user)
    audit_record(
        action=AuditAction.PASSWORD_RESET, organization_id=user.organization_id, actor=user
    )
    return _set_password_and_revoke_tokens(user, password)


@transaction.atomic
def password_change(*, user: User, current_password: str, new_password: str) -> User:
    """Change a password knowing the current one; revokes every earlier JWT."""
    user = User.objects.select_for_update().get(pk=user.pk)
    if not user.check_password(current_password):
        raise InvalidInput({"current_password": ["The current password is incorrect."]})
    _check_new_password(new_password, user, field="new_password")
    audit_record(
        action=AuditAction.PASSWORD_CHANGED, organization_id=user.organization_id, actor=user
    )
    return _set_password_and_revoke_tokens(user, new_password)


@transaction.atomic
def invitation_create(
    *, inviter: User, email: str, role: str, projects: Iterable[Project]
) -> Invitation:
    """Invite someone by email; a newer invitation to the same address replaces the older."""
    email = normalize_email(email)
    if role == Role.OWNER and inviter.role != Role.OWNER:
        raise OwnerRoleRequired("Only an owner can invite another owner.")
    _ensure_email_free(email)
    now = timezone.now()
    organization = inviter.organization
    Invitation.objects.for_org(organization).pending(now).filter(email=email).update(revoked_at=now)
    token, token_hash = new_opaque_token()
    invitation = Invitation.objects.create(
        organization=organization,
        email=email,
        role=role,
        invited_by=inviter,
        token_hash=token_hash,
        expires_at=now + settings.INVITATION_TTL,
    )
    invitation.projects.set(projects)
    _mail_invitation(invitation, token)
    _audit_invitation(invitation, inviter)
    return invitation


def _audit_invitation(invitation: Invitation, actor: User | None, resent: bool = False) -> None:
    details: dict[str, str | bool] = {"email": invitation.email, "role": invitation.role}
    if resent:
        details["resent"] = True
    audit_record(
        action=AuditAction.INVITATION_SENT,
        organization_id=invitation.organization_id,
        actor=actor,
        target=invitation,
        details=details,
    )


def _mail_invitation(invitation: Invitation, token: str) -> None:
    """Mail the invitation's link (after commit)."""
    organization = invitation.organization
    inviter = invitation.invited_by
    _mail(
        "invitation",
        invitation.email,
        {
            "link": _link("/accept-invite", token),
            "organization": organization.name,
            "inviter": inviter.email if inviter else f"An administrator of {organization.name}",
            "role": invitation.get_role_display(),
            "expires_at": invitation.expires_at.strftime("%Y-%m-%d %H:%M UTC"),
        },
    )


@transaction.atomic
def invitation_resend(*, invitation: Invitation) -> Invitation:
    """Mail an open invitation again with a new link valid for a full TTL.

    Only the token's digest is stored, so the first link cannot be sent twice: a new token
    replaces it and the old link stops working. An expired invitation may be resent;
    an accepted or revoked one is a conflict. As in `invitation_create`, it replaces any
    other pending invitation to the same address.
    """
    locked = (
        Invitation.objects.select_for_update(of=("self",))
        .select_related("organization", "invited_by")
        .filter(pk=invitation.pk, accepted_at__isnull=True, revoked_at__isnull=True)
        .first()
    )
    if locked is None:
        raise Conflict("This invitation was already accepted or revoked.")
    _ensure_email_free(locked.email)
    now = timezone.now()
    organization = locked.organization
    Invitation.objects.for_org(organization).pending(now).filter(email=locked.email).exclude(
        pk=locked.pk
    ).update(revoked_at=now)
    token, locked.token_hash = new_opaque_token()
    locked.expires_at = now + settings.INVITATION_TTL
    locked.save(update_fields=["token_hash", "expires_at"])
    _mail_invitation(locked, token)
    _audit_invitation(locked, None, resent=True)
    return locked


@transaction.atomic
def invitation_accept(*, token: str, password: str) -> User:
    """Create the invited user with the invitation's role and projects; the link is single use."""
    invitation = (
        Invitation.objects.select_for_update()
        .select_related("organization")
        .pending()
        .filter(token_hash=hash_opaque_token(token))
        .first()
    )
    if invitation is None:
        raise InvalidInput({"token": [INVALID_LINK]})
    _check_new_password(password, User(email=invitation.email))
    _ensure_email_free(invitation.email)
    now = timezone.now()
    try:
        with transaction.atomic():
            user = User.objects.create_user(
                invitation.email,
                password,
                organization=invitation.organization,
                role=invitation.role,
                email_verified_at=now,
            )
    except IntegrityError as exc:  # the address registered meanwhile
        raise Conflict(EMAIL_TAKEN) from exc
    user.projects.set(invitation.projects.filter(organization=invitation.organization))
    invitation.accepted_at = now
    invitation.save(update_fields=["accepted_at"])
    audit_record(
        action=AuditAction.INVITATION_ACCEPTED,
        organization_id=invitation.organization_id,
        actor=user,
        target=invitation,
        details={"role": invitation.role},
    )
    return user


def invitation_revoke(*, invitation: Invitation) -> None:
    """Revoke a pending invitation: its link stops working."""
    Invitation.objects.filter(pk=invitation.pk, accepted_at__isnull=True).update(
        revoked_at=timezone.now()
    )


@transaction.atomic
def user_change_role(*, actor: User, user: User, role: str) -> User:
    """Change a user's role; only owners touch the owner role, and one owner always remains."""
    actor, user = _lock_for_role_change(actor, user)
    if role != Role.OWNER and user.is_last_owner():
        raise LastOwner("The last owner cannot be demoted; make someone else owner first.")
    if Role.OWNER in (user.role, role) and actor.role != Role.OWNER:
        raise OwnerRoleRequired("Only an owner can grant or change the owner role.")
    if user.role != role:
        audit_record(
            action=AuditAction.USER_ROLE_CHANGED,
            organization_id=user.organization_id,
            actor=actor,
            target=user,
            details={"from": user.role, "to": role},
        )
        user.role = role
        user.save(update_fields=["role"])
    return user


@transaction.atomic
def user_remove(*, actor: User, user: User) -> None:
    """Remove a user from the organization; its tokens stop working at once.

    Its API keys stop working too (key authentication refuses a key whose creator is
    gone); `apikeys.services.member_remove` also marks them revoked, for the record.
    """
    if user.pk == actor.pk:
        raise CannotRemoveSelf()
    actor, user = _lock_for_role_change(actor, user)
    if user.is_last_owner():
        raise LastOwner("The last owner cannot be removed.")
    if user.role == Role.OWNER and actor.role != Role.OWNER:
        raise OwnerRoleRequired("Only an owner can remove an owner.")
    audit_record(
        action=AuditAction.USER_REMOVED,
        organization_id=user.organization_id,
        actor=actor,
        target=user,
        details={"email": user.email, "role": user.role},
    )
    user.delete()


@transaction.atomic
def user_set_projects(*, user: User, projects: Iterable[Project]) -> User:
    """Replace the projects a user is granted."""
    user.projects.set(projects)
    return user


def _ensure_project_name_free(
    organization: Organization, name: str, exclude: uuid.UUID | None
) -> None:
    taken = Project.objects.for_org(organization).filter(name__iexact=name)
    if exclude is not None:
        taken = taken.exclude(pk=exclude)
    if taken.exists():
        raise Conflict(PROJECT_NAME_TAKEN)


@transaction.atomic
def project_create(*, organization: Organization, name: str) -> Project:
    """Create a project; names are unique (case-insensitively) per organization."""
    _ensure_project_name_free(organization, name, exclude=None)
    try:
        with transaction.atomic():
            return Project.objects.create(organization=organization, name=name)
    except IntegrityError as exc:  # a concurrent request took the name
        raise Conflict(PROJECT_NAME_TAKEN) from exc


@transaction.atomic
def project_rename(*, project: Project, name: str) -> Project:
    """Rename a project, keeping names unique per organization."""
    _ensure_project_name_free(project.organization, name, exclude=project.pk)
    project.name = name
    try:
        with transaction.atomic():
            project.save(update_fields=["name"])
    except IntegrityError as exc:
        raise Conflict(PROJECT_NAME_TAKEN) from exc
    return project


@transaction.atomic
def project_rotate_ping_key(*, project: Project) -> Project:
    """Give the project a new ping key: slug ping URLs with the old one stop working at once.

    Recorded in the audit log, without either key: a rotation breaks every crontab that
    pings the old one, so owners need to see who did it and when.
    """
    project.ping_key = new_ping_key()
    project.save(update_fields=["ping_key"])
    audit_record(
        action=AuditAction.PING_KEY_ROTATED,
        organization_id=project.organization_id,
        target=project,
    )
    return project


@transaction.atomic
def project_delete(*, project: Project) -> None:
    """Delete a project that has no endpoints left; their history is never deleted by surprise."""
    locked = Project.objects.select_for_update().get(pk=project.pk)
    if locked.endpoints.exists():
        raise Conflict("Delete or move this project's endpoints first.")
    locked.delete()
