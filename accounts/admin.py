"""Django admin for organizations, users, projects and invitations.

Password hashes are shown only as Django's masked summary; invitation token digests are
never displayed.
"""

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.contrib.auth.forms import AdminPasswordChangeForm, UserChangeForm, UserCreationForm
from django.core.exceptions import ValidationError
from django.db.models import Count, QuerySet
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest
from django.utils import timezone

from accounts.models import (
    AuditEvent,
    Invitation,
    Organization,
    Project,
    ProjectAccess,
    Role,
    User,
)
from accounts.services import invitation_resend
from healthmon.errors import Conflict

OTHER_ORGANIZATION = "This project belongs to another organization."


class UserInline(admin.TabularInline):
    """The organization's users, listed; each is edited on its own page, where the
    last-owner rule and password handling live."""

    model = User
    fields = readonly_fields = ("email", "role", "is_active", "date_joined")
    extra = 0
    show_change_link = True
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """A user needs a password: add one on the user page."""
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Role changes go through the user page, which keeps an owner in the organization."""
        return False


class ProjectInline(admin.TabularInline):
    """The organization's projects, listed; each is added and renamed on the project page,
    whose form checks the case-insensitive unique name (an inline form skips constraints on
    its parent key, so a duplicate here was a database error)."""

    model = Project
    fields = readonly_fields = ("name", "created_at")
    extra = 0
    show_change_link = True
    # Deleting would cascade to the project's endpoints and their whole history.
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Add projects on the project page."""
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Rename projects on the project page."""
        return False


@admin.register(Organization)
class OrganizationAdmin(admin.ModelAdmin):
    list_display = ["name", "id", "user_count", "project_count", "created_at"]
    search_fields = ["name", "id", "users__email"]
    readonly_fields = ["id", "created_at"]
    date_hierarchy = "created_at"
    inlines = [UserInline, ProjectInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Organization]:
        """Count users and projects in the list query, not per row."""
        return (
            super()
            .get_queryset(request)
            .annotate(
                num_users=Count("users", distinct=True),
                num_projects=Count("projects", distinct=True),
            )
        )

    @admin.display(description="users", ordering="num_users")
    def user_count(self, obj: Organization) -> int:
        return obj.num_users  # type: ignore[attr-defined]

    @admin.display(description="projects", ordering="num_projects")
    def project_count(self, obj: Organization) -> int:
        return obj.num_projects  # type: ignore[attr-defined]


class ProjectAccessFormSet(BaseInlineFormSet):
    """Grants to projects of the user's own organization only (as the API allows)."""

    def clean(self) -> None:
        """Refuse a grant to another organization's project."""
        super().clean()
        for form in self.forms:
            data = getattr(form, "cleaned_data", {})
            project = data.get("project")
            if project and not data.get("DELETE") and not self._same_org(project):
                form.add_error("project", OTHER_ORGANIZATION)

    def _same_org(self, project: Project) -> bool:
        return project.organization_id == self.instance.organization_id


class ProjectAccessInline(admin.TabularInline):
    model = ProjectAccess
    formset = ProjectAccessFormSet
    fields = ["project", "created_at"]
    readonly_fields = ["created_at"]
    autocomplete_fields = ["project"]
    extra = 0


class RevokingAdminPasswordChangeForm(AdminPasswordChangeForm):
    """Setting a password in the admin signs the user out everywhere, as the API does."""

    def save(self, commit: bool = True) -> User:
        """Bump the token version with the new password."""
        self.user.token_version += 1
        return super().save(commit)


class AdminUserCreationForm(UserCreationForm):
    class Meta:
        model = User
        fields = ["email", "organization", "role"]


class AdminUserChangeForm(UserChangeForm):
    """The admin's user form, keeping the API's rule that an organization keeps an owner."""

    class Meta:
        model = User
        fields = "__all__"

    def clean(self) -> dict[str, Any]:
        """Refuse to demote or move away the organization's last owner."""
        cleaned = super().clean() or self.cleaned_data
        user = self.instance  # still as stored: the form copies its data onto it after clean()
        stays_owner = (
            cleaned.get("role") == Role.OWNER and cleaned.get("organization") == user.organization
        )
        if user.pk and not stays_owner and user.is_last_owner():
            raise ValidationError(
                "This is the organization's last owner; make someone else owner first."
            )
        return cleaned


@admin.register(User)
class UserAdmin(DjangoUserAdmin):
    form = AdminUserChangeForm
    add_form = AdminUserCreationForm
    change_password_form = RevokingAdminPasswordChangeForm
    list_display = ["email", "organization", "role", "is_active", "email_verified", "date_joined"]
    list_filter = [
        "role",
        "is_active",
        ("email_verified_at", admin.EmptyFieldListFilter),
        "is_staff",
        "is_superuser",
    ]
    list_select_related = ["organization"]
    search_fields = ["email", "organization__name", "id"]
    date_hierarchy = "date_joined"
    ordering = ["email"]
    readonly_fields = ["id", "date_joined", "last_login", "token_version"]
    autocomplete_fields = ["organization"]
    inlines = [ProjectAccessInline]
    fieldsets = [
        (None, {"fields": ["id", "email", "password"]}),
        ("Organization", {"fields": ["organization", "role"]}),
        ("Status", {"fields": ["is_active", "email_verified_at", "token_version"]}),
        ("Django admin", {"fields": ["is_staff", "is_superuser", "groups", "user_permissions"]}),
        ("Dates", {"fields": ["date_joined", "last_login"]}),
    ]
    add_fieldsets = [
        (
            None,
            {
                "classes": ["wide"],
                "fields": ["email", "organization", "role", "password1", "password2"],
            },
        )
    ]

    @admin.display(boolean=True, description="verified")
    def email_verified(self, obj: User) -> bool:
        return obj.email_verified


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "organization", "endpoint_count", "member_count", "created_at"]
    list_select_related = ["organization"]
    # A ping key finds the project behind a slug ping URL a user reports.
    search_fields = ["name", "organization__name", "id", "=ping_key"]
    list_filter = ["created_at"]
    date_hierarchy = "created_at"
    # The ping key changes only by rotation, through the API, which the audit log records.
    readonly_fields = ["id", "ping_key", "created_at"]
    autocomplete_fields = ["organization"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Project]:
        """Count endpoints and granted members in the list query, not per row."""
        return (
            super()
            .get_queryset(request)
            .annotate(
                num_endpoints=Count("endpoints", distinct=True),
                num_members=Count("access", distinct=True),
            )
        )

    @admin.display(description="endpoints", ordering="num_endpoints")
    def endpoint_count(self, obj: Project) -> int:
        return obj.num_endpoints  # type: ignore[attr-defined]

    @admin.display(description="granted members", ordering="num_members")
    def member_count(self, obj: Project) -> int:
        return obj.num_members  # type: ignore[attr-defined]


class InvitationStateFilter(admin.SimpleListFilter):
    """The states of `Invitation.state`, as queries."""

    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(state, state) for state in ("pending", "expired", "accepted", "revoked")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Invitation]) -> Any:
        now = timezone.now()
        open_ = queryset.filter(accepted_at__isnull=True, revoked_at__isnull=True)
        match self.value():
            case "pending":
                return open_.filter(expires_at__gt=now)
            case "expired":
                return open_.filter(expires_at__lte=now)
            case "accepted":
                return queryset.filter(accepted_at__isnull=False)
            case "revoked":
                return queryset.filter(accepted_at__isnull=True, revoked_at__isnull=False)
        return queryset


class InvitationAdminForm(forms.ModelForm):
    class Meta:
        model = Invitation
        fields = ["role", "projects", "expires_at"]

    def clean_projects(self) -> Any:
        """Projects of the invitation's organization only."""
        projects = self.cleaned_data["projects"]
        if any(p.organization_id != self.instance.organization_id for p in projects):
            raise ValidationError(OTHER_ORGANIZATION)
        return projects


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    form = InvitationAdminForm
    list_display = ["email", "organization", "role", "state", "invited_by", "expires_at"]
    list_select_related = ["organization", "invited_by"]
    list_filter = [InvitationStateFilter, "role", "created_at", "expires_at"]
    search_fields = ["email", "organization__name"]
    date_hierarchy = "created_at"
    # The link was mailed to this address for this organization: changing either would hand
    # the invitation to whoever holds the link. The token digest is never shown.
    fields = [
        "id",
        "organization",
        "email",
        "role",
        "projects",
        "invited_by",
        "state",
        "created_at",
        "expires_at",
        "accepted_at",
        "revoked_at",
    ]
    readonly_fields = [
        "id",
        "organization",
        "email",
        "invited_by",
        "state",
        "created_at",
        "accepted_at",
        "revoked_at",
    ]
    autocomplete_fields = ["projects"]
    actions = ["resend"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Invitations are created through the API or dashboard, which mails the link."""
        return False

    @admin.display(description="state")
    def state(self, obj: Invitation) -> str:
        return obj.state

    @admin.action(
        description="Resend the selected invitations with a new link", permissions=["change"]
    )
    def resend(self, request: HttpRequest, queryset: QuerySet[Invitation]) -> None:
        """Mail each open invitation again; the links mailed before stop working."""
        sent, skipped = 0, []
        for invitation in queryset:
            try:
                invitation_resend(invitation=invitation)
            except Conflict as exc:
                skipped.append(f"{invitation.email}: {exc.detail}")
            else:
                sent += 1
        if sent:
            self.message_user(request, f"Resent {sent} invitation(s).", messages.SUCCESS)
        if skipped:
            self.message_user(request, "Skipped " + "; ".join(skipped), messages.WARNING)


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    """The audit log, read-only: events are only ever appended by the services."""

    list_display = ["created_at", "action", "organization", "actor_email", "via", "ip", "target"]
    list_filter = ["action", "via"]
    list_select_related = ["organization"]
    search_fields = ["actor_email", "target_repr", "target_id", "ip", "organization__name"]
    date_hierarchy = "created_at"
    show_full_result_count = False
    readonly_fields = [field.name for field in AuditEvent._meta.fields]

    @admin.display(description="target")
    def target(self, event: AuditEvent) -> str:
        """Type and name of what was acted on."""
        return f"{event.target_type}: {event.target_repr}" if event.target_type else "-"

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Only the services write events."""
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        """Events are never edited."""
        return False
