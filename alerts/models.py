"""Notification channels, their deliveries and attempts, and maintenance windows."""

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.db import models
from django.db.models import Q
from django.utils import timezone

from accounts.models import Organization, Project, User
from alerts import recurrence
from healthmon.encryption import EncryptedJSONField, EncryptedTextField, SecretsQuerySet
from monitoring.models import Endpoint, Incident, visible_project_ids

WEEK = timedelta(days=7)


class ChannelKind(models.TextChoices):
    """Where a channel sends: mail, or a URL that takes a JSON POST."""

    EMAIL = "email", "Email"
    WEBHOOK = "webhook", "Webhook (signed JSON)"
    SLACK = "slack", "Slack incoming webhook"
    TEAMS = "teams", "Microsoft Teams webhook"
    DISCORD = "discord", "Discord webhook"
    # Any of Apprise's services (Telegram, ntfy, PagerDuty, Matrix, ...): `config.url`.
    APPRISE = "apprise", "Apprise URL (100+ services)"


# Addresses an email channel may list.
MAX_ADDRESSES = 20
URL_KINDS = frozenset(
    {
        ChannelKind.WEBHOOK,
        ChannelKind.SLACK,
        ChannelKind.TEAMS,
        ChannelKind.DISCORD,
        ChannelKind.APPRISE,
    }
)


class ScopedQuerySet(SecretsQuerySet):
    """Filters shared by channels and windows: both belong to an organization and may be
    narrowed to some of its projects and endpoints."""

    def for_org(self, organization: Organization) -> "ScopedQuerySet":
        """Rows of one organization."""
        return self.filter(organization=organization)

    def visible_to(self, user: User) -> "ScopedQuerySet":
        """Managers see all of their organization's; members those for the whole
        organization or touching a project they can see."""
        rows = self.for_org(user.organization)
        if user.is_manager:
            return rows
        projects = visible_project_ids(user)
        whole = Q(projects__isnull=True, endpoints__isnull=True)
        touching = Q(projects__in=projects) | Q(endpoints__project_id__in=projects)
        ids = rows.filter(whole | touching).values("pk")
        return rows.filter(pk__in=ids)


ScopeIds = tuple[set[uuid.UUID], set[uuid.UUID]]


class Scoped(models.Model):
    """What channels and windows share: an organization, and the projects and endpoints
    they are narrowed to (none of either: the whole organization).

    `scope_ids` (project ids, endpoint ids) is set by `load_scopes`, for many rows at once.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    projects = models.ManyToManyField(Project, blank=True, related_name="+")
    endpoints = models.ManyToManyField(Endpoint, blank=True, related_name="+")
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    scope_ids: ScopeIds

    class Meta:
        abstract = True

    def covers(self, endpoint: Endpoint) -> bool:
        """Whether it applies to an endpoint (by `scope_ids`; none covers the whole
        organization)."""
        projects, endpoints = self.scope_ids
        if not projects and not endpoints:
            return True
        return endpoint.project_id in projects or endpoint.pk in endpoints


def scopes_of(model: type[Scoped], ids: list[uuid.UUID]) -> dict[uuid.UUID, ScopeIds]:
    """(project ids, endpoint ids) of each channel or window: two queries on the link tables,
    which load neither projects nor endpoints (whose targets would be decrypted)."""
    found: dict[uuid.UUID, ScopeIds] = {pk: (set(), set()) for pk in ids}
    owner = f"{model._meta.model_name}_id"
    for index, name in enumerate(("project_id", "endpoint_id")):
        through: Any = getattr(model, name.removesuffix("_id") + "s").through
        for pk, other in through.objects.filter(**{f"{owner}__in": ids}).values_list(owner, name):
            found[pk][index].add(other)
    return found


def load_scopes(rows: Sequence[Scoped]) -> None:
    """Set `scope_ids` on channels or windows (of one model), in two queries for all."""
    if rows:
        found = scopes_of(type(rows[0]), [row.pk for row in rows])
        for row in rows:
            row.scope_ids = found[row.pk]


class NotificationEvent(models.TextChoices):
    """What a notification tells."""

    OPENED = "incident.opened", "Incident opened"
    ACKNOWLEDGED = "incident.acknowledged", "Incident acknowledged"
    UPDATED = "incident.updated", "Incident updated"
    RESOLVED = "incident.resolved", "Incident resolved"
    # An endpoint slower than its `config.degraded_above_ms`, and back under it.
    DEGRADED = "endpoint.degraded", "Endpoint degraded"
    RECOVERED = "endpoint.recovered", "Endpoint recovered (no longer degraded)"
    CERTIFICATE_EXPIRING = "certificate.expiring", "Certificate expiring"
    HEARTBEAT_LATE = "heartbeat.late", "Heartbeat late"
    MAINTENANCE_STARTED = "maintenance.started", "Maintenance started"
    MAINTENANCE_ENDED = "maintenance.ended", "Maintenance ended"
    # Sent by escalation policies to their steps' channels, whatever events those choose.
    ESCALATED = "incident.escalated", "Incident escalated (policy step or reminder)"
    TEST = "test", "Test"


# The events a channel may choose (all of them by default).
CHANNEL_EVENTS = [
    e.value
    for e in NotificationEvent
    if e not in (NotificationEvent.ESCALATED, NotificationEvent.TEST)
]


def all_channel_events() -> list[str]:
    """A new channel's events: every one it may choose."""
    return list(CHANNEL_EVENTS)


class NotificationChannel(Scoped):
    """A destination for incident notifications.

    `config` is encrypted at rest: webhook URLs of Slack, Teams and Discord are
    credentials (anyone holding one can post), and so may a generic webhook's be.
    `config_masked` is its displayable form. `secret` signs generic webhooks (HMAC-SHA256);
    it is shown once, when the channel is created.
    """

    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=16, choices=ChannelKind.choices)
    config = EncryptedJSONField(default=dict)
    config_masked = models.JSONField(default=dict, editable=False)
    secret = EncryptedTextField(blank=True, editable=False)
    enabled = models.BooleanField(default=True)
    # The events it is sent (`CHANNEL_EVENTS`); escalation steps reach it whatever these are.
    events = models.JSONField(default=all_channel_events, blank=True)
    # Deliveries that gave up in a row; at NOTIFY_FLAG_AFTER the channel is flagged as
    # failing, and its deliveries get one attempt each until one succeeds.
    consecutive_failures = models.PositiveIntegerField(default=0, editable=False)
    failing_since = models.DateTimeField(null=True, blank=True, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = ScopedQuerySet.as_manager()

    class Meta:
        db_table = "monitoring_notificationchannel"  # its table from before the move
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["organization", "created_at"], name="channel_org_idx")]

    def __str__(self) -> str:
        return self.name

    def hears(self, event: str) -> bool:
        """Whether it chose the event (escalation steps and tests ask no such question)."""
        return event in (self.events or ())


class Recurrence(models.TextChoices):
    """How a maintenance window repeats ("" = once)."""

    ONCE = "", "Once"
    WEEKLY = "weekly", "Weekly"


class MaintenanceWindow(Scoped):
    """Planned work: checks go on, incident notifications are held back, and downtime
    inside the window counts in no uptime or SLA figure. A recurring window repeats by its
    RFC 5545 `rrule`, read in `timezone` from `starts_at`'s wall-clock time, each occurrence
    as long (in wall-clock time) as the first, `starts_at` to `ends_at`. Its rules are
    `alerts.validation.maintenance_window`'s. `recurrence` is the old column, kept in step
    ("weekly" for exactly `FREQ=WEEKLY`) and read by nothing."""

    name = models.CharField(max_length=200, blank=True)
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    recurrence = models.CharField(
        max_length=8, choices=Recurrence.choices, default=Recurrence.ONCE, blank=True
    )
    # RFC 5545 recurrence rule ("" = once), read in `timezone` from `starts_at`'s wall time.
    rrule = models.CharField(max_length=500, blank=True, default="")
    timezone = models.CharField(max_length=64, default="UTC")

    objects = ScopedQuerySet.as_manager()

    class Meta:
        db_table = "monitoring_maintenancewindow"  # its table from before the move
        ordering = ["starts_at", "id"]
        indexes = [models.Index(fields=["organization", "ends_at"], name="maintenance_org_idx")]
        constraints = [
            models.CheckConstraint(
                condition=Q(ends_at__gt=models.F("starts_at")), name="maintenance_ends_after_start"
            ),
        ]

    def __str__(self) -> str:
        return self.name or f"{self.starts_at:%Y-%m-%d %H:%M} to {self.ends_at:%Y-%m-%d %H:%M}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Save; a row written the old way (`recurrence="weekly"`, no rule) gets the rule
        `FREQ=WEEKLY`, as the migration gave the rows it found."""
        if self.recurrence == Recurrence.WEEKLY and not self.rrule:
            self.rrule = recurrence.WEEKLY
            if kwargs.get("update_fields") is not None:
                kwargs["update_fields"] = {*kwargs["update_fields"], "rrule"}
        super().save(*args, **kwargs)

    def occurrences(self, start: datetime, end: datetime) -> list[tuple[datetime, datetime]]:
        """Its occurrences that overlap [start, end), unclipped, in time order (a rule's
        expanded in its time zone by `alerts.recurrence`)."""
        if not self.rrule:
            first = self.starts_at if self.starts_at < end and self.ends_at > start else None
            return [] if first is None else [(self.starts_at, self.ends_at)]
        return recurrence.expand(
            rule=self.rrule,
            zone_name=self.timezone,
            starts_at=self.starts_at,
            ends_at=self.ends_at,
            start=start,
            end=end,
        )

    def next_start(self, now: datetime) -> datetime | None:
        """The start of its next occurrence at or after now, if any."""
        if self.starts_at >= now:
            return self.starts_at
        if not self.rrule:
            return None
        return recurrence.next_start(
            rule=self.rrule, zone_name=self.timezone, starts_at=self.starts_at, now=now
        )

    def active_at(self, moment: datetime) -> bool:
        """Whether an occurrence covers a moment."""
        return bool(self.occurrences(moment, moment + timedelta(microseconds=1)))


def may_overlap(start: datetime) -> Q:
    """Windows that may have an occurrence ending after `start`: recurring ones (which
    may have started long before), and one-off ones ending after it."""
    return ~Q(rrule="") | Q(ends_at__gt=start)


class DeliveryStatus(models.TextChoices):
    """Where one notification to one channel stands."""

    PENDING = "pending", "Pending (an attempt is due or running)"
    DELIVERED = "delivered", "Delivered"
    FAILED = "failed", "Failed (gave up)"
    SUPPRESSED = "suppressed", "Suppressed (maintenance)"


class DeliveryQuerySet(models.QuerySet["Delivery"]):
    """Reusable delivery filters."""

    def due(self, now: datetime) -> "DeliveryQuerySet":
        """Pending deliveries whose next attempt is due: neither waiting out a back-off nor
        held while their task is queued or running."""
        return self.filter(status=DeliveryStatus.PENDING, next_attempt_at__lte=now)

    def held(self, now: datetime) -> "DeliveryQuerySet":
        """Openings maintenance held back that are due a look: is the endpoint out of its
        maintenance, and the incident still open?"""
        return self.filter(
            status=DeliveryStatus.SUPPRESSED,
            event=NotificationEvent.OPENED,
            next_attempt_at__lte=now,
        )

    def visible_to(self, user: User) -> "DeliveryQuerySet":
        """All for managers; for a member, tests and those about incidents in its projects
        (an organization-wide channel also carries the other projects')."""
        if user.is_manager:
            return self
        projects = visible_project_ids(user)
        mine = Q(incident__endpoint__project_id__in=projects) | Q(endpoint__project_id__in=projects)
        return self.filter(Q(incident__isnull=True, endpoint__isnull=True) | mine)


class Delivery(models.Model):
    """One event for one channel: the outbox row, written in the transaction that opens or
    resolves the incident, so that no notification is lost between the two.

    `event_id` is the idempotency key receivers see; it is derived from the incident and
    the event, so it is the same on every attempt and for every channel.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    channel = models.ForeignKey(
        NotificationChannel, on_delete=models.CASCADE, related_name="deliveries"
    )
    event = models.CharField(max_length=32, choices=NotificationEvent.choices)
    event_id = models.UUIDField()
    incident = models.ForeignKey(
        Incident, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    # The endpoint of an event about an endpoint rather than an incident (`endpoint.*`,
    # a certificate expiring).
    endpoint = models.ForeignKey(
        Endpoint, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    occurred_at = models.DateTimeField()
    payload = models.JSONField(default=dict, help_text="The event as sent (no secrets).")
    status = models.CharField(
        max_length=16, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING
    )
    attempts = models.PositiveSmallIntegerField(default=0)
    # When the sweep may send it: the end of its back-off, or, while its task is queued or
    # running, the end of that hold (a task the broker lost is sent again then). On an
    # opening held back by maintenance: when to look again whether it can be sent.
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    delivered_at = models.DateTimeField(null=True, blank=True)

    objects = DeliveryQuerySet.as_manager()

    class Meta:
        db_table = "monitoring_delivery"  # its table from before the move
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "deliveries"
        constraints = [
            models.UniqueConstraint(fields=["channel", "event_id"], name="delivery_once_per_event"),
        ]
        indexes = [
            models.Index(fields=["channel", "created_at"], name="delivery_channel_idx"),
            models.Index(
                fields=["next_attempt_at"],
                name="delivery_due_idx",
                condition=Q(status="pending"),
            ),
            models.Index(
                fields=["next_attempt_at"],
                name="delivery_held_idx",
                condition=Q(status="suppressed", next_attempt_at__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event} → {self.channel_id} ({self.status})"


class DeliveryAttempt(models.Model):
    """One try at sending a delivery, with what came back."""

    id = models.BigAutoField(primary_key=True)
    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="tries")
    attempted_at = models.DateTimeField()
    ok = models.BooleanField()
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True)
    duration_ms = models.FloatField()

    class Meta:
        db_table = "monitoring_deliveryattempt"  # its table from before the move
        ordering = ["attempted_at", "id"]

    def __str__(self) -> str:
        return f"{self.delivery_id} at {self.attempted_at:%Y-%m-%d %H:%M:%S}"


class EscalationPolicy(Scoped):
    """Who is told, and when, while an incident stays open and unacknowledged: ordered
    steps, each a delay from the opening and the channels it reaches, then reminders
    re-sending the last step every `repeat_every_minutes`. Covers its projects and
    endpoints (none: the whole organization); an incident follows the most specific
    policy covering its endpoint."""

    name = models.CharField(max_length=200)
    repeat_every_minutes = models.PositiveIntegerField(null=True, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = ScopedQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "id"]
        verbose_name_plural = "escalation policies"
        indexes = [models.Index(fields=["organization", "created_at"], name="policy_org_idx")]

    def __str__(self) -> str:
        return self.name


class EscalationStep(models.Model):
    """One step of a policy: `after_minutes` from the incident's opening, to `channels`."""

    id = models.BigAutoField(primary_key=True)
    policy = models.ForeignKey(EscalationPolicy, on_delete=models.CASCADE, related_name="steps")
    position = models.PositiveSmallIntegerField()
    after_minutes = models.PositiveIntegerField()
    channels = models.ManyToManyField(NotificationChannel, related_name="+")

    class Meta:
        ordering = ["policy", "position"]
        constraints = [
            models.UniqueConstraint(fields=["policy", "position"], name="step_position_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.policy_id} step {self.position + 1} after {self.after_minutes} min"


class EscalationQuerySet(models.QuerySet["Escalation"]):
    """Reusable escalation filters."""

    def due(self, now: datetime) -> "EscalationQuerySet":
        """Escalations whose next step or reminder is due."""
        return self.filter(next_escalation_at__lte=now)


class Escalation(models.Model):
    """Where one incident stands in its policy: the next step to send (or, past the last,
    the reminders sent) and when. `next_escalation_at` is the deadline column the beat
    loop claims by (null: nothing more to send: acknowledged, resolved, or done)."""

    incident = models.OneToOneField(
        Incident, on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    policy = models.ForeignKey(
        EscalationPolicy, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    next_step = models.PositiveSmallIntegerField(default=0)
    reminders_sent = models.PositiveIntegerField(default=0)
    next_escalation_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    objects = EscalationQuerySet.as_manager()

    class Meta:
        indexes = [
            models.Index(
                fields=["next_escalation_at"],
                name="escalation_due_idx",
                condition=Q(next_escalation_at__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"escalation of {self.incident_id} at step {self.next_step}"
