"""Django admin for notification channels, their deliveries and attempts, and maintenance
windows.

A channel's `config` (webhook URLs are credentials) and signing `secret` are never loaded
here, so never decrypted nor shown: pages show `config_masked`. Channels are created
through the API and dashboards, which validate the destination and show a webhook's
secret once. Deliveries and attempts are history, read-only. Endpoints are picked by id:
loading them would decrypt their targets.
"""

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import Prefetch, QuerySet
from django.forms.models import ModelMultipleChoiceField
from django.http import HttpRequest

from alerts import services, validation
from alerts.forms import refuse
from alerts.models import (
    Delivery,
    DeliveryAttempt,
    Escalation,
    EscalationPolicy,
    EscalationStep,
    MaintenanceWindow,
    NotificationChannel,
)
from alerts.services import channel_update, escalation_policy_delete, maintenance_window_save
from healthmon.encryption import encrypted_fields
from healthmon.errors import InvalidInput
from monitoring.models import Endpoint


def _endpoints() -> QuerySet[Endpoint]:
    return Endpoint.objects.without_secrets()


class ScopeForm(forms.ModelForm):
    """A channel's or window's projects and endpoints: of its own organization only."""

    def _organization_id(self) -> Any:
        if self.instance.organization_id:
            return self.instance.organization_id
        organization = self.cleaned_data.get("organization")
        return organization.pk if organization else None

    def clean(self) -> dict[str, Any]:
        """Refuse a project or an endpoint of another organization."""
        cleaned = super().clean() or self.cleaned_data
        organization_id = self._organization_id()
        if organization_id is None:
            return cleaned
        try:
            validation.scope(
                organization_id=organization_id,
                projects=list(cleaned.get("projects") or []),
                endpoints=list(cleaned.get("endpoints") or []),
            )
        except InvalidInput as exc:
            refuse(self, exc)
        return cleaned


class WindowAdminForm(ScopeForm):
    """A window's scope, and its times as the API and the page check them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "timezone" in self.fields:
            self.fields["timezone"].required = False  # empty: UTC

    def clean(self) -> dict[str, Any]:
        """Ends after it starts; its rule and zone are valid, an occurrence shorter than
        the rule's period."""
        cleaned = super().clean()
        if cleaned.get("starts_at") and cleaned.get("ends_at"):
            try:
                cleaned["rrule"], cleaned["timezone"] = validation.maintenance_window(
                    starts_at=cleaned["starts_at"],
                    ends_at=cleaned["ends_at"],
                    recurrence=cleaned.get("recurrence") or "",
                    rrule=cleaned.get("rrule") or "",
                    timezone=cleaned.get("timezone") or "UTC",
                )
            except InvalidInput as exc:
                refuse(self, exc)
        return cleaned


class _ScopedAdmin(admin.ModelAdmin):
    """What channel and window pages share: the organization, projects picked by search,
    endpoints by id (never loaded with their encrypted columns)."""

    autocomplete_fields = ["organization", "projects"]
    raw_id_fields = ["endpoints"]
    list_select_related = ["organization"]
    search_fields = ["name", "organization__name", "=id"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        """Rows with their scope; endpoints without their encrypted columns (the form's
        initial values are read from this prefetch)."""
        return (
            super()
            .get_queryset(request)
            .prefetch_related("projects", Prefetch("endpoints", queryset=_endpoints()))
        )

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        """Delete through the service, which records it in the audit log."""
        self.deleting(obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        """Delete each row through the service (the bulk action too)."""
        for obj in queryset:
            self.deleting(obj)

    def deleting(self, obj: Any) -> None:
        """The service that deletes one row."""
        raise NotImplementedError

    def formfield_for_manytomany(
        self, db_field: Any, request: HttpRequest, **kwargs: Any
    ) -> ModelMultipleChoiceField | None:
        """Check posted endpoint ids without decrypting the endpoints they name."""
        if db_field.name == "endpoints":
            kwargs["queryset"] = _endpoints()
        return super().formfield_for_manytomany(db_field, request, **kwargs)


class FailingFilter(admin.SimpleListFilter):
    """Channels flagged as failing (deliveries kept giving up) or not."""

    title = "failing"
    parameter_name = "failing"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Yes"), ("no", "No")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> Any:
        match self.value():
            case "yes":
                return queryset.filter(failing_since__isnull=False)
            case "no":
                return queryset.filter(failing_since__isnull=True)
        return queryset


@admin.register(NotificationChannel)
class NotificationChannelAdmin(_ScopedAdmin):
    form = ScopeForm
    list_display = [
        "name",
        "organization",
        "kind",
        "enabled",
        "failing",
        "consecutive_failures",
        "created_at",
    ]
    list_filter = ["kind", "enabled", FailingFilter]
    date_hierarchy = "created_at"
    # Neither `config` nor `secret` is a field of this form: the destination is changed
    # through the API and dashboards, which validate it and mask it.
    fields = [
        "id",
        "organization",
        "name",
        "kind",
        "config_masked",
        "enabled",
        "events",
        "projects",
        "endpoints",
        "consecutive_failures",
        "failing_since",
        "created_at",
        "updated_at",
    ]
    readonly_fields = [
        "id",
        "organization",
        "kind",
        "config_masked",
        "events",  # chosen through the API and the page, which check the names
        "consecutive_failures",
        "failing_since",
        "created_at",
        "updated_at",
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[NotificationChannel]:
        """Leave the encrypted columns out of every admin query."""
        return super().get_queryset(request).defer(*encrypted_fields(NotificationChannel))

    def deleting(self, obj: Any) -> None:
        """`channel_delete`."""
        services.channel_delete(channel=obj)

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Channels are created through the API and dashboards, which validate the
        destination and show a webhook's signing secret once."""
        return False

    def save_model(
        self, request: HttpRequest, obj: NotificationChannel, form: Any, change: bool
    ) -> None:
        """Save through `channel_update` from the stored row (turning a channel on again
        clears its failing flag); projects and endpoints follow with the form's m2m."""
        stored = NotificationChannel.objects.without_secrets().select_for_update()
        changed = form.changed_data
        channel_update(
            channel=stored.get(pk=obj.pk),
            name=obj.name if "name" in changed else None,
            enabled=obj.enabled if "enabled" in changed else None,
        )

    @admin.display(boolean=True, description="failing", ordering="failing_since")
    def failing(self, obj: NotificationChannel) -> bool:
        return obj.failing_since is not None


class AttemptInline(admin.TabularInline):
    """Each try at a delivery, with what came back."""

    model = DeliveryAttempt
    fields = readonly_fields = ("attempted_at", "ok", "status_code", "error", "duration_ms")
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Only the delivery workers record attempts."""
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Attempts are history."""
        return False


class _HistoryAdmin(admin.ModelAdmin):
    """Rows the delivery workers write: browsable, never edited by hand.

    Deleting stays allowed: deleting a channel or an organization here cascades to them.
    """

    show_full_result_count = False

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Only the delivery workers write them."""
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """History is read-only."""
        return False


@admin.register(Delivery)
class DeliveryAdmin(_HistoryAdmin):
    list_display = ["event", "channel", "status", "attempts", "occurred_at", "last_error"]
    list_filter = ["status", "event"]
    search_fields = ["=id", "=event_id", "channel__name"]
    inlines = [AttemptInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Delivery]:
        """Deliveries with their channel's name, never its encrypted columns."""
        secrets = encrypted_fields(NotificationChannel, "channel")
        return super().get_queryset(request).select_related("channel").defer(*secrets)


@admin.register(DeliveryAttempt)
class DeliveryAttemptAdmin(_HistoryAdmin):
    list_display = ["attempted_at", "delivery", "ok", "status_code", "error", "duration_ms"]
    list_filter = ["ok"]
    list_select_related = ["delivery"]
    search_fields = ["=delivery__id", "error"]
    ordering = ["-id"]


@admin.register(MaintenanceWindow)
class MaintenanceWindowAdmin(_ScopedAdmin):
    form = WindowAdminForm
    list_display = ["name", "organization", "starts_at", "ends_at", "rrule", "timezone"]
    list_filter = ["timezone", "starts_at"]
    date_hierarchy = "starts_at"
    fields = [
        "organization",
        "name",
        "starts_at",
        "ends_at",
        "recurrence",
        "rrule",
        "timezone",
        "projects",
        "endpoints",
        "created_at",
    ]

    def deleting(self, obj: Any) -> None:
        """`maintenance_window_delete`."""
        services.maintenance_window_delete(window=obj)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        """A window stays in its organization: its scope is that organization's."""
        return ["created_at"] if obj is None else ["organization", "created_at"]

    def save_model(
        self, request: HttpRequest, obj: MaintenanceWindow, form: Any, change: bool
    ) -> None:
        """Save through `maintenance_window_save`; the scope follows with the form's m2m."""
        maintenance_window_save(
            window=obj,
            name=obj.name,
            starts_at=obj.starts_at,
            ends_at=obj.ends_at,
            rrule=obj.rrule,
            timezone=obj.timezone,
        )


# --- escalation policies ----------------------------------------------------------------------


class EscalationStepInline(admin.TabularInline):
    """A policy's steps, in order; channels picked by id (never loaded with their configs)."""

    model = EscalationStep
    extra = 0
    fields = ["position", "after_minutes", "channels"]
    raw_id_fields = ["channels"]
    ordering = ["position"]


@admin.register(EscalationPolicy)
class EscalationPolicyAdmin(_ScopedAdmin):
    """Escalation policies with their steps inline. The API and the page check a policy's
    steps (delays increasing, channels of its organization); here staff edit them as is."""

    form = ScopeForm
    inlines = [EscalationStepInline]
    list_display = ["name", "organization", "repeat_every_minutes", "created_at"]
    fields = ["organization", "name", "repeat_every_minutes", "projects", "endpoints", "created_at"]

    def deleting(self, obj: Any) -> None:
        """`escalation_policy_delete`."""
        escalation_policy_delete(policy=obj)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        """A policy stays in its organization: its scope and channels are that organization's."""
        return ["created_at"] if obj is None else ["organization", "created_at"]


@admin.register(Escalation)
class EscalationAdmin(admin.ModelAdmin):
    """Where each incident stands in its policy: read-only (the beat loop moves these)."""

    list_display = ["incident", "policy", "next_step", "reminders_sent", "next_escalation_at"]
    list_select_related = ["incident", "policy"]
    search_fields = ["=incident__id", "policy__name"]
    readonly_fields = [
        "incident",
        "policy",
        "next_step",
        "reminders_sent",
        "next_escalation_at",
        "created_at",
    ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Escalations start when incidents open, never by hand."""
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """History and state of the loop: read-only."""
        return False
