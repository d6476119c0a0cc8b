"""Endpoint API: create, list, read, change, pause, resume and delete monitored services;
their checks, check-now; incidents, which people declare, update, annotate and edit."""

from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from django.db import transaction
from django.db.models import Count, Q, QuerySet
from django.http import HttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from accounts.access import get_or_404
from accounts.permissions import IsManagerOrReadOnly, IsOrganizationMember, caller
from apikeys.models import Scope
from apikeys.permissions import HasScope
from healthmon.api.errors import PlainTextRenderer, ProblemJSONRenderer
from healthmon.db import ColumnRows
from monitoring import incidents, services
from monitoring.access import access_endpoint, access_incident, access_ping
from monitoring.acknowledgement import incident_acknowledge
from monitoring.api.filters import CheckFilter, EndpointFilter, IncidentFilter
from monitoring.api.incident_serializers import (
    IncidentDeclareSerializer,
    IncidentEditSerializer,
    IncidentNoteCreateSerializer,
    IncidentNoteSerializer,
    IncidentSerializer,
    IncidentUpdateCreateSerializer,
    IncidentUpdateSerializer,
)
from monitoring.api.schema import ENDPOINT, ENDPOINT_EXAMPLES, ENDPOINTS
from monitoring.api.serializers import (
    ROW_FIELDS,
    CheckNowSerializer,
    CheckResultSerializer,
    EndpointSerializer,
    LocationSerializer,
    PingSerializer,
    endpoint_representation,
)
from monitoring.models import (
    OFFLINE_AFTER,
    AckVia,
    CheckResult,
    Endpoint,
    Incident,
    Location,
    Ping,
)
from monitoring.selectors import endpoint_rows_visible, incidents_load, incidents_visible

if TYPE_CHECKING:
    from rest_framework.views import APIView


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
        return Endpoint.objects.visible_to(caller(self.request)).without_secrets()

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """A page of endpoints, read as rows of the shown columns (no model instances);
        unfiltered, without building a queryset (the same rows, in the same order)."""
        rows: QuerySet[Endpoint, dict[str, Any]] | ColumnRows
        if any(name in request.query_params for name in EndpointFilter.base_filters):
            rows = self.filter_queryset(self.get_queryset()).values(*ROW_FIELDS)
        else:
            rows = endpoint_rows_visible(caller(request), ROW_FIELDS)
        page = self.paginate_queryset(cast(Any, rows)) or []
        return self.get_paginated_response([endpoint_representation(row) for row in page])

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
        summary="The endpoint's checks, newest first (each names its location)",
        responses={200: CheckResultSerializer(many=True)},
        parameters=[
            OpenApiParameter(
                "from", OpenApiTypes.DATETIME, description="ISO 8601; checks at or after it."
            ),
            OpenApiParameter(
                "to", OpenApiTypes.DATETIME, description="ISO 8601; checks at or before it."
            ),
            OpenApiParameter("ok", bool, description="Only successful (true) or failed (false)."),
            OpenApiParameter(
                "location", str, description="A location's slug: its checks only (unknown: 400)."
            ),
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


class AnyScope(HasScope):
    """Any member, and any key whatever its scopes: for global reference data that every
    other route's answers (and requests) name, such as the probe locations."""

    def has_permission(self, request: Request, view: "APIView") -> bool:
        """Authenticated, nothing more."""
        return IsOrganizationMember.has_permission(self, request, view)


@extend_schema(tags=["locations"])
@extend_schema_view(
    list=extend_schema(summary="List probe locations, by slug (every key may read them)"),
    retrieve=extend_schema(
        summary="One probe location, by slug",
        parameters=[OpenApiParameter("id", str, OpenApiParameter.PATH, description="The slug.")],
    ),
)
class LocationViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """The places checks run from. Locations are global, not an organization's: they show
    only a slug, a name and liveness, so every member and every key may read them (an
    endpoint's `locations`, a check's `location` and analytics name them)."""

    permission_classes = [AnyScope]
    serializer_class = LocationSerializer
    lookup_field = "slug"
    lookup_url_kwarg = "pk"
    lookup_value_regex = "[a-z0-9-]{1,40}"

    def get_queryset(self) -> QuerySet[Location]:
        """Every location, with its workers heard from lately counted."""
        live = Q(workers__last_seen_at__gte=self._since())
        workers = Count("workers", filter=live)
        return Location.objects.annotate(live_workers=workers).order_by("slug")

    def get_serializer_context(self) -> dict[str, Any]:
        """Liveness is judged against one moment for the whole answer."""
        return {**super().get_serializer_context(), "since": self._since()}

    def _since(self) -> datetime:
        if not hasattr(self, "_heard_since"):
            self._heard_since = timezone.now() - OFFLINE_AFTER
        return self._heard_since


@extend_schema(tags=["incidents"])
@extend_schema_view(
    list=extend_schema(
        summary="List incidents with their updates and notes, newest first (filter by "
        "endpoint, project, state, kind)"
    ),
    retrieve=extend_schema(summary="One incident with its updates and notes"),
    create=extend_schema(
        summary="Declare an incident on endpoints (owner, admin)",
        request=IncidentDeclareSerializer,
        responses={201: IncidentSerializer},
    ),
    partial_update=extend_schema(
        summary="Change an incident's title, impact or whether status pages show it (owner, admin)",
        request=IncidentEditSerializer,
        responses={200: IncidentSerializer},
    ),
)
class IncidentViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet,
):
    """Incidents the caller can see: those measured on endpoints of its visible projects and
    every incident declared in its organization. Owners and admins declare, update, annotate
    and edit them; no key scope is declared for writes, so a key needs `admin`."""

    permission_classes = [HasScope, IsManagerOrReadOnly]
    read_scope = Scope.INCIDENT_READ
    serializer_class = IncidentSerializer
    filterset_class = IncidentFilter
    http_method_names = ["get", "post", "patch", "head", "options"]

    def get_queryset(self) -> QuerySet[Incident]:
        """Visible incidents with their endpoints, updates and notes."""
        if getattr(self, "swagger_fake_view", False):
            return Incident.objects.none()
        return incidents_visible(caller(self.request))

    def get_object(self) -> Incident:
        """An incident the caller can see, else 404."""
        return access_incident(caller(self.request), self.kwargs["pk"])

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """A page of incidents with their lines (read for that page only)."""
        queryset = self.filter_queryset(self.get_queryset())
        page = self.paginate_queryset(queryset)
        incidents = list(queryset) if page is None else page
        incidents_load(incidents, caller(request))
        data = self.get_serializer(incidents, many=True).data
        return Response(data) if page is None else self.get_paginated_response(data)

    def _answer(self, incident_id: object, status_code: int = status.HTTP_200_OK) -> Response:
        """The incident read afresh, as a list shows it (a 404 if the caller cannot see it)."""
        found = get_or_404(self.get_queryset(), incident_id)
        incidents_load([found], caller(self.request))
        return Response(self.get_serializer(found).data, status=status_code)

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """One incident, with what a list shows of it."""
        return self._answer(self.kwargs["pk"])

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Declare a manual incident in the caller's organization."""
        body = IncidentDeclareSerializer(data=request.data, context=self.get_serializer_context())
        body.is_valid(raise_exception=True)
        user = caller(request)
        incident = incidents.incident_declare(
            organization=user.organization, author=user, **body.validated_data
        )
        return self._answer(incident.pk, status.HTTP_201_CREATED)

    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Change the fields sent."""
        incident = self.get_object()
        body = IncidentEditSerializer(data=request.data, context=self.get_serializer_context())
        body.is_valid(raise_exception=True)
        incidents.incident_edit(incident=incident, **body.validated_data)
        return self._answer(incident.pk)

    @extend_schema(
        summary="Post an update: a state and a Markdown message (owner, admin)",
        request=IncidentUpdateCreateSerializer,
        responses={201: IncidentUpdateSerializer},
        filters=False,
    )
    @action(detail=True, methods=["post"], filterset_class=None)
    def updates(self, request: Request, pk: str) -> Response:
        """Store the update with its HTML; the incident takes its state."""
        incident = self.get_object()
        context = {**self.get_serializer_context(), "incident": incident}
        body = IncidentUpdateCreateSerializer(data=request.data, context=context)
        body.is_valid(raise_exception=True)
        update = incidents.incident_update_post(
            incident=incident, author=caller(request), **body.validated_data
        )
        return Response(IncidentUpdateSerializer(update).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Add an internal note, never shown publicly (owner, admin)",
        request=IncidentNoteCreateSerializer,
        responses={201: IncidentNoteSerializer},
        filters=False,
    )
    @action(detail=True, methods=["post"], filterset_class=None)
    def notes(self, request: Request, pk: str) -> Response:
        """Store the note."""
        incident = self.get_object()
        body = IncidentNoteCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        note = incidents.incident_note_add(
            incident=incident, author=caller(request), text=body.validated_data["text"]
        )
        return Response(IncidentNoteSerializer(note).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Acknowledge an incident: escalation and reminders stop (every member who "
        "sees it; a key needs `admin`)",
        request=None,
        responses={
            200: IncidentSerializer,
            409: OpenApiResponse(
                description="The incident is resolved and was never acknowledged "
                "(`incident_resolved`)."
            ),
        },
        filters=False,
    )
    @action(
        detail=True,
        methods=["post"],
        filterset_class=None,
        # On-call members acknowledge too (not only owners and admins); no key scope is
        # declared for it, so a key needs `admin`.
        permission_classes=[HasScope],
    )
    def acknowledge(self, request: Request, pk: str) -> Response:
        """Acknowledge once; again, the same acknowledgement answers and nothing changes."""
        incident = self.get_object()
        incident_acknowledge(incident=incident, by=caller(request), via=AckVia.API)
        return self._answer(incident.pk)
