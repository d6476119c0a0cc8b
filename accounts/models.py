"""Organizations, their users and roles, projects, member project access and invitations."""

import secrets
import uuid
from datetime import datetime
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser, BaseUserManager
from django.contrib.auth.models import PermissionsMixin
from django.db import models, transaction
from django.db.models.functions import Lower
from django.utils import timezone


class Role(models.TextChoices):
    """A user's role in its organization, spelled on the wire as the value."""

    OWNER = "owner", "Owner"
    ADMIN = "admin", "Admin"
    MEMBER = "member", "Member"


MANAGER_ROLES = frozenset({Role.OWNER, Role.ADMIN})
DEFAULT_PROJECT_NAME = "Default"
# A project's ping key: 22 URL-safe characters, never a UUID (32 hex digits), so that
# `/ping/<a>/<b>` is told apart from `/ping/<uuid>/<action>` by its first part alone.
PING_KEY_BYTES = 16


def new_ping_key() -> str:
    """A fresh random project ping key."""
    return secrets.token_urlsafe(PING_KEY_BYTES)


def normalize_email(email: str) -> str:
    """Emails are logins and compared case-insensitively: store them trimmed and lowercased."""
    return email.strip().lower()


class OrganizationQuerySet(models.QuerySet["Organization"]):
    """Organizations; each is born with its default project."""

    def create_with_default_project(self, *, name: str) -> tuple["Organization", "Project"]:
        """Create an organization and the project every organization starts with."""
        organization = self.create(name=name)
        project = Project.objects.create(organization=organization, name=DEFAULT_PROJECT_NAME)
        return organization, project


class Organization(models.Model):
    """A tenant: every user, project and monitored endpoint belongs to exactly one."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    objects = OrganizationQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class ProjectQuerySet(models.QuerySet["Project"]):
    """Reusable project filters."""

    def for_org(self, organization: Organization) -> "ProjectQuerySet":
        """Projects of one organization."""
        return self.filter(organization=organization)

    def visible_to(self, user: "User") -> "ProjectQuerySet":
        """Owners and admins see every project of their organization; members the granted ones."""
        projects = self.for_org(user.organization)
        if user.is_manager:
            return projects
        return projects.filter(access__user=user)


class Project(models.Model):
    """A group of monitored endpoints inside an organization."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="projects"
    )
    name = models.CharField(max_length=200)
    # The first part of its heartbeats' slug ping URLs (`/ping/<ping_key>/<slug>`).
    ping_key = models.CharField(max_length=64, unique=True, default=new_ping_key, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    objects = ProjectQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "name"]
        constraints = [
            models.UniqueConstraint(
                "organization", Lower("name"), name="accounts_project_name_unique_in_org"
            )
        ]

    def __str__(self) -> str:
        return self.name


class UserQuerySet(models.QuerySet["User"]):
    """Reusable user filters."""

    def for_org(self, organization: Organization) -> "UserQuerySet":
        """Users of one organization."""
        return self.filter(organization=organization)

    def owners(self) -> "UserQuerySet":
        """Users holding the owner role."""
        return self.filter(role=Role.OWNER)


class UserManager(BaseUserManager.from_queryset(UserQuerySet)):  # type: ignore[misc]
    """Creates users by email; `createsuperuser` gets an organization of its own."""

    use_in_migrations = True

    def get_by_natural_key(self, username: str | None) -> "User":
        """Look the login email up case-insensitively."""
        return self.get(email=normalize_email(username or ""))

    def create_user(
        self,
        email: str,
        password: str | None = None,
        *,
        organization: Organization,
        role: str = Role.MEMBER,
        **extra: Any,
    ) -> "User":
        """Create a user in an organization."""
        user = self.model(email=email, organization=organization, role=role, **extra)
        user.set_password(password)
        user.save(using=self._db)
        return user

    @transaction.atomic
    def create_superuser(self, email: str, password: str | None = None, **extra: Any) -> "User":
        """Create a Django-admin superuser, owner of a new organization of its own."""
        organization, _ = Organization.objects.create_with_default_project(name="Operations")
        extra.update(is_staff=True, is_superuser=True, email_verified_at=timezone.now())
        return self.create_user(
            email, password, organization=organization, role=Role.OWNER, **extra
        )


class User(AbstractBaseUser, PermissionsMixin):
    """A person who signs in with email and password; belongs to one organization."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    email = models.EmailField(max_length=254, unique=True)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="users")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    is_active = models.BooleanField(default=True)
    is_staff = models.BooleanField(default=False, help_text="Can sign in to the Django admin.")
    email_verified_at = models.DateTimeField(null=True, blank=True)
    # Part of every JWT; bumping it revokes all tokens issued before.
    token_version = models.PositiveIntegerField(default=0, editable=False)
    date_joined = models.DateTimeField(default=timezone.now, editable=False)
    projects = models.ManyToManyField(
        Project, through="ProjectAccess", related_name="members", blank=True
    )

    objects = UserManager()

    USERNAME_FIELD = "email"
    EMAIL_FIELD = "email"
    REQUIRED_FIELDS = []

    class Meta:
        ordering = ["date_joined", "email"]
        constraints = [
            models.UniqueConstraint(Lower("email"), name="accounts_user_email_ci_unique"),
        ]
        indexes = [models.Index(fields=["organization", "role"])]

    def __str__(self) -> str:
        return self.email

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Store the email normalized so that the case-insensitive constraint holds."""
        self.email = normalize_email(self.email)
        super().save(*args, **kwargs)

    @property
    def is_manager(self) -> bool:
        """Owners and admins manage users, invitations and projects."""
        return self.role in MANAGER_ROLES

    def is_last_owner(self) -> bool:
        """Whether this user is the only owner of its organization (as stored in `role`)."""
        if self.role != Role.OWNER:
            return False
        others = User.objects.for_org(self.organization).owners().exclude(pk=self.pk)
        return not others.exists()

    @property
    def email_verified(self) -> bool:
        """Whether the user proved ownership of the email address."""
        return self.email_verified_at is not None


class ProjectAccess(models.Model):
    """A member's grant to one project (owners and admins see every project anyway)."""

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="access")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="access")
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "project"], name="accounts_access_unique")
        ]

    def __str__(self) -> str:
        return f"{self.user} → {self.project}"


class InvitationQuerySet(models.QuerySet["Invitation"]):
    """Reusable invitation filters."""

    def for_org(self, organization: Organization) -> "InvitationQuerySet":
        """Invitations of one organization."""
        return self.filter(organization=organization)

    def pending(self, now: datetime | None = None) -> "InvitationQuerySet":
        """Invitations that can still be accepted."""
        return self.filter(
            accepted_at__isnull=True,
            revoked_at__isnull=True,
            expires_at__gt=now or timezone.now(),
        )


class Invitation(models.Model):
    """An emailed, single-use offer to join an organization with a role and projects."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="invitations"
    )
    email = models.EmailField(max_length=254)
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    projects = models.ManyToManyField(Project, related_name="invitations", blank=True)
    invited_by = models.ForeignKey(
        User, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # SHA-256 of the token mailed to the invitee; the token itself is never stored.
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    objects = InvitationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["organization", "email"])]

    def __str__(self) -> str:
        return f"{self.email} ({self.role})"

    @property
    def state(self) -> str:
        """pending, accepted, revoked or expired."""
        if self.accepted_at:
            return "accepted"
        if self.revoked_at:
            return "revoked"
        if self.expires_at <= timezone.now():
            return "expired"
        return "pending"


class AuditAction(models.TextChoices):
    """Security-relevant actions the audit log records."""

    LOGIN_SUCCEEDED = "login.succeeded", "Signed in"
    LOGIN_FAILED = "login.failed", "Sign-in failed"
    PASSWORD_RESET_REQUESTED = "password.reset_requested", "Password reset requested"
    PASSWORD_RESET = "password.reset", "Password reset"
    PASSWORD_CHANGED = "password.changed", "Password changed"
    INVITATION_SENT = "invitation.sent", "Invitation sent"
    INVITATION_ACCEPTED = "invitation.accepted", "Invitation accepted"
    USER_ROLE_CHANGED = "user.role_changed", "Role changed"
    USER_REMOVED = "user.removed", "User removed"
    API_KEY_CREATED = "api_key.created", "API key created"
    API_KEY_REVOKED = "api_key.revoked", "API key revoked"
    ENDPOINT_CREATED = "endpoint.created", "Endpoint created"
    ENDPOINT_DELETED = "endpoint.deleted", "Endpoint deleted"
    CHANNEL_CREATED = "channel.created", "Notification channel created"
    CHANNEL_UPDATED = "channel.updated", "Notification channel changed"
    CHANNEL_DELETED = "channel.deleted", "Notification channel deleted"
    MAINTENANCE_CREATED = "maintenance.created", "Maintenance window created"
    MAINTENANCE_UPDATED = "maintenance.updated", "Maintenance window changed"
    MAINTENANCE_DELETED = "maintenance.deleted", "Maintenance window deleted"
    PING_KEY_ROTATED = "project.ping_key_rotated", "Ping key rotated"
    STATUS_PAGE_CREATED = "status_page.created", "Status page created"
    STATUS_PAGE_UPDATED = "status_page.updated", "Status page changed"
    STATUS_PAGE_DELETED = "status_page.deleted", "Status page deleted"
    ESCALATION_POLICY_CREATED = "escalation_policy.created", "Escalation policy created"
    ESCALATION_POLICY_UPDATED = "escalation_policy.updated", "Escalation policy changed"
    ESCALATION_POLICY_DELETED = "escalation_policy.deleted", "Escalation policy deleted"


class AuditEventQuerySet(models.QuerySet["AuditEvent"]):
    """Reusable audit filters."""

    def for_org(self, organization: Organization) -> "AuditEventQuerySet":
        """Events of one organization."""
        return self.filter(organization=organization)


class AuditEvent(models.Model):
    """One security-relevant action: who, in which organization, when, from where, on what.

    Append-only. Names and emails are copied, so an event still reads right after its actor
    or target is deleted; secrets (passwords, tokens, keys) are never part of it.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # Null for a failed sign-in with an unknown email: no organization to show it to.
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    action = models.CharField(max_length=32, choices=AuditAction.choices)
    actor = models.ForeignKey(
        User, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    actor_email = models.CharField(max_length=254, blank=True)
    # How the actor was authenticated: session, jwt, api_key (with its public prefix), or "".
    via = models.CharField(max_length=64, blank=True)
    ip = models.GenericIPAddressField(null=True, blank=True)
    target_type = models.CharField(max_length=32, blank=True)
    target_id = models.CharField(max_length=64, blank=True)
    target_repr = models.CharField(max_length=300, blank=True)
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["organization", "-created_at"], name="accounts_audit_org_idx")
        ]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {self.action} by {self.actor_email or '-'}"
