"""Django admin for endpoints: targets shown masked, never decrypted on a page."""

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from monitoring.models import Endpoint
from monitoring.services import endpoint_update, endpoints_set_enabled


@admin.register(Endpoint)
class EndpointAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "type",
        "target_masked",
        "project",
        "status",
        "enabled",
        "interval_seconds",
        "last_checked_at",
    ]
    list_select_related = ["project__organization"]
    list_filter = ["type", "status", "enabled"]
    search_fields = ["name", "target_masked", "project__name", "project__organization__name", "id"]
    # The clear target and config are not form fields: they are edited through the API, which
    # validates them per type. The admin shows the masked target only.
    fields = [
        "id",
        "project",
        "name",
        "type",
        "target_masked",
        "config_masked",
        "interval_seconds",
        "timeout_seconds",
        "enabled",
        "status",
        "last_checked_at",
        "next_check_at",
        "created_at",
        "updated_at",
    ]
    readonly_fields = [
        "id",
        "project",
        "type",
        "target_masked",
        "config_masked",
        "enabled",
        "status",
        "last_checked_at",
        "next_check_at",
        "created_at",
        "updated_at",
    ]
    actions = ["pause", "resume"]

    def save_model(self, request: HttpRequest, obj: Endpoint, form: Any, change: bool) -> None:
        """Save only the editable columns; a new interval makes the endpoint due now."""
        endpoint_update(
            endpoint=obj, **{name: form.cleaned_data[name] for name in form.changed_data}
        )

    def get_queryset(self, request: HttpRequest) -> QuerySet[Endpoint]:
        """Leave the encrypted columns out of every admin query."""
        return super().get_queryset(request).defer("target", "config")

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Endpoints are created through the API and dashboards, which validate targets."""
        return False

    @admin.action(description="Pause the selected endpoints")
    def pause(self, request: HttpRequest, queryset: QuerySet[Endpoint]) -> None:
        """Stop checking them."""
        count = endpoints_set_enabled(endpoints=queryset, enabled=False)
        self.message_user(request, f"Paused {count} endpoint(s).", messages.SUCCESS)

    @admin.action(description="Resume the selected endpoints")
    def resume(self, request: HttpRequest, queryset: QuerySet[Endpoint]) -> None:
        """Check them again, starting at once."""
        count = endpoints_set_enabled(endpoints=queryset, enabled=True)
        self.message_user(request, f"Resumed {count} endpoint(s).", messages.SUCCESS)
