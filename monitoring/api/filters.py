"""Query filters of the endpoint list."""

import re
from typing import Any

from django.db.models import Q
from django.http import HttpRequest
from django_filters import rest_framework as filters
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field

from accounts.models import Project
from healthmon.api.filters import TimeRangeFilter, TrueFalseFilter, UTCDateTimeFilter
from monitoring.locations import known_slugs, stored_slug
from monitoring.models import (
    CheckResult,
    Endpoint,
    EndpointStatus,
    EndpointType,
    Incident,
    IncidentKind,
)
from monitoring.models.locations import SLUG_PATTERN


def _visible_endpoints(request: HttpRequest | None) -> Any:
    if request is None or request.user is None:  # schema generation
        return Endpoint.objects.none()
    return Endpoint.objects.visible_to(request.user).without_secrets()  # type: ignore[arg-type]


def _visible_projects(request: HttpRequest | None) -> Any:
    if request is None or request.user is None:  # schema generation
        return Project.objects.none()
    return Project.objects.visible_to(request.user)  # type: ignore[arg-type]


class EndpointFilter(filters.FilterSet):
    """`?project=&type=&status=&enabled=`; an unknown value is a 400, never an empty page."""

    project = filters.ModelChoiceFilter(queryset=_visible_projects, help_text="A project id.")
    type = filters.ChoiceFilter(choices=EndpointType.choices)
    status = filters.ChoiceFilter(choices=EndpointStatus.choices)
    enabled = TrueFalseFilter()

    class Meta:
        model = Endpoint
        fields = ["project", "type", "status", "enabled"]


class CheckFilter(TimeRangeFilter):
    """`?from=&to=` (ISO 8601, inclusive), `?ok=true|false` and `?location=<slug>`; an
    unknown location is a 400, as any unknown value of a list's filter."""

    start = UTCDateTimeFilter(
        field_name="checked_at", lookup_expr="gte", label="from", help_text="ISO 8601 time."
    )
    end = UTCDateTimeFilter(
        field_name="checked_at", lookup_expr="lte", label="to", help_text="ISO 8601 time."
    )
    ok = TrueFalseFilter()
    location = filters.CharFilter(
        method="filter_location", help_text="A location's slug: its checks only."
    )

    class Meta:
        model = CheckResult
        fields: list[str] = []

    def is_valid(self) -> bool:
        """The other filters' checks, and the location must be defined (named with them)."""
        valid = super().is_valid()
        slug = self.data.get("location")
        # Not a slug (a NUL byte, 300 characters...) is unknown without asking the database.
        if slug and (not re.fullmatch(SLUG_PATTERN, slug) or not known_slugs([slug])):
            self.form.add_error("location", f"Unknown location: {slug}.")
            return False
        return valid

    def filter_location(self, queryset: Any, name: str, value: str) -> Any:
        """The checks from that location (stored empty for the default one)."""
        return queryset.filter(location=stored_slug(value))


# `from` is a Python keyword: the filters are declared as start and end, served as these.
CheckFilter.base_filters["from"] = CheckFilter.base_filters.pop("start")
CheckFilter.base_filters["to"] = CheckFilter.base_filters.pop("end")


class IncidentFilter(filters.FilterSet):
    """`?endpoint=&project=&state=open|resolved&kind=automatic|manual`; an endpoint or
    project matches the incidents measured on it and those declared on it."""

    endpoint = filters.ModelChoiceFilter(
        queryset=_visible_endpoints, method="filter_endpoint", help_text="An endpoint id."
    )
    project = filters.ModelChoiceFilter(
        queryset=_visible_projects, method="filter_project", help_text="A project id."
    )
    state = filters.ChoiceFilter(
        choices=[("open", "open"), ("resolved", "resolved")], method="filter_state"
    )
    kind = filters.ChoiceFilter(choices=IncidentKind.choices)

    class Meta:
        model = Incident
        fields = ["endpoint", "project", "state", "kind"]

    def filter_state(self, queryset: Any, name: str, value: str) -> Any:
        """Open incidents have no resolution time yet."""
        return queryset.filter(resolved_at__isnull=value == "open")

    @extend_schema_field(OpenApiTypes.UUID)
    def filter_endpoint(self, queryset: Any, name: str, value: Endpoint) -> Any:
        """Measured on the endpoint, or declared on it."""
        declared = _declared_on(endpoint_id=value.pk)
        return queryset.filter(Q(endpoint=value) | Q(pk__in=declared))

    @extend_schema_field(OpenApiTypes.UUID)
    def filter_project(self, queryset: Any, name: str, value: Project) -> Any:
        """Measured on an endpoint of the project, or declared on one."""
        declared = _declared_on(endpoint__project_id=value.pk)
        return queryset.filter(Q(endpoint__project=value) | Q(pk__in=declared))


def _declared_on(**lookups: Any) -> Any:
    """Ids of the declared incidents naming the endpoints the lookups pick (a subquery:
    joining the link table would repeat an incident per endpoint)."""
    links = Incident.endpoints.through.objects.filter(**lookups)
    return links.values("incident_id")
