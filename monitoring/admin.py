"""Django admin for endpoints, checks and incidents: targets shown masked, never decrypted
on a page; checks, incidents and status changes are history, read-only."""

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest

from healthmon.encryption import encrypted_fields
from monitoring.locations import default_slug, listed_location_slugs, shown_slug, stored_slug
from monitoring.models import (
    CheckResult,
    Endpoint,
    EndpointType,
    Heartbeat,
    Incident,
    IncidentActivity,
    IncidentNote,
    IncidentUpdate,
    Location,
    LocationOutage,
    LocationWorker,
    PendingRound,
    Ping,
    StatusChange,
)
from monitoring.services import (
    EndpointChanges,
    endpoint_delete,
    endpoint_update,
    endpoints_set_enabled,
)
from monitoring.validation.locations import locations_errors, quorum_error

# Loading an endpoint through a relation would decrypt these for nothing.


class LatestFormSet(BaseInlineFormSet):
    """An inline of the parent's latest rows only; formsets refuse a sliced queryset, so
    the newest ids are picked by a subquery."""

    latest = 20

    def get_queryset(self) -> QuerySet[Any]:
        """The parent's first `latest` rows in the model's order (newest first)."""
        if not hasattr(self, "_latest"):
            rows = super().get_queryset()
            self._latest = rows.filter(pk__in=rows.values("pk")[: self.latest])
        return self._latest


class _LatestInline(admin.TabularInline):
    """History under the endpoint: the latest rows, read-only."""

    formset = LatestFormSet
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Only the probe engine writes history."""
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """History is read-only."""
        return False


class LatestCheckInline(_LatestInline):
    model = CheckResult
    verbose_name_plural = f"latest {LatestFormSet.latest} checks"
    fields = readonly_fields = (
        "checked_at",
        "shown_location",
        "ok",
        "response_time_ms",
        "status_detail",
        "error",
        "error_detail",
    )

    @admin.display(description="location")
    def shown_location(self, obj: CheckResult) -> str:
        """Where it was probed from (a round of several places has a row per place)."""
        return shown_slug(obj.location)


class LatestIncidentInline(_LatestInline):
    model = Incident
    verbose_name_plural = f"latest {LatestFormSet.latest} incidents"
    fields = readonly_fields = ("started_at", "resolved_at", "cause")


class EndpointAdminForm(forms.ModelForm):
    """The endpoint's editable columns, its locations typed as slugs and checked as the API
    checks them (defined, each once, none for a heartbeat, not fewer than a numeric quorum)."""

    locations = forms.CharField(
        required=False,
        help_text="Slugs of defined locations, separated by commas; empty: the default location.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.initial["locations"] = ", ".join(self.instance.locations or [])

    def clean_locations(self) -> list[str]:
        """The slugs, refused as the API refuses them."""
        text = self.cleaned_data.get("locations") or ""
        slugs = [slug.strip() for slug in text.split(",") if slug.strip()]
        heartbeat = self.instance.type == EndpointType.HEARTBEAT
        errors = locations_errors(slugs, heartbeat=heartbeat)
        # The masked config holds the quorum as stored: it is no secret.
        quorum = (self.instance.config_masked or {}).get("quorum")
        if not errors and (error := quorum_error(quorum, slugs)):
            errors = [f"The quorum ({quorum}): {error}"]
        if errors:
            raise forms.ValidationError(errors)
        return slugs


@admin.register(Endpoint)
class EndpointAdmin(admin.ModelAdmin):
    form = EndpointAdminForm
    list_display = [
        "name",
        "type",
        "target_masked",
        "project",
        "organization",
        "status",
        "enabled",
        "interval_seconds",
        "last_checked_at",
    ]
    list_select_related = ["project__organization"]
    list_filter = ["type", "status", "enabled", "sla_target", "created_at"]
    search_fields = ["name", "target_masked", "project__name", "project__organization__name", "id"]
    date_hierarchy = "created_at"
    # The clear target and config are not form fields: they are edited through the API and
    # dashboards, which validate them per type and mask them. The admin shows the masked
    # forms only, and changes the schedule, thresholds and SLA through `endpoint_update`.
    fields = [
        "id",
        "project",
        "name",
        "type",
        "target_masked",
        "config_masked",
        "interval_seconds",
        "timeout_seconds",
        "locations",
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
    inlines = [LatestCheckInline, LatestIncidentInline]
    actions = ["pause", "resume"]

    def save_model(self, request: HttpRequest, obj: Endpoint, form: Any, change: bool) -> None:
        """Save only the changed columns, under the row lock as the API does; a new interval
        or timeout makes the endpoint due now."""
        locked = self.get_queryset(request).select_for_update(of=("self",)).get(pk=obj.pk)
        changed = {name: form.cleaned_data[name] for name in form.changed_data}
        endpoint_update(endpoint=locked, changes=EndpointChanges(**changed))

    def delete_model(self, request: HttpRequest, obj: Endpoint) -> None:
        """Delete through the service, which records it in the audit log."""
        endpoint_delete(endpoint=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Endpoint]) -> None:
        """Delete each through the service, which records it in the audit log."""
        for endpoint in queryset:
            endpoint_delete(endpoint=endpoint)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Endpoint]:
        """Leave the encrypted columns out of every admin query."""
        return super().get_queryset(request).defer(*encrypted_fields(Endpoint))

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Endpoints are created through the API and dashboards, which validate targets."""
        return False

    @admin.display(description="organization", ordering="project__organization__name")
    def organization(self, obj: Endpoint) -> str:
        return obj.project.organization.name

    @admin.action(description="Pause the selected endpoints", permissions=["change"])
    def pause(self, request: HttpRequest, queryset: QuerySet[Endpoint]) -> None:
        """Stop checking them."""
        count = endpoints_set_enabled(endpoints=queryset, enabled=False)
        self.message_user(request, f"Paused {count} endpoint(s).", messages.SUCCESS)

    @admin.action(description="Resume the selected endpoints", permissions=["change"])
    def resume(self, request: HttpRequest, queryset: QuerySet[Endpoint]) -> None:
        """Check them again, starting at once."""
        count = endpoints_set_enabled(endpoints=queryset, enabled=True)
        self.message_user(request, f"Resumed {count} endpoint(s).", messages.SUCCESS)


class _HistoryAdmin(admin.ModelAdmin):
    """Records written by the probe engine: browsable, never edited by hand.

    Deleting stays allowed: deleting an endpoint or organization here cascades to it.
    """

    list_select_related = ["endpoint"]
    show_full_result_count = False  # COUNT(*) over millions of checks on every page: no

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        """Rows with their endpoint's name, never its encrypted columns."""
        return super().get_queryset(request).defer(*encrypted_fields(Endpoint, "endpoint"))

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Only the probe engine writes history."""
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """History is read-only."""
        return False


class CheckLocationFilter(admin.SimpleListFilter):
    """Checks from one location; the choices come from the defined locations, never from a
    DISTINCT over every check."""

    title = "location"
    parameter_name = "location"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        """The default location, then each defined one."""
        defined = Location.objects.exclude(slug=default_slug()).values_list("slug", "name")
        return [(default_slug(), f"{default_slug()} (default)"), *defined]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        """The checks stored with that location (empty for the default one)."""
        value = self.value()
        return queryset.filter(location=stored_slug(value)) if value else queryset


@admin.register(CheckResult)
class CheckResultAdmin(_HistoryAdmin):
    list_display = [
        "checked_at",
        "endpoint",
        "shown_location",
        "ok",
        "response_time_ms",
        "status_detail",
        "error",
    ]
    list_filter = ["ok", CheckLocationFilter, "endpoint__type"]
    search_fields = ["=endpoint__id", "endpoint__name"]
    # Newest first by the primary key (a time-ordered UUIDv7): its index serves the page,
    # where `checked_at`, indexed only after the endpoint, would sort the whole table. No
    # date hierarchy for the same reason: it reads the distinct days of every row.
    ordering = ["-id"]

    @admin.display(description="location", ordering="location")
    def shown_location(self, obj: CheckResult) -> str:
        """The location's slug, the default one's for checks stored without one."""
        return shown_slug(obj.location)


class _IncidentTextInline(admin.TabularInline):
    """An incident's updates or notes, read here, written through the API and pages."""

    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Written by people through the API, where the text is rendered and announced."""
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """What was said stays said."""
        return False


class IncidentUpdateInline(_IncidentTextInline):
    model = IncidentUpdate
    fields = ("created_at", "state", "message", "author", "notify_subscribers")
    readonly_fields = fields


class IncidentNoteInline(_IncidentTextInline):
    model = IncidentNote
    fields = ("created_at", "text", "author")
    readonly_fields = fields


class IncidentActivityInline(_IncidentTextInline):
    model = IncidentActivity
    fields = ("at", "kind", "text", "actor")
    readonly_fields = fields


@admin.register(Incident)
class IncidentAdmin(_HistoryAdmin):
    list_display = [
        "__str__",
        "kind",
        "state",
        "public",
        "started_at",
        "acknowledged_at",
        "resolved_at",
        "duration",
    ]
    list_filter = [("resolved_at", admin.EmptyFieldListFilter), "kind", "public", "endpoint__type"]
    search_fields = ["=endpoint__id", "endpoint__name", "title", "cause"]
    inlines = [IncidentUpdateInline, IncidentNoteInline, IncidentActivityInline]
    date_hierarchy = "started_at"

    @admin.display(description="Duration")
    def duration(self, incident: Incident) -> str:
        """How long it lasted, or that it still does."""
        seconds = incident.duration_seconds
        return "ongoing" if seconds is None else f"{seconds / 60:.1f} min"


@admin.register(IncidentUpdate, IncidentNote)
class IncidentTextAdmin(admin.ModelAdmin):
    """Incident updates and internal notes across incidents, for support: read-only."""

    list_display = ["__str__", "created_at", "author"]
    list_select_related = ["incident", "author"]
    ordering = ["-id"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Written through the API, where the text is rendered and announced."""
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """What was said stays said."""
        return False


@admin.register(IncidentActivity)
class IncidentActivityAdmin(admin.ModelAdmin):
    """Timeline lines the machinery wrote (acknowledgements, escalations, delivery
    outcomes), for support: read-only."""

    list_display = ["__str__", "kind", "at", "actor", "text"]
    list_filter = ["kind"]
    list_select_related = ["actor"]
    ordering = ["-id"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Written through the API, where the text is rendered and announced."""
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """What was said stays said."""
        return False


@admin.register(StatusChange)
class StatusChangeAdmin(_HistoryAdmin):
    list_display = ["changed_at", "endpoint", "from_status", "to_status", "reason"]
    list_filter = ["to_status", "from_status"]
    search_fields = ["=endpoint__id", "endpoint__name"]
    ordering = ["-id"]  # time-ordered ids, as for checks


@admin.register(Ping)
class PingAdmin(_HistoryAdmin):
    list_display = ["received_at", "endpoint", "kind", "exit_status", "duration_ms", "client_ip"]
    list_filter = ["kind"]
    search_fields = ["=endpoint__id", "endpoint__name"]
    ordering = ["-id"]  # time-ordered ids, as for checks


@admin.register(Heartbeat)
class HeartbeatAdmin(admin.ModelAdmin):
    """When the dispatcher last ran (what /readyz reads): shown, never edited."""

    list_display = ["name", "beat_at"]
    ordering = ["name"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Only the dispatcher writes its heartbeat."""
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """A heartbeat is read-only."""
        return False


class LocationWorkerInline(admin.TabularInline):
    """The workers heard from in a location (their heartbeats)."""

    model = LocationWorker
    extra = 0
    can_delete = False
    fields = ("hostname", "last_seen_at")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Workers announce themselves."""
        return False


@admin.register(Location)
class LocationAdmin(admin.ModelAdmin):
    """Probe locations: defined here (or by PROBE_LOCATIONS, or a worker's first
    heartbeat); online while a worker of theirs was heard within a minute."""

    list_display = ["slug", "name", "online", "last_seen_at"]
    search_fields = ["slug", "name"]
    readonly_fields = ["online", "last_seen_at", "created_at"]
    inlines = [LocationWorkerInline]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Not while an endpoint lists it: that endpoint would silently stop being probed
        there (endpoints name locations by slug). Remove it from them first."""
        if obj is not None and obj.slug in listed_location_slugs():
            return False
        return super().has_delete_permission(request, obj)

    def get_actions(self, request: HttpRequest) -> Any:
        """No bulk delete: each location is checked for endpoints listing it."""
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        """The slug names a queue and is stored on checks: fixed once made."""
        fields = list(super().get_readonly_fields(request, obj))
        return [*fields, "slug"] if obj is not None else fields


@admin.register(LocationOutage)
class LocationOutageAdmin(admin.ModelAdmin):
    """Locations gone silent: opened and resolved by the watch loop, read here."""

    list_display = ["location", "started_at", "resolved_at"]
    list_filter = ["location"]
    ordering = ["-started_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Only the watch loop opens outages."""
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Outages are history."""
        return False


@admin.register(PendingRound)
class PendingRoundAdmin(admin.ModelAdmin):
    """Rounds of multi-location endpoints waiting for their locations' results."""

    list_display = ["endpoint", "scheduled_for", "expected", "judge_at"]
    ordering = ["judge_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Only the check pipeline makes rounds."""
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Rounds are the pipeline's."""
        return False
