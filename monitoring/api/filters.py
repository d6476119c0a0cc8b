"""Query filters of the endpoint list."""

from datetime import UTC
from typing import Any

from django import forms
from django.http import HttpRequest
from django_filters import rest_framework as filters
from django_filters.fields import IsoDateTimeField

from accounts.models import Project
from monitoring.models import CheckResult, Endpoint, EndpointStatus, EndpointType, Incident


def _visible_endpoints(request: HttpRequest | None) -> Any:
    if request is None or request.user is None:  # schema generation
        return Endpoint.objects.none()
    return Endpoint.objects.visible_to(request.user).defer("target", "config")  # type: ignore[arg-type]


def _visible_projects(request: HttpRequest | None) -> Any:
    if request is None or request.user is None:  # schema generation
        return Project.objects.none()
    return Project.objects.visible_to(request.user)  # type: ignore[arg-type]


class EndpointFilter(filters.FilterSet):
    """`?project=&type=&status=&enabled=`; an unknown value is a 400, never an empty page."""

    project = filters.ModelChoiceFilter(queryset=_visible_projects, help_text="A project id.")
    type = filters.ChoiceFilter(choices=EndpointType.choices)
    status = filters.ChoiceFilter(choices=EndpointStatus.choices)
    enabled = filters.TypedChoiceFilter(
        choices=[("true", "true"), ("false", "false")], coerce=lambda value: value == "true"
    )

    class Meta:
        model = Endpoint
        fields = ["project", "type", "status", "enabled"]


class UTCDateTimeField(IsoDateTimeField):
    """An ISO 8601 time, converted to UTC: PostgreSQL refuses offsets past ±15:59."""

    def clean(self, value: Any) -> Any:
        """Parse, then move to UTC; a time that leaves the calendar is a 400."""
        parsed = super().clean(value)
        if parsed is None:
            return None
        try:
            return parsed.astimezone(UTC)
        except OverflowError as exc:
            raise forms.ValidationError("Out of range.") from exc


class UTCDateTimeFilter(filters.IsoDateTimeFilter):
    field_class = UTCDateTimeField


class _TimeRangeFilter(filters.FilterSet):
    """`from` before `to`, or a 400."""

    def is_valid(self) -> bool:
        """Field checks, then the range itself."""
        valid = super().is_valid()
        if valid:
            start, end = self.form.cleaned_data.get("from"), self.form.cleaned_data.get("to")
            if start and end and start > end:
                self.form.add_error("to", "Must not be before `from`.")
                return False
        return valid


class CheckFilter(_TimeRangeFilter):
    """`?from=&to=` (ISO 8601, inclusive) and `?ok=true|false`."""

    start = UTCDateTimeFilter(
        field_name="checked_at", lookup_expr="gte", label="from", help_text="ISO 8601 time."
    )
    end = UTCDateTimeFilter(
        field_name="checked_at", lookup_expr="lte", label="to", help_text="ISO 8601 time."
    )
    ok = filters.TypedChoiceFilter(
        choices=[("true", "true"), ("false", "false")], coerce=lambda value: value == "true"
    )

    class Meta:
        model = CheckResult
        fields: list[str] = []


# `from` is a Python keyword: the filters are declared as start and end, served as these.
CheckFilter.base_filters["from"] = CheckFilter.base_filters.pop("start")
CheckFilter.base_filters["to"] = CheckFilter.base_filters.pop("end")


class IncidentFilter(filters.FilterSet):
    """`?endpoint=&project=&state=open|resolved`."""

    endpoint = filters.ModelChoiceFilter(queryset=_visible_endpoints, help_text="An endpoint id.")
    project = filters.ModelChoiceFilter(
        field_name="endpoint__project", queryset=_visible_projects, help_text="A project id."
    )
    state = filters.ChoiceFilter(
        choices=[("open", "open"), ("resolved", "resolved")], method="filter_state"
    )

    class Meta:
        model = Incident
        fields = ["endpoint", "project", "state"]

    def filter_state(self, queryset: Any, name: str, value: str) -> Any:
        """Open incidents have no resolution time yet."""
        return queryset.filter(resolved_at__isnull=value == "open")
