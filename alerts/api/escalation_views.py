"""Escalation policies API: `GET, POST /escalation-policies`, `GET, PATCH, DELETE
/escalation-policies/{id}`.

Everyone reads the policies they can see; owners and admins write. No key scope is
declared, so an API key needs `admin` to write (as for channels).
"""

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from accounts.permissions import IsManagerOrReadOnly, caller
from alerts import services
from alerts.api.escalation_serializers import EscalationPolicySerializer
from alerts.api.views import HTTP_METHODS
from alerts.escalation_selectors import access_policy, policies_visible
from alerts.models import EscalationPolicy
from apikeys.permissions import HasScope


@extend_schema(tags=["escalation-policies"])
@extend_schema_view(
    list=extend_schema(summary="List escalation policies"),
    create=extend_schema(summary="Create an escalation policy"),
    retrieve=extend_schema(summary="One escalation policy"),
    partial_update=extend_schema(
        summary="Change an escalation policy (steps sent replace all of them)"
    ),
    destroy=extend_schema(summary="Delete an escalation policy (its incidents stop escalating)"),
)
class EscalationPolicyViewSet(viewsets.ModelViewSet):
    """Policies the caller can see: managers all of the organization's, members those for
    the whole organization or touching their projects."""

    permission_classes = [HasScope, IsManagerOrReadOnly]
    serializer_class = EscalationPolicySerializer
    http_method_names = HTTP_METHODS

    def get_queryset(self) -> QuerySet[EscalationPolicy]:
        """Visible policies."""
        if getattr(self, "swagger_fake_view", False):
            return EscalationPolicy.objects.none()
        return policies_visible(caller(self.request))

    def get_object(self) -> EscalationPolicy:
        """A policy the caller can see, else 404."""
        return access_policy(caller(self.request), self.kwargs["pk"])

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Create in the caller's organization."""
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        policy = services.escalation_policy_create(
            organization=caller(request).organization,
            name=data["name"],
            steps=data["steps"],
            repeat_every_minutes=data.get("repeat_every_minutes"),
            projects=data.get("projects", ()),
            endpoints=data.get("endpoints", ()),
        )
        body = self.get_serializer(policy).data
        return Response(body, status=status.HTTP_201_CREATED)

    def perform_update(self, serializer: BaseSerializer[EscalationPolicy]) -> None:
        """Change the fields sent; the stored ones stay."""
        policy = serializer.instance
        assert policy is not None  # noqa: S101 - DRF always sets it on update
        data = serializer.validated_data
        serializer.instance = services.escalation_policy_update(
            policy=policy,
            name=data.get("name", policy.name),
            repeat_every_minutes=data.get("repeat_every_minutes", policy.repeat_every_minutes),
            steps=data.get("steps"),
            projects=data.get("projects"),
            endpoints=data.get("endpoints"),
        )

    def perform_destroy(self, instance: EscalationPolicy) -> None:
        """Delete through the service that records it in the audit log."""
        services.escalation_policy_delete(policy=instance)
