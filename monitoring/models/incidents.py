"""Incidents: measured outages of one endpoint and declared ones, with the words the team
gives readers (updates) and itself (notes)."""

import uuid
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Case, F, IntegerField, Q, Value, When
from django.utils import timezone

from accounts.models import Organization, User
from monitoring.models.endpoints import Endpoint, time_ordered_uuid, visible_project_ids

# Open incidents first (0), then resolved ones (1): the incident list's first sort key, and
# the second column of `incident_org_open_first_idx` (the same expression, so PostgreSQL
# reads a page of the list in order from that index instead of sorting all of them).
OPEN_FIRST = Case(
    When(resolved_at__isnull=True, then=Value(0)), default=Value(1), output_field=IntegerField()
)


class IncidentQuerySet(models.QuerySet["Incident"]):
    """Reusable incident filters."""

    def for_org(self, organization: Organization) -> "IncidentQuerySet":
        """Incidents of one organization (measured ones through their endpoint)."""
        return self.filter(organization=organization)

    def visible_to(self, user: User) -> "IncidentQuerySet":
        """Measured incidents of endpoints in the projects the user can see, and the
        organization's declared ones (announcements every member may read).

        Always bounded by the organization's own id (an incident carries its endpoint's
        organization), so PostgreSQL reads the tenant's incidents through
        `incident_org_idx` / `incident_org_open_idx`: filtered only through their
        endpoints' projects, it joined every organization's incidents to their endpoints
        (a sequential scan of both; 7x the buffers once another organization had 10,000
        endpoints, bench/README.md, load). Owners and admins see every project, so their
        filter is the organization alone (no project list, no join).
        """
        mine = self.filter(organization_id=user.organization_id)
        if user.is_manager:
            return mine
        return mine.filter(
            Q(endpoint__project_id__in=visible_project_ids(user)) | Q(endpoint__isnull=True)
        )

    def open(self) -> "IncidentQuerySet":
        """Incidents not resolved yet (`incident_org_open_idx` holds them by organization)."""
        return self.filter(resolved_at__isnull=True)


class IncidentKind(models.TextChoices):
    """Measured by the check pipeline, or declared by a person."""

    AUTOMATIC = "automatic", "Automatic"
    MANUAL = "manual", "Manual"


class IncidentImpact(models.TextChoices):
    """What a declared incident does to its components (Atlassian Statuspage's words)."""

    DEGRADED_PERFORMANCE = "degraded_performance", "Degraded performance"
    PARTIAL_OUTAGE = "partial_outage", "Partial outage"
    MAJOR_OUTAGE = "major_outage", "Major outage"


class IncidentState(models.TextChoices):
    """Where the people working on an incident say it stands."""

    INVESTIGATING = "investigating", "Investigating"
    IDENTIFIED = "identified", "Identified"
    MONITORING = "monitoring", "Monitoring"
    RESOLVED = "resolved", "Resolved"


class AckVia(models.TextChoices):
    """How an incident was acknowledged."""

    NONE = "", "Not acknowledged"
    API = "api", "API"
    PAGE = "page", "Incident page"
    LINK = "link", "Link in a notification"


class Incident(models.Model):
    """An outage. Automatic ones run from the first of `failure_threshold` failed checks in
    a row to the first of `recovery_threshold` successful ones, on one endpoint; manual ones
    are declared by a person for any endpoints and closed by a `resolved` update."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="incidents"
    )
    kind = models.CharField(
        max_length=10, choices=IncidentKind.choices, default=IncidentKind.AUTOMATIC
    )
    # The measured endpoint (automatic incidents); null for declared ones.
    # No index of its own: `incident_endpoint_span_idx` (endpoint, started_at) serves every
    # lookup by endpoint, and uptime reads prefer it to a plain one.
    endpoint = models.ForeignKey(
        Endpoint,
        on_delete=models.CASCADE,
        related_name="incidents",
        null=True,
        blank=True,
        db_index=False,
    )
    # The components a declared incident names (automatic ones name `endpoint` only).
    endpoints = models.ManyToManyField(Endpoint, related_name="declared_incidents", blank=True)
    title = models.CharField(max_length=200, blank=True)
    impact = models.CharField(
        max_length=24, choices=IncidentImpact.choices, default=IncidentImpact.MAJOR_OUTAGE
    )
    state = models.CharField(
        max_length=16, choices=IncidentState.choices, default=IncidentState.INVESTIGATING
    )
    # Shown on status pages (title, state, updates; never the cause).
    public = models.BooleanField(default=True)
    started_at = models.DateTimeField()
    resolved_at = models.DateTimeField(null=True, blank=True)
    cause = models.CharField(
        max_length=500, blank=True, help_text="The first failed check's error."
    )
    updated_at = models.DateTimeField(default=timezone.now)
    # Someone looked: escalation and reminders stop (`monitoring.incidents.incident_acknowledge`).
    acknowledged_at = models.DateTimeField(null=True, blank=True)
    acknowledged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    acknowledged_via = models.CharField(
        max_length=8, choices=AckVia.choices, blank=True, default=""
    )

    objects = IncidentQuerySet.as_manager()

    class Meta:
        ordering = ["-started_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["endpoint"],
                condition=Q(resolved_at__isnull=True),
                name="incident_one_open_per_endpoint",
            ),
            models.CheckConstraint(
                condition=Q(kind="manual") | Q(endpoint__isnull=False),
                name="incident_automatic_has_endpoint",
            ),
        ]
        indexes = [
            # Including `resolved_at`: uptime reads an endpoint's incidents over a window
            # from the index alone on PostgreSQL.
            models.Index(
                fields=["endpoint", "started_at"],
                name="incident_endpoint_span_idx",
                include=["resolved_at"],
            ),
            models.Index(fields=["organization", "started_at"], name="incident_org_idx"),
            # An organization's open incidents, newest first (overview, `?state=open`):
            # read without touching other organizations' open incidents or its own
            # resolved ones.
            models.Index(
                fields=["organization", "-started_at"],
                condition=Q(resolved_at__isnull=True),
                name="incident_org_open_idx",
            ),
            # The incident list's order within an organization (open first, newest first).
            models.Index(
                F("organization"),
                OPEN_FIRST,
                F("started_at").desc(),
                F("id").desc(),
                name="incident_org_open_first_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.title or self.endpoint_id} since {self.started_at:%Y-%m-%d %H:%M:%S}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Give a measured incident its endpoint's organization when not given."""
        if self.organization_id is None and self.endpoint is not None:
            self.organization_id = self.endpoint.project.organization_id
        super().save(*args, **kwargs)

    @property
    def duration_seconds(self) -> float | None:
        """How long it lasted; None while open."""
        if self.resolved_at is None:
            return None
        return (self.resolved_at - self.started_at).total_seconds()

    @property
    def measured_endpoint_id(self) -> uuid.UUID:
        """The endpoint of an automatic incident, which always has one (a constraint)."""
        if self.endpoint_id is None:
            raise ValueError(f"incident {self.pk} is declared, not measured")
        return self.endpoint_id

    @property
    def measured_endpoint(self) -> Endpoint:
        """The endpoint of an automatic incident, loaded."""
        if self.endpoint is None:
            raise ValueError(f"incident {self.pk} is declared, not measured")
        return self.endpoint


class IncidentUpdate(models.Model):
    """A public word on an incident: its state then and a Markdown message, kept with the
    sanitised HTML rendered from it at write time (`monitoring.incident_text`)."""

    id = models.UUIDField(primary_key=True, default=time_ordered_uuid, editable=False)
    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="updates")
    state = models.CharField(max_length=16, choices=IncidentState.choices)
    message = models.TextField(max_length=10_000, blank=True)
    message_html = models.TextField(blank=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    notify_subscribers = models.BooleanField(default=True)
    # Set once status-page subscribers' mails for it are queued (claimed by one fan-out).
    subscribers_notified_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Set once notification channels' `incident.updated` deliveries for it are written
    # (claimed by one `alerts` loop: the layer above reads this outbox).
    channels_notified_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["incident", "created_at"], name="incident_update_idx"),
            models.Index(
                fields=["created_at"],
                name="incident_update_fanout_idx",
                condition=Q(notify_subscribers=True, subscribers_notified_at__isnull=True),
            ),
            models.Index(
                fields=["created_at"],
                name="incident_update_channels_idx",
                condition=Q(channels_notified_at__isnull=True),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.incident_id} {self.state} at {self.created_at:%Y-%m-%d %H:%M:%S}"


class IncidentNote(models.Model):
    """An internal note on an incident: for the team, never on a public route."""

    id = models.UUIDField(primary_key=True, default=time_ordered_uuid, editable=False)
    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="notes")
    text = models.TextField(max_length=10_000)
    created_at = models.DateTimeField(default=timezone.now)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"note on {self.incident_id} at {self.created_at:%Y-%m-%d %H:%M:%S}"


class ActivityKind(models.TextChoices):
    """What an incident's timeline tells besides its updates and notes."""

    ACKNOWLEDGED = "acknowledged", "Acknowledged"
    ESCALATED = "escalated", "Escalation step sent"
    REMINDED = "reminded", "Reminder sent"
    DELIVERED = "delivered", "Notification delivered"
    DELIVERY_FAILED = "delivery_failed", "Notification failed"


class IncidentActivity(models.Model):
    """One line of an incident's timeline written by the machinery: an acknowledgement, an
    escalation step or reminder sent, a notification's outcome. Layers above `monitoring`
    (`alerts`) write these rows; the incident's readers merge them with its updates and
    notes. `text` is for people and holds no secret (channel names, never their URLs).

    An acknowledgement row is also an outbox: `announced_at` is set once its
    `incident.acknowledged` deliveries are written.
    """

    id = models.UUIDField(primary_key=True, default=time_ordered_uuid, editable=False)
    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="activities")
    kind = models.CharField(max_length=16, choices=ActivityKind.choices)
    at = models.DateTimeField(default=timezone.now)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    text = models.CharField(max_length=500, blank=True)
    detail = models.JSONField(default=dict, blank=True)
    announced_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["at", "id"]
        verbose_name_plural = "incident activities"
        indexes = [
            models.Index(fields=["incident", "at"], name="incident_activity_idx"),
            models.Index(
                fields=["at"],
                name="incident_activity_announce_idx",
                condition=Q(kind="acknowledged", announced_at__isnull=True),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} on {self.incident_id} at {self.at:%Y-%m-%d %H:%M:%S}"
