"""Monitored endpoints: what to probe, how often, and where it stands."""

import uuid
from datetime import datetime

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

from accounts.models import Organization, Project, User
from healthmon.encryption import EncryptedJSONField, EncryptedTextField

MAX_INTERVAL_SECONDS = 86_400
MAX_TIMEOUT_SECONDS = 60


class EndpointType(models.TextChoices):
    """The nine probe kinds; `custom` detects the protocol from the target."""

    HTTP = "http", "HTTP(S)"
    GRAPHQL = "graphql", "GraphQL"
    GRPC = "grpc", "gRPC"
    POSTGRESQL = "postgresql", "PostgreSQL"
    MYSQL = "mysql", "MySQL / MariaDB"
    REDIS = "redis", "Redis"
    ELASTICSEARCH = "elasticsearch", "Elasticsearch"
    WEBSOCKET = "websocket", "WebSocket"
    CUSTOM = "custom", "Custom (auto-detect)"


class EndpointStatus(models.TextChoices):
    """Where an endpoint stands after its latest check."""

    UP = "up", "Up"
    DOWN = "down", "Down"
    DEGRADED = "degraded", "Degraded"
    PAUSED = "paused", "Paused"
    PENDING = "pending", "Pending (no check yet)"


class EndpointQuerySet(models.QuerySet["Endpoint"]):
    """Reusable endpoint filters."""

    def for_org(self, organization: Organization) -> "EndpointQuerySet":
        """Endpoints of one organization."""
        return self.filter(project__organization=organization)

    def visible_to(self, user: User) -> "EndpointQuerySet":
        """Endpoints in the projects the user can see."""
        return self.filter(project__in=Project.objects.visible_to(user))

    def due(self, now: datetime) -> "EndpointQuerySet":
        """Enabled endpoints whose next check is due."""
        return self.filter(enabled=True, next_check_at__lte=now)


class Endpoint(models.Model):
    """A monitored service.

    `target` and `config` are encrypted at rest: targets carry database passwords and
    configs carry authorization headers. `target_masked` and `config_masked` are their
    displayable forms, kept in clear so that lists, the admin and logs never decrypt.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="endpoints")
    name = models.CharField(max_length=200)
    type = models.CharField(max_length=16, choices=EndpointType.choices)
    target = EncryptedTextField()
    target_masked = models.CharField(max_length=2048, editable=False)
    interval_seconds = models.PositiveIntegerField(
        default=60, validators=[MaxValueValidator(MAX_INTERVAL_SECONDS)]
    )
    timeout_seconds = models.PositiveIntegerField(
        default=10, validators=[MaxValueValidator(MAX_TIMEOUT_SECONDS)]
    )
    config = EncryptedJSONField(default=dict)
    config_masked = models.JSONField(default=dict, editable=False)
    enabled = models.BooleanField(default=True)
    status = models.CharField(
        max_length=16, choices=EndpointStatus.choices, default=EndpointStatus.PENDING
    )
    last_checked_at = models.DateTimeField(null=True, blank=True)
    next_check_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = EndpointQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            # The scheduler's query: enabled endpoints by due time.
            models.Index(
                fields=["next_check_at"], name="endpoint_due_idx", condition=Q(enabled=True)
            ),
            models.Index(fields=["project", "created_at"], name="endpoint_project_idx"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(timeout_seconds__gte=1)
                & Q(timeout_seconds__lt=models.F("interval_seconds")),
                name="endpoint_timeout_below_interval",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        """The interval stays within bounds and the timeout below it (the admin form)."""
        if self.interval_seconds < settings.MIN_CHECK_INTERVAL:
            raise ValidationError(
                {"interval_seconds": f"At least {settings.MIN_CHECK_INTERVAL} seconds."}
            )
        if not 1 <= self.timeout_seconds < self.interval_seconds:
            raise ValidationError(
                {"timeout_seconds": "At least 1 second and less than the interval."}
            )
