"""Endpoint API: create, list, read, change, pause, resume and delete monitored services;
their checks, check-now, and incidents."""

from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from accounts.permissions import caller
from apikeys.models import Scope
from healthmon.api.errors import PlainTextRenderer, ProblemJSONRenderer
from monitoring import services
from monitoring.access import access_endpoint, access_incident, access_ping
from monitoring.api.filters import CheckFilter, EndpointFilter, IncidentFilter
from monitoring.api.schema import ENDPOINT, ENDPOINT_EXAMPLES, ENDPOINTS
from monitoring.api.serializers import (
    CheckNowSerializer,
    CheckResultSerializer,
    EndpointSerializer,
    IncidentSerializer,
    PingSerializer,
)
from monitoring.models import CheckResult, Endpoint, Incident, Ping


@extend_schema(tags=["endpoints"])
@extend_schema_view(
    list=extend_schema(
        summary="List monitored endpoints (filter by project, type, status)",
        responses={200: ENDPOINTS},
    ),
    create=extend_schema(
        summary="Start monitoring an endpoint",
        request=ENDPOINT,
        responses={201: ENDPOINT},
        examples=ENDPOINT_EXAMPLES,
    ),
    retrieve=extend_schema(summary="One endpoint", responses={200: ENDPOINT}),
    partial_update=extend_schema(
        summary="Change an endpoint",
        request=EndpointSerializer,
        responses={200: ENDPOINT},
    ),
    destroy=extend_schema(summary="Stop monitoring and delete an endpoint with its history"),
)
class EndpointViewSet(viewsets.ModelViewSet):
    """Endpoints in the projects the caller can see; members write only there too."""

    read_scope = Scope.ENDPOINT_READ
    write_scope = Scope.ENDPOINT_CREATE
    serializer_class = EndpointSerializer
    filterset_class = EndpointFilter
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self) -> QuerySet[Endpoint]:
        """Visible endpoints, without decrypting (the masked forms are shown)."""
        if getattr(self, "swagger_fake_view", False):
            return Endpoint.objects.none()
        return Endpoint.objects.visible_to(caller(self.request)).defer("target", "config")

    def get_object(self) -> Endpoint:
        """An endpoint the caller can see, else 404; writes lock it until they commit."""
        writing = self.request.method not in permissions.SAFE_METHODS
        return access_endpoint(caller(self.request), self.kwargs["pk"], for_update=writing)

    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Validate against, and write, the locked row: concurrent changes queue up."""
        with transaction.atomic():
            return super().update(request, *args, **kwargs)

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Delete the endpoint with its history."""
        with transaction.atomic():
            return super().destroy(request, *args, **kwargs)

    def perform_create(self, serializer: BaseSerializer[Endpoint]) -> None:
        """Create through the service that schedules the first check."""
        serializer.instance = services.endpoint_create(**serializer.validated_data)

    def perform_destroy(self, instance: Endpoint) -> None:
        """Delete through the service that records it in the audit log."""
        services.endpoint_delete(endpoint=instance)

    def perform_update(self, serializer: BaseSerializer[Endpoint]) -> None:
        """Change through the service that keeps the schedule right."""
        assert serializer.instance is not None  # noqa: S101 - DRF always sets it on update
        changes = services.EndpointChanges(**serializer.validated_data)
        serializer.instance = services.endpoint_update(
            endpoint=serializer.instance, changes=changes
        )

    @extend_schema(summary="Pause checking an endpoint", request=None, responses={200: ENDPOINT})
    @action(detail=True, methods=["post"])
    def pause(self, request: Request, pk: str) -> Response:
        """Stop checking the endpoint until it is resumed; its history stays."""
        with transaction.atomic():
            endpoint = services.endpoint_set_enabled(endpoint=self.get_object(), enabled=False)
        return Response(self.get_serializer(endpoint).data)

    @extend_schema(
        summary="Resume checking a paused endpoint", request=None, responses={200: ENDPOINT}
    )
    @action(detail=True, methods=["post"])
    def resume(self, request: Request, pk: str) -> Response:
        """Check the endpoint again, starting at once."""
        with transaction.atomic():
            endpoint = services.endpoint_set_enabled(endpoint=self.get_object(), enabled=True)
        return Response(self.get_serializer(endpoint).data)

    @extend_schema(
        summary="The endpoint's checks, newest first",
        responses={200: CheckResultSerializer(many=True)},
        parameters=[
            OpenApiParameter(
                "from", OpenApiTypes.DATETIME, description="ISO 8601; checks at or after it."
            ),
            OpenApiParameter(
                "to", OpenApiTypes.DATETIME, description="ISO 8601; checks at or before it."
            ),
            OpenApiParameter("ok", bool, description="Only successful (true) or failed (false)."),
        ],
        filters=False,
    )
    @action(detail=True, methods=["get"], filterset_class=None)
    def checks(self, request: Request, pk: str) -> Response:
        """A page of stored checks, filtered by time range and outcome."""
        endpoint = self.get_object()
        checks = CheckResult.objects.filter(endpoint=endpoint).order_by("-checked_at", "-id")
        selected = CheckFilter(request.query_params, queryset=checks)
        if not selected.is_valid():
            raise ValidationError(selected.errors)
        page = self.paginate_queryset(selected.qs)
        return self.get_paginated_response(CheckResultSerializer(page, many=True).data)

    @extend_schema(
        summary="A heartbeat's pings, newest first (empty for probed endpoints)",
        responses={200: PingSerializer(many=True)},
        filters=False,
    )
    @action(detail=True, methods=["get"], filterset_class=None)
    def pings(self, request: Request, pk: str) -> Response:
        """A page of the pings the endpoint received."""
        endpoint = self.get_object()
        pings = Ping.objects.filter(endpoint=endpoint).order_by("-received_at", "-id")
        page = self.paginate_queryset(pings.defer("body"))
        return self.get_paginated_response(PingSerializer(page, many=True).data)

    @extend_schema(
        summary="A ping's body as text/plain (empty when none was sent)",
        responses={(200, "text/plain"): OpenApiTypes.STR},
        parameters=[OpenApiParameter("ping_id", OpenApiTypes.UUID, OpenApiParameter.PATH)],
        filters=False,
    )
    @action(
        detail=True,
        methods=["get"],
        url_path=r"pings/(?P<ping_id>[^/.]+)/body",
        filterset_class=None,
        # JSON first: with no Accept (or */*) an error is negotiated as JSON.
        renderer_classes=[JSONRenderer, ProblemJSONRenderer, PlainTextRenderer],
    )
    def ping_body(self, request: Request, pk: str, ping_id: str) -> HttpResponse:
        """The stored body of one of the endpoint's pings (the first 100 kB when cut)."""
        ping = access_ping(self.get_object(), ping_id)
        return HttpResponse(ping.body, content_type="text/plain; charset=utf-8")

    @extend_schema(
        summary="Check the endpoint now (at most once per 5 seconds per endpoint)",
        request=None,
        responses={
            202: CheckNowSerializer,
            400: OpenApiResponse(description="The endpoint is paused (`validation_error`)."),
            429: OpenApiResponse(
                description="Checked less than 5 seconds ago (`throttled`); retry after the "
                "seconds in `Retry-After`."
            ),
        },
    )
    @action(detail=True, methods=["post"], url_path="check-now")
    def check_now(self, request: Request, pk: str) -> Response:
        """Queue an immediate check; it runs within seconds, its result joins the checks."""
        with transaction.atomic():
            slot = services.endpoint_check_now(endpoint=self.get_object())
        body = CheckNowSerializer({"endpoint": pk, "scheduled_for": slot}).data
        return Response(body, status=status.HTTP_202_ACCEPTED)


@extend_schema(tags=["incidents"])
@extend_schema_view(
    list=extend_schema(summary="List incidents, newest first (filter by endpoint, project, state)"),
    retrieve=extend_schema(summary="One incident"),
)
class IncidentViewSet(viewsets.ReadOnlyModelViewSet):
    """Incidents of the endpoints the caller can see."""

    read_scope = Scope.INCIDENT_READ
    serializer_class = IncidentSerializer
    filterset_class = IncidentFilter

    def get_queryset(self) -> QuerySet[Incident]:
        """Incidents in the caller's visible projects."""
        if getattr(self, "swagger_fake_view", False):
            return Incident.objects.none()
        return Incident.objects.visible_to(caller(self.request))

    def get_object(self) -> Incident:
        """An incident the caller can see, else 404."""
        return access_incident(caller(self.request), self.kwargs["pk"])
