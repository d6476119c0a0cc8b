"""Django admin for rollups: browsable for support, written only by ingest and retention."""

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from analytics.models import DayRollup, FiveMinuteRollup, HourRollup, Rollup, RollupFold
from healthmon.encryption import encrypted_fields
from monitoring.models import Endpoint


class RollupAdmin(admin.ModelAdmin):
    """One tier's rows, newest first, read-only.

    Deleting stays allowed: deleting an endpoint or organization here cascades to them.
    """

    list_display = [
        "bucket",
        "endpoint",
        "count",
        "failures",
        "timed",
        "avg_ms",
        "min_ms",
        "max_ms",
    ]
    list_select_related = ["endpoint"]
    list_filter = ["endpoint__type"]
    search_fields = ["=endpoint__id", "endpoint__name"]
    date_hierarchy = "bucket"
    ordering = ["-bucket"]
    show_full_result_count = False  # millions of rows: no COUNT(*) per page

    def get_queryset(self, request: HttpRequest) -> QuerySet[Rollup]:
        """Rows with their endpoint's name, never its encrypted target and config."""
        return super().get_queryset(request).defer(*encrypted_fields(Endpoint, "endpoint"))

    @admin.display(description="Avg ms")
    def avg_ms(self, row: Rollup) -> str:
        """Mean response time of the bucket's successful checks that have a time."""
        return f"{row.sum_ms / row.timed:.1f}" if row.timed else "-"

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Only ingest writes rollups."""
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Rollups are derived data: repair them with `manage.py rebuild_rollups`."""
        return False


for tier in (FiveMinuteRollup, HourRollup, DayRollup):
    admin.site.register(tier, RollupAdmin)


@admin.register(RollupFold)
class RollupFoldAdmin(admin.ModelAdmin):
    """How far the fold has made the hourly and daily rollups; only the fold moves it."""

    list_display = ("folded_to",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        """The fold's first run makes the row."""
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Moving the watermark by hand would count five-minute rows twice or never."""
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Without the row, ingest writes every tier again while the hourly and daily rows
        still lack the five-minute rows past the watermark."""
        return False
