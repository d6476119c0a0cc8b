"""The list filter backend (django-filter, skipped when a request sends no filter at all) and
the time and true/false filters lists share."""

from datetime import UTC
from typing import Any

from django import forms
from django.db.models import QuerySet
from django_filters import rest_framework as filters
from django_filters.fields import IsoDateTimeField
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework.request import Request


class FilterBackend(DjangoFilterBackend):
    """django-filter's backend; an unfiltered list skips building the filter form.

    Building the form costs about as much as the page query, on every plain list request.
    """

    def filter_queryset(self, request: Request, queryset: QuerySet[Any], view: Any) -> Any:
        """Filter only when one of the view's filter parameters is present."""
        filterset_class = self.get_filterset_class(view, queryset)
        if filterset_class is None or not any(
            name in request.query_params for name in filterset_class.base_filters
        ):
            return queryset
        return super().filter_queryset(request, queryset, view)


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


@extend_schema_field(OpenApiTypes.BOOL)
class TrueFalseFilter(filters.TypedChoiceFilter):
    """`true` or `false`, anything else a 400 (django-filter's BooleanFilter ignores it).

    Documented as a boolean: from the choices alone the schema would read as a boolean
    whose only values are the strings "true" and "false", which no value satisfies.
    """

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("choices", [("true", "true"), ("false", "false")])
        super().__init__(coerce=lambda value: value == "true", **kwargs)


class TimeRangeFilter(filters.FilterSet):
    """A filter set with `from` and `to`: `from` before `to`, or a 400."""

    def is_valid(self) -> bool:
        """Field checks, then the range itself."""
        valid = super().is_valid()
        if valid:
            start, end = self.form.cleaned_data.get("from"), self.form.cleaned_data.get("to")
            if start and end and start > end:
                self.form.add_error("to", "Must not be before `from`.")
                return False
        return valid
