"""Django admin for API keys: the record and a revoke action; never the key or its digest."""

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from apikeys.models import ApiKey
from apikeys.services import api_keys_revoke


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
    list_filter = ["created_at", "expires_at", "revoked_at"]
    search_fields = ["name", "prefix", "organization__name", "created_by__email"]
    exclude = ["digest", "lookup_id"]
    readonly_fields = [
        "id",
        "organization",
        "created_by",
        "prefix",
        "scopes",
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

    @admin.action(description="Revoke the selected API keys")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        """Revoke: each key answers 401 from its next request on."""
        count = api_keys_revoke(api_keys=queryset)
        self.message_user(request, f"Revoked {count} API key(s).", messages.SUCCESS)
