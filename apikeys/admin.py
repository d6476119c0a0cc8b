"""Django admin for API keys: the record and a revoke action; never the key or its digest.

Keys cannot be added here: the API issues them, so that the key is shown once to its creator.
"""

from typing import Any

from django.contrib import admin, messages
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.utils import timezone

from apikeys.models import ApiKey
from apikeys.services import api_keys_revoke


class ApiKeyStateFilter(admin.SimpleListFilter):
    """The states of `ApiKey.state`, as queries."""

    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(state, state) for state in ("active", "expired", "revoked")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> Any:
        now = timezone.now()
        live = queryset.filter(revoked_at__isnull=True)
        match self.value():
            case "active":
                return live.filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
            case "expired":
                return live.filter(expires_at__lte=now)
            case "revoked":
                return queryset.filter(revoked_at__isnull=False)
        return queryset


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "prefix",
        "organization",
        "created_by",
        "scopes",
        "state",
        "created_at",
        "last_used_at",
        "expires_at",
    ]
    list_select_related = ["organization", "created_by"]
    list_filter = [ApiKeyStateFilter, "created_at", "last_used_at", "expires_at"]
    search_fields = ["name", "prefix", "organization__name", "created_by__email"]
    date_hierarchy = "created_at"
    # `prefix` is the key's public start (its lookup id included); the rest of the key is
    # never stored, and its digest is never shown.
    fields = [
        "id",
        "name",
        "prefix",
        "organization",
        "created_by",
        "scopes",
        "state",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked_at",
    ]
    readonly_fields = [
        "id",
        "prefix",
        "organization",
        "created_by",
        "scopes",
        "state",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked_at",
    ]
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Keys are issued through the API, which shows the key once to its creator."""
        return False

    @admin.display(description="state")
    def state(self, obj: ApiKey) -> str:
        return obj.state

    @admin.action(description="Revoke the selected API keys", permissions=["change"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        """Revoke: each key answers 401 from its next request on."""
        count = api_keys_revoke(api_keys=queryset)
        self.message_user(request, f"Revoked {count} API key(s).", messages.SUCCESS)
