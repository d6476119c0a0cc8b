"""Query filters of the endpoint list."""

from typing import Any

from django.http import HttpRequest
from django_filters import rest_framework as filters

from accounts.models import Project
from monitoring.models import Endpoint, EndpointStatus, EndpointType


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
