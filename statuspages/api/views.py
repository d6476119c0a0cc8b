"""Status pages API: the pages an organization shows the world, their sections and
endpoints.

Every user of the organization reads its pages (a member sees, in `sections`, only the
endpoints of its projects); owners and admins write them. A key reads with
`endpoint:read` (a page is made of endpoints, which that scope covers) and needs `admin`
to write, as for every write on status pages.
"""

import uuid
from typing import Any

from django.db.models import QuerySet
from django_filters import rest_framework as filters
from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_view
from rest_framework import viewsets
from rest_framework.serializers import BaseSerializer

from accounts.permissions import IsManagerOrReadOnly, caller
from apikeys.models import Scope
from apikeys.permissions import HasScope
from monitoring.models import Endpoint
from statuspages import services
from statuspages.access import access_status_page, status_pages_of
from statuspages.api.serializers import StatusPageSerializer
from statuspages.models import StatusPage, Visibility

HTTP_METHODS = ["get", "post", "patch", "delete", "head", "options"]

# Request examples; a test creates every one (`tests/healthmon/test_openapi.py`).
PAGE_EXAMPLES = [
    OpenApiExample(
        "Public",
        request_only=True,
        value={
            "name": "Acme status",
            "slug": "acme",
            "title": "Acme service status",
            "visibility": "public",
            "uptime_days": 90,
            "sections": [],
        },
    ),
    OpenApiExample(
        "Password",
        request_only=True,
        value={
            "name": "Partner status",
            "slug": "acme-partners",
            "visibility": "password",
            "password": "shared-with-partners",
        },
    ),
]


class StatusPageFilter(filters.FilterSet):
    """`?visibility=public|password|private`."""

    visibility = filters.ChoiceFilter(choices=Visibility.choices)

    class Meta:
        model = StatusPage
        fields = ["visibility"]


@extend_schema(tags=["status-pages"])
@extend_schema_view(
    list=extend_schema(summary="List the organization's status pages"),
    create=extend_schema(summary="Create a status page (owner, admin)", examples=PAGE_EXAMPLES),
    retrieve=extend_schema(summary="One status page"),
    partial_update=extend_schema(
        summary="Change a status page (owner, admin); `sections`, when sent, replaces them all"
    ),
    destroy=extend_schema(
        summary="Delete a status page with its sections and subscribers (owner, admin)"
    ),
)
class StatusPageViewSet(viewsets.ModelViewSet):
    """The caller's organization's status pages."""

    permission_classes = [HasScope, IsManagerOrReadOnly]
    serializer_class = StatusPageSerializer
    filterset_class = StatusPageFilter
    http_method_names = HTTP_METHODS
    read_scope = Scope.ENDPOINT_READ

    def get_queryset(self) -> QuerySet[StatusPage]:
        """The organization's pages with their sections and components."""
        if getattr(self, "swagger_fake_view", False):
            return StatusPage.objects.none()
        return status_pages_of(caller(self.request))

    def get_object(self) -> StatusPage:
        """A page of the caller's organization, else 404."""
        return access_status_page(caller(self.request), self.kwargs["pk"])

    def get_serializer_context(self) -> dict[str, Any]:
        """For a member, the endpoints it may see (the others are left out of `sections`)."""
        context = dict(super().get_serializer_context())
        user = getattr(self.request, "user", None)
        if user is not None and not getattr(user, "is_manager", True):
            visible: set[uuid.UUID] = set(
                Endpoint.objects.visible_to(user).values_list("pk", flat=True)
            )
            context["visible_endpoints"] = visible
        return context

    def perform_create(self, serializer: BaseSerializer[StatusPage]) -> None:
        """Create in the caller's organization, then read it back as the list does."""
        page = services.status_page_create(
            organization=caller(self.request).organization,
            data=serializer.validated_data["page"],
        )
        serializer.instance = access_status_page(caller(self.request), page.pk)

    def perform_update(self, serializer: BaseSerializer[StatusPage]) -> None:
        """Change the page, then read it back with its new sections."""
        assert serializer.instance is not None  # noqa: S101 - DRF always sets it on update
        services.status_page_update(
            page=serializer.instance, data=serializer.validated_data["page"]
        )
        serializer.instance = access_status_page(caller(self.request), serializer.instance.pk)

    def perform_destroy(self, instance: StatusPage) -> None:
        """Delete through the service that records it in the audit log."""
        services.status_page_delete(page=instance)
