"""Status pages in Django admin: pages with their sections and components, subscribers."""

from django.contrib import admin

from statuspages.models import Component, Section, StatusPage, Subscriber, SubscriberMail


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
    exclude = ["password_hash"]
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
    """Which update went to which subscriber: written by the fan-out, never by hand."""

    list_display = ["update", "subscriber", "created_at", "sent_at"]
    list_select_related = ["subscriber", "update"]
    ordering = ["-id"]

    def has_add_permission(self, request: object) -> bool:
        """Only the fan-out writes these."""
        return False

    def has_change_permission(self, request: object, obj: object = None) -> bool:
        """A record of what was sent."""
        return False
