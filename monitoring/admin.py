"""Django admin for endpoints, checks and incidents: targets shown masked, never decrypted
on a page; checks, incidents and status changes are history, read-only."""

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from monitoring.models import CheckResult, Endpoint, Incident, StatusChange
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
    list_filter = ["type", "status", "enabled", "sla_target"]
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
        "failure_threshold",
        "recovery_threshold",
        "sla_target",
        "status",
        "detected_type",
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
        "detected_type",
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


class _HistoryAdmin(admin.ModelAdmin):
    """Records written by the probe engine: browsable, never edited by hand."""

    list_select_related = ["endpoint__project__organization"]
    show_full_result_count = False  # COUNT(*) over millions of checks on every page: no

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Only the probe engine writes history."""
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """History is read-only."""
        return False


@admin.register(CheckResult)
class CheckResultAdmin(_HistoryAdmin):
    list_display = ["checked_at", "endpoint", "ok", "response_time_ms", "status_detail", "error"]
    list_filter = ["ok", "endpoint__type"]
    search_fields = ["=endpoint__id", "endpoint__name"]
    date_hierarchy = "checked_at"


@admin.register(Incident)
class IncidentAdmin(_HistoryAdmin):
    list_display = ["endpoint", "started_at", "resolved_at", "duration", "cause"]
    list_filter = [("resolved_at", admin.EmptyFieldListFilter), "endpoint__type"]
    search_fields = ["=endpoint__id", "endpoint__name", "cause"]
    date_hierarchy = "started_at"

    @admin.display(description="Duration")
    def duration(self, incident: Incident) -> str:
        """How long it lasted, or that it still does."""
        seconds = incident.duration_seconds
        return "ongoing" if seconds is None else f"{seconds / 60:.1f} min"


@admin.register(StatusChange)
class StatusChangeAdmin(_HistoryAdmin):
    list_display = ["changed_at", "endpoint", "from_status", "to_status", "reason"]
    list_filter = ["to_status"]
    search_fields = ["=endpoint__id", "endpoint__name"]
