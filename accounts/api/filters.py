"""Query filters of the audit log."""

from django_filters import rest_framework as filters

from accounts.models import AuditAction, AuditEvent
from healthmon.api.filters import TimeRangeFilter, UTCDateTimeFilter


class AuditEventFilter(TimeRangeFilter):
    """`?action=&actor=&target_type=&target_id=&from=&to=`; an unknown action is a 400."""

    action = filters.ChoiceFilter(choices=AuditAction.choices)
    actor = filters.UUIDFilter(field_name="actor_id", help_text="A user id.")
    target_type = filters.CharFilter(
        max_length=32, help_text="user, invitation, apikey or endpoint."
    )
    target_id = filters.CharFilter(max_length=64)
    start = UTCDateTimeFilter(
        field_name="created_at", lookup_expr="gte", label="from", help_text="ISO 8601 time."
    )
    end = UTCDateTimeFilter(
        field_name="created_at", lookup_expr="lte", label="to", help_text="ISO 8601 time."
    )

    class Meta:
        model = AuditEvent
        fields = ["action", "actor", "target_type", "target_id"]


# `from` is a Python keyword: the filters are declared as start and end, served as these.
AuditEventFilter.base_filters["from"] = AuditEventFilter.base_filters.pop("start")
AuditEventFilter.base_filters["to"] = AuditEventFilter.base_filters.pop("end")
