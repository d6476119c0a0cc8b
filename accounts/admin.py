"""Django admin for organizations, users, projects and invitations.

Password hashes are shown only as Django's masked summary; invitation token digests are
never displayed.
"""

from typing import Any

from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.contrib.auth.forms import AdminPasswordChangeForm, UserChangeForm, UserCreationForm
from django.core.exceptions import ValidationError
from django.db.models import Count, QuerySet
from django.http import HttpRequest

from accounts.models import Invitation, Organization, Project, ProjectAccess, Role, User


class UserInline(admin.TabularInline):
    model = User
    fields = ["email", "role", "is_active", "date_joined"]
    readonly_fields = ["email", "date_joined"]
    extra = 0
    show_change_link = True
    can_delete = False


class ProjectInline(admin.TabularInline):
    model = Project
    fields = ["name", "created_at"]
    readonly_fields = ["created_at"]
    extra = 0
    show_change_link = True


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


class ProjectAccessInline(admin.TabularInline):
    model = ProjectAccess
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
    list_filter = ["role", "is_active", "is_staff", "date_joined"]
    list_select_related = ["organization"]
    search_fields = ["email", "organization__name", "id"]
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
    list_display = ["name", "organization", "created_at"]
    list_select_related = ["organization"]
    search_fields = ["name", "organization__name", "id"]
    list_filter = ["created_at"]
    readonly_fields = ["id", "created_at"]
    autocomplete_fields = ["organization"]


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    list_display = ["email", "organization", "role", "state", "invited_by", "expires_at"]
    list_select_related = ["organization", "invited_by"]
    list_filter = ["role", "created_at", "expires_at"]
    search_fields = ["email", "organization__name"]
    exclude = ["token_hash"]
    readonly_fields = ["id", "created_at", "accepted_at", "revoked_at", "invited_by"]
    autocomplete_fields = ["organization", "projects"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Invitations are created through the API or dashboard, which mails the link."""
        return False
