"""Alerts API: notification channels (a test send, their deliveries) and maintenance windows.

Everyone reads the channels and windows they can see; owners and admins write. No key
scope is declared, so an API key needs `admin` for every route here: a channel's config
holds credentials, and a window silences alerts.
"""

from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone
from django_filters import rest_framework as filters
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from accounts.models import User
from accounts.permissions import IsManagerOrReadOnly, caller
from alerts import delivery, services
from alerts.access import access_channel, access_maintenance_window
from alerts.api.serializers import (
    DeliveryQuerySerializer,
    DeliverySerializer,
    MaintenanceWindowSerializer,
    NotificationChannelCreatedSerializer,
    NotificationChannelSerializer,
)
from alerts.models import (
    Delivery,
    DeliveryStatus,
    MaintenanceWindow,
    NotificationChannel,
)
from apikeys.permissions import HasScope
from healthmon.api.filters import TrueFalseFilter

HTTP_METHODS = ["get", "post", "patch", "delete", "head", "options"]


def _deliveries(channel: NotificationChannel, user: User, status_value: str) -> QuerySet[Delivery]:
    """A channel's deliveries the user may see, newest first, with their tries."""
    rows = Delivery.objects.filter(channel=channel).visible_to(user).prefetch_related("tries")
    if status_value:
        rows = rows.filter(status=status_value)
    return rows.order_by("-created_at", "-id")


# Request examples; a test creates every one (`tests/healthmon/test_openapi.py`).
CHANNEL_EXAMPLES = [
    OpenApiExample(
        "Email",
        request_only=True,
        value={
            "name": "On-call mail",
            "kind": "email",
            "config": {"addresses": ["oncall@example.com"], "to_members": False},
        },
    ),
    OpenApiExample(
        "Webhook",
        request_only=True,
        value={
            "name": "Incident bot",
            "kind": "webhook",
            "config": {"url": "https://hooks.example.com/healthmon"},
        },
    ),
]
WINDOW_EXAMPLES = [
    OpenApiExample(
        "Weekly",
        request_only=True,
        value={
            "name": "Sunday deploys",
            "starts_at": "2030-01-06T02:00:00Z",
            "ends_at": "2030-01-06T03:00:00Z",
            "recurrence": "weekly",
        },
    ),
    OpenApiExample(
        "Monthly, local time",
        request_only=True,
        value={
            "name": "Patch Sunday",
            "starts_at": "2030-01-06T02:00:00+01:00",
            "ends_at": "2030-01-06T04:00:00+01:00",
            "rrule": "FREQ=MONTHLY;BYDAY=1SU",
            "timezone": "Europe/Berlin",
        },
    ),
]


@extend_schema(tags=["notification-channels"])
@extend_schema_view(
    list=extend_schema(summary="List notification channels (configs masked)"),
    create=extend_schema(
        summary="Create a notification channel; a webhook's signing secret is in this answer only",
        responses={201: NotificationChannelCreatedSerializer},
        examples=CHANNEL_EXAMPLES,
    ),
    retrieve=extend_schema(summary="One notification channel (config masked)"),
    partial_update=extend_schema(
        summary="Change a notification channel; send a masked URL back as answered to keep it"
    ),
    destroy=extend_schema(summary="Delete a notification channel and its deliveries"),
)
class NotificationChannelViewSet(viewsets.ModelViewSet):
    """Channels the caller can see: managers all of the organization's, members those for
    the whole organization or touching their projects."""

    permission_classes = [HasScope, IsManagerOrReadOnly]
    serializer_class = NotificationChannelSerializer
    http_method_names = HTTP_METHODS

    def get_queryset(self) -> QuerySet[NotificationChannel]:
        """Visible channels, without decrypting (the masked configs are shown)."""
        if getattr(self, "swagger_fake_view", False):
            return NotificationChannel.objects.none()
        channels = NotificationChannel.objects.visible_to(caller(self.request))
        return channels.without_secrets()

    def get_object(self) -> NotificationChannel:
        """A channel the caller can see, else 404."""
        return access_channel(caller(self.request), self.kwargs["pk"])

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Create in the caller's organization; answer the secret of a webhook, once."""
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        channel = services.channel_create(
            organization=caller(request).organization,
            name=data["name"],
            kind=data["kind"],
            config=data["config"],
            projects=data.get("projects", ()),
            endpoints=data.get("endpoints", ()),
            enabled=data["enabled"],
            events=data.get("events"),
        )
        body = NotificationChannelCreatedSerializer(
            channel, context=self.get_serializer_context()
        ).data
        return Response(body, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance: NotificationChannel) -> None:
        """Delete through the service that records it in the audit log."""
        services.channel_delete(channel=instance)

    def perform_update(self, serializer: BaseSerializer[NotificationChannel]) -> None:
        """Change through the service that clears the failing flag when it should."""
        assert serializer.instance is not None  # noqa: S101 - DRF always sets it on update
        data = serializer.validated_data
        serializer.instance = services.channel_update(
            channel=serializer.instance,
            name=data.get("name"),
            config=data.get("config"),
            enabled=data.get("enabled"),
            projects=data.get("projects"),
            endpoints=data.get("endpoints"),
            events=data.get("events"),
        )

    @extend_schema(
        summary="Send a test event now (owner, admin; at most once per 5 seconds per channel)",
        request=None,
        responses={
            200: DeliverySerializer,
            429: OpenApiResponse(
                description="Tested less than 5 seconds ago (`throttled`); retry after the "
                "seconds in `Retry-After`."
            ),
        },
    )
    @action(detail=True, methods=["post"])
    def test(self, request: Request, pk: str) -> Response:
        """Send a `test` event at once and answer its delivery, with the try's outcome."""
        sent = delivery.channel_test(channel=self.get_object())
        return Response(DeliverySerializer(sent).data)

    @extend_schema(
        summary="The channel's deliveries with their tries, newest first",
        responses={200: DeliverySerializer(many=True)},
        parameters=[
            OpenApiParameter(
                "status",
                str,
                enum=DeliveryStatus.values,
                description="Only deliveries in this state.",
            )
        ],
        filters=False,
    )
    @action(detail=True, methods=["get"])
    def deliveries(self, request: Request, pk: str) -> Response:
        """A page of the channel's deliveries, optionally of one status."""
        channel = self.get_object()
        query = DeliveryQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        rows = _deliveries(channel, caller(request), query.validated_data.get("status", ""))
        page = self.paginate_queryset(rows)
        return self.get_paginated_response(DeliverySerializer(page, many=True).data)


class MaintenanceWindowFilter(filters.FilterSet):
    """`?active=true|false`: windows in effect now, or not."""

    active = TrueFalseFilter(method="filter_active", help_text="An occurrence covers now.")

    class Meta:
        model = MaintenanceWindow
        fields = ["active"]

    def filter_active(
        self, queryset: QuerySet[MaintenanceWindow], name: str, value: bool
    ) -> QuerySet[MaintenanceWindow]:
        """Recurring windows repeat: whether one is in effect is worked out per window."""
        now = timezone.now()
        windows = queryset.only("pk", "starts_at", "ends_at", "rrule", "timezone")
        return queryset.filter(pk__in=[w.pk for w in windows if w.active_at(now) == value])


@extend_schema(tags=["maintenance-windows"])
@extend_schema_view(
    list=extend_schema(summary="List maintenance windows (filter by whether in effect now)"),
    create=extend_schema(summary="Plan a maintenance window", examples=WINDOW_EXAMPLES),
    retrieve=extend_schema(summary="One maintenance window"),
    partial_update=extend_schema(summary="Change a maintenance window"),
    destroy=extend_schema(summary="Delete a maintenance window"),
)
class MaintenanceWindowViewSet(viewsets.ModelViewSet):
    """Windows the caller can see: managers all of the organization's, members those for
    the whole organization or touching their projects."""

    permission_classes = [HasScope, IsManagerOrReadOnly]
    serializer_class = MaintenanceWindowSerializer
    filterset_class = MaintenanceWindowFilter
    http_method_names = HTTP_METHODS

    def get_queryset(self) -> QuerySet[MaintenanceWindow]:
        """Visible windows."""
        if getattr(self, "swagger_fake_view", False):
            return MaintenanceWindow.objects.none()
        return MaintenanceWindow.objects.visible_to(caller(self.request))

    def get_object(self) -> MaintenanceWindow:
        """A window the caller can see, else 404."""
        return access_maintenance_window(caller(self.request), self.kwargs["pk"])

    def get_serializer_context(self) -> dict[str, Any]:
        """One `now` for every window of an answer (`active`, `next_start`)."""
        now: datetime = timezone.now()
        return {**super().get_serializer_context(), "now": now}

    def perform_create(self, serializer: BaseSerializer[MaintenanceWindow]) -> None:
        """Create in the caller's organization."""
        window = MaintenanceWindow(organization=caller(self.request).organization)
        self._save(serializer, window)

    def perform_destroy(self, instance: MaintenanceWindow) -> None:
        """Delete through the service that records it in the audit log."""
        services.maintenance_window_delete(window=instance)

    def perform_update(self, serializer: BaseSerializer[MaintenanceWindow]) -> None:
        """Change the fields sent."""
        assert serializer.instance is not None  # noqa: S101 - DRF always sets it on update
        self._save(serializer, serializer.instance)

    def _save(
        self, serializer: BaseSerializer[MaintenanceWindow], window: MaintenanceWindow
    ) -> None:
        """Save the fields sent, the stored ones for those not sent (a patch)."""
        data = serializer.validated_data
        serializer.instance = services.maintenance_window_save(
            window=window,
            name=data.get("name", window.name),
            starts_at=data.get("starts_at", window.starts_at),
            ends_at=data.get("ends_at", window.ends_at),
            rrule=data.get("rrule", window.rrule),
            timezone=data.get("timezone", window.timezone),
            projects=data.get("projects"),
            endpoints=data.get("endpoints"),
        )
