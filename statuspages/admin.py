"""Status pages in Django admin: pages with their sections and components, subscribers."""

from typing import Any

from django import forms
from django.contrib import admin

from healthmon.errors import InvalidInput
from statuspages import validation
from statuspages.models import (
    Component,
    MaintenanceNotice,
    Section,
    StatusPage,
    Subscriber,
    SubscriberMail,
)


class StatusPageAdminForm(forms.ModelForm):
    """The page's own fields checked as the API and the pages check them (the slug's and the
    custom domain's format and uniqueness, the uptime range)."""

    class Meta:
        model = StatusPage
        fields = [
            "organization",
            "name",
            "slug",
            "title",
            "description",
            "visibility",
            "custom_domain",
            "uptime_days",
            "show_response_times",
            "updated_at",
        ]

    def clean(self) -> dict[str, Any]:
        """Refuse what `statuspages.validation` refuses, beside the field it names."""
        cleaned = super().clean() or self.cleaned_data
        page = None if self.instance._state.adding else self.instance
        try:
            if "slug" in cleaned:
                cleaned["slug"] = validation.slug(cleaned["slug"], page=page)
        except InvalidInput as exc:
            self.add_error("slug", exc.errors["slug"])
        try:
            if "custom_domain" in cleaned:
                domain = validation.custom_domain(cleaned["custom_domain"], page=page)
                cleaned["custom_domain"] = domain
        except InvalidInput as exc:
            self.add_error("custom_domain", exc.errors["custom_domain"])
        try:
            if cleaned.get("uptime_days") is not None:
                validation.uptime_days(cleaned["uptime_days"])
        except InvalidInput as exc:
            self.add_error("uptime_days", exc.errors["uptime_days"])
        return cleaned


class SectionInline(admin.TabularInline):
    model = Section
    extra = 0
    fields = ["name", "position"]


class ComponentInline(admin.TabularInline):
    model = Component
    extra = 0
    fields = ["section", "endpoint", "position"]
    raw_id_fields = ["endpoint"]


@admin.register(StatusPage)
class StatusPageAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "organization", "visibility", "custom_domain", "created_at"]
    list_filter = ["visibility", "show_response_times"]
    search_fields = ["name", "slug", "custom_domain", "organization__name"]
    readonly_fields = ["badge_key", "created_at"]
    form = StatusPageAdminForm
    inlines = [SectionInline, ComponentInline]
    list_select_related = ["organization"]


@admin.register(Subscriber)
class SubscriberAdmin(admin.ModelAdmin):
    list_display = ["email", "page", "created_at", "confirmed_at"]
    list_filter = [("confirmed_at", admin.EmptyFieldListFilter)]
    search_fields = ["email", "page__slug"]
    readonly_fields = ["created_at"]
    exclude = ["token"]
    list_select_related = ["page"]


@admin.register(SubscriberMail)
class SubscriberMailAdmin(admin.ModelAdmin):
    """Which update or maintenance notice went to which subscriber: written by the
    fan-out, never by hand."""

    list_display = ["update", "maintenance", "subscriber", "created_at", "sent_at"]
    list_select_related = ["subscriber", "update", "maintenance"]
    ordering = ["-id"]

    def has_add_permission(self, request: object) -> bool:
        """Only the fan-out writes these."""
        return False

    def has_change_permission(self, request: object, obj: object = None) -> bool:
        """A record of what was sent."""
        return False


@admin.register(MaintenanceNotice)
class MaintenanceNoticeAdmin(admin.ModelAdmin):
    """Which maintenance windows were announced to subscribers: the fan-out's claims."""

    list_display = ["window", "created_at"]
    list_select_related = ["window"]
    ordering = ["-id"]

    def has_add_permission(self, request: object) -> bool:
        """Only the fan-out writes these."""
        return False

    def has_change_permission(self, request: object, obj: object = None) -> bool:
        """A record of what was announced."""
        return False
