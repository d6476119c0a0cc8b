"""Monitored endpoints: what to probe, how often, where it stands; checks, status changes, pings."""

import secrets
import time
import uuid
from datetime import datetime

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import connections, models, router
from django.db.models import Q
from django.utils import timezone

from accounts.models import Organization, Project, ProjectAccess, User
from healthmon.db import fetch_prepared
from healthmon.encryption import EncryptedJSONField, EncryptedTextField, SecretsQuerySet

MAX_INTERVAL_SECONDS = 86_400
# A heartbeat's period and grace may be long: a yearly job still pings.
MAX_HEARTBEAT_SECONDS = 365 * 86_400
MAX_TIMEOUT_SECONDS = 60
MAX_THRESHOLD = 10
# The spec's SLA targets (uptime %) and their tier labels.
SLA_TIERS = [(99.9, "Standard"), (99.95, "High"), (99.99, "Premium")]


def time_ordered_uuid() -> uuid.UUID:
    """A UUIDv7 (RFC 9562): millisecond time first, so new check rows land at the end of
    the index instead of at random pages of a table that grows by millions a day."""
    value = (time.time_ns() // 1_000_000) << 80 | secrets.randbits(80)
    value = (value & ~(0xF << 76)) | (0x7 << 76)  # version 7
    value = (value & ~(0x3 << 62)) | (0x2 << 62)  # RFC 4122 variant
    return uuid.UUID(int=value)


def time_ordered_uuid_floor(moment: datetime) -> uuid.UUID:
    """The smallest UUIDv7 of a moment's millisecond: ids below it were made before it."""
    return uuid.UUID(int=int(moment.timestamp() * 1000) << 80)


class EndpointType(models.TextChoices):
    """The probe kinds (and heartbeats, which are not probed); `custom` detects the protocol
    from the target."""

    HTTP = "http", "HTTP(S)"
    GRAPHQL = "graphql", "GraphQL"
    GRPC = "grpc", "gRPC"
    POSTGRESQL = "postgresql", "PostgreSQL"
    MYSQL = "mysql", "MySQL / MariaDB"
    REDIS = "redis", "Redis"
    ELASTICSEARCH = "elasticsearch", "Elasticsearch"
    WEBSOCKET = "websocket", "WebSocket"
    TCP = "tcp", "TCP port"
    SMTP = "smtp", "SMTP"
    ICMP = "icmp", "ICMP (ping)"
    DNS = "dns", "DNS"
    TLS = "tls", "TLS certificate"
    CUSTOM = "custom", "Custom (auto-detect)"
    HEARTBEAT = "heartbeat", "Heartbeat (the job pings us)"


class EndpointStatus(models.TextChoices):
    """Where an endpoint stands after its latest check."""

    UP = "up", "Up"
    DOWN = "down", "Down"
    DEGRADED = "degraded", "Degraded"
    PAUSED = "paused", "Paused"
    PENDING = "pending", "Pending (no check yet)"
    LATE = "late", "Late (ping overdue, within grace)"


def new_badge_key() -> str:
    """A random key for public badge URLs: 128 bits, URL-safe, revealing nothing."""
    return secrets.token_urlsafe(16)


def heartbeat_ping_url(ping_key: uuid.UUID) -> str:
    """The URL a heartbeat with this ping key is called at."""
    return f"{settings.WEB_BASE_URL}/ping/{ping_key}"


def _project_ids_sql(granted: bool) -> str:
    """The statement `Project.objects.visible_to(user)` runs for its ids: every project of
    the organization, or (`granted`) those of it the user was given access to."""
    project = Project._meta
    access = ProjectAccess._meta
    pk, org = project.pk.column, project.get_field("organization").column
    if not granted:
        return f'SELECT "{pk}" FROM "{project.db_table}" WHERE "{org}" = %s'  # noqa: S608
    on = access.get_field("project").column
    who = access.get_field("user").column
    return (
        f'SELECT p."{pk}" FROM "{project.db_table}" p '  # noqa: S608 - model names only
        f'JOIN "{access.db_table}" a ON a."{on}" = p."{pk}" WHERE p."{org}" = %s AND a."{who}" = %s'
    )


EVERY_PROJECT_SQL = _project_ids_sql(granted=False)
GRANTED_PROJECTS_SQL = _project_ids_sql(granted=True)


def visible_project_ids(user: User) -> list[uuid.UUID]:
    """The ids of the projects the user can see, read now (one small query).

    Given as a list rather than a subquery: PostgreSQL then estimates a tenant's endpoints
    from each project's own statistics. With a subquery it assumed the average project
    size, and once one organization had 10,000 endpoints it scanned every organization's
    endpoints to list a few dozen (bench/README.md, load).

    The rows of `Project.objects.visible_to(user)` read with a fixed statement, prepared
    once per connection: building that queryset cost ~0.5 ms of CPU per API request,
    reading the ids ~0.1 ms.
    """
    alias = router.db_for_read(Project)
    connection = connections[alias]
    key = Project._meta.pk
    params = [key.get_db_prep_value(user.organization_id, connection)]
    sql = EVERY_PROJECT_SQL
    if not user.is_manager:
        sql = GRANTED_PROJECTS_SQL
        params.append(User._meta.pk.get_db_prep_value(user.pk, connection))
    return [as_uuid(value) for (value,) in fetch_prepared(alias, sql, params)]


def as_uuid(value: object) -> uuid.UUID:
    """A UUID column's value as PostgreSQL (a UUID) or SQLite (32 hex digits) returns it."""
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))


class EndpointQuerySet(SecretsQuerySet["Endpoint"]):
    """Reusable endpoint filters."""

    def for_org(self, organization: Organization) -> "EndpointQuerySet":
        """Endpoints of one organization."""
        return self.filter(project__organization=organization)

    def visible_to(self, user: User) -> "EndpointQuerySet":
        """Endpoints in the projects the user can see."""
        return self.filter(project_id__in=visible_project_ids(user))

    def due(self, now: datetime) -> "EndpointQuerySet":
        """Enabled endpoints whose next check is due; heartbeats are never probed."""
        return self.filter(enabled=True, next_check_at__lte=now).exclude(
            type=EndpointType.HEARTBEAT
        )


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
        default=60, validators=[MaxValueValidator(MAX_HEARTBEAT_SECONDS)]
    )
    timeout_seconds = models.PositiveIntegerField(
        default=10, validators=[MaxValueValidator(MAX_TIMEOUT_SECONDS)]
    )
    config = EncryptedJSONField(default=dict)
    config_masked = models.JSONField(default=dict, editable=False)
    enabled = models.BooleanField(default=True)
    failure_threshold = models.PositiveSmallIntegerField(
        default=2,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_THRESHOLD)],
        help_text="Consecutive failed checks that open an incident.",
    )
    recovery_threshold = models.PositiveSmallIntegerField(
        default=1,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_THRESHOLD)],
        help_text="Consecutive successful checks that resolve it.",
    )
    sla_target = models.FloatField(
        choices=SLA_TIERS,
        default=99.9,
        help_text="The SLA tier the endpoint is held to (uptime %).",
    )
    status = models.CharField(
        max_length=16, choices=EndpointStatus.choices, default=EndpointStatus.PENDING
    )
    # The current run of equal outcomes: its length, start and (for failures) first error.
    streak_ok = models.BooleanField(null=True, editable=False)
    streak_length = models.PositiveIntegerField(default=0, editable=False)
    streak_started_at = models.DateTimeField(null=True, editable=False)
    streak_error = models.CharField(max_length=500, blank=True, editable=False)
    detected_type = models.CharField(
        max_length=16, choices=EndpointType.choices, blank=True, editable=False
    )
    # When what is watched last changed (created, retargeted, reconfigured, paused or
    # resumed): results of checks scheduled before it are stored but move nothing.
    watch_started_at = models.DateTimeField(null=True, editable=False)
    last_checked_at = models.DateTimeField(null=True, blank=True)
    # Where it is probed from: slugs of `Location`s; empty is the default location alone.
    # With more than one, each round's results are judged together against
    # `config.quorum` (`monitoring.locations`), and `last_round_at` is the slot of the
    # latest round judged: an older round's late result is stored but judges nothing.
    locations = models.JSONField(default=list, blank=True, db_default=[])
    last_round_at = models.DateTimeField(null=True, blank=True, editable=False)
    next_check_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)
    # Heartbeats only: the key of the ping URL, and the deadlines the last success or
    # failure ping set (`monitoring.heartbeats`): late after `late_after`, down after
    # `alert_after` (late_after + grace), flipped by the deadline loop.
    ping_key = models.UUIDField(null=True, blank=True, unique=True, editable=False)
    # Heartbeats only, optional: the name in `/ping/<project ping_key>/<slug>`. Null is "no
    # slug", which the unique constraint leaves out.
    slug = models.CharField(max_length=100, null=True, blank=True)  # noqa: DJ001
    late_after = models.DateTimeField(null=True, blank=True, editable=False)
    alert_after = models.DateTimeField(null=True, blank=True, editable=False)
    # The certificate of the latest check that completed a TLS handshake (`monitoring.checks`
    # writes it), and the tightest expiry threshold already announced for it: a new
    # certificate (another fingerprint) starts over.
    certificate_expires_at = models.DateTimeField(null=True, blank=True, editable=False)
    certificate_not_before = models.DateTimeField(null=True, blank=True, editable=False)
    certificate_issuer = models.CharField(
        max_length=500, blank=True, default="", db_default="", editable=False
    )
    certificate_subject = models.CharField(
        max_length=500, blank=True, default="", db_default="", editable=False
    )
    certificate_fingerprint = models.CharField(
        max_length=64, blank=True, default="", db_default="", editable=False
    )
    certificate_warned_within = models.DurationField(null=True, blank=True, editable=False)
    # The key of its public badges (`/badge/<badge_key>/...`): random, so it names nothing.
    badge_key = models.CharField(max_length=32, unique=True, default=new_badge_key, editable=False)

    objects = EndpointQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            # The dispatcher's claim: probed endpoints by due time. Heartbeats (never probed)
            # stay out, so the claim's range scan meets only rows it may take.
            models.Index(
                fields=["next_check_at"],
                name="endpoint_probe_due_idx",
                condition=Q(enabled=True) & ~Q(type="heartbeat"),
            ),
            models.Index(fields=["project", "created_at"], name="endpoint_project_idx"),
            # The deadline loop's queries: heartbeats by their next deadline.
            models.Index(
                fields=["late_after"],
                name="endpoint_late_idx",
                condition=Q(type="heartbeat", enabled=True),
            ),
            models.Index(
                fields=["alert_after"],
                name="endpoint_alert_idx",
                condition=Q(type="heartbeat", enabled=True),
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(timeout_seconds__gte=1)
                & Q(timeout_seconds__lt=models.F("interval_seconds")),
                name="endpoint_timeout_below_interval",
            ),
            models.UniqueConstraint(
                fields=["project", "slug"],
                name="endpoint_slug_unique_in_project",
                condition=Q(slug__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def ping_url(self) -> str | None:
        """The URL a heartbeat's job calls; None for probed endpoints."""
        return heartbeat_ping_url(self.ping_key) if self.ping_key is not None else None

    def move_to(self, status: str, at: datetime, reason: str) -> "StatusChange | None":
        """Move to a status; the record of the move, unsaved (None: no move)."""
        if self.status == status:
            return None
        change = StatusChange(
            endpoint=self,
            changed_at=at,
            from_status=self.status,
            to_status=status,
            reason=reason[:500],
        )
        self.status = status
        return change

    def clean(self) -> None:
        """The interval stays within bounds and the timeout below it (the admin form)."""
        if self.interval_seconds < settings.MIN_CHECK_INTERVAL:
            raise ValidationError(
                {"interval_seconds": f"At least {settings.MIN_CHECK_INTERVAL} seconds."}
            )
        if self.type != EndpointType.HEARTBEAT and self.interval_seconds > MAX_INTERVAL_SECONDS:
            raise ValidationError({"interval_seconds": f"At most {MAX_INTERVAL_SECONDS} seconds."})
        if not 1 <= self.timeout_seconds < self.interval_seconds:
            raise ValidationError(
                {"timeout_seconds": "At least 1 second and less than the interval."}
            )


class CheckResultQuerySet(models.QuerySet["CheckResult"]):
    """Reusable check filters."""

    def for_org(self, organization: Organization) -> "CheckResultQuerySet":
        """Checks of one organization's endpoints."""
        return self.filter(endpoint__project__organization=organization)


class CheckResult(models.Model):
    """One probe of one endpoint. `scheduled_for` names the slot it filled: a batch that
    is delivered twice finds its slots taken and stores nothing twice."""

    id = models.UUIDField(primary_key=True, default=time_ordered_uuid, editable=False)
    # No index of its own: `check_one_per_slot` and `check_endpoint_time_idx` lead with the
    # endpoint and serve every read by it (a deletion's too); a third entry per stored check
    # cost ingest database CPU for nothing (migration 0029).
    endpoint = models.ForeignKey(
        Endpoint, on_delete=models.CASCADE, related_name="checks", db_index=False
    )
    scheduled_for = models.DateTimeField()
    checked_at = models.DateTimeField()
    ok = models.BooleanField()
    # Null when nothing was timed: a heartbeat ping with no paired start, a missed deadline.
    response_time_ms = models.FloatField(null=True, blank=True)
    status_detail = models.CharField(max_length=200, blank=True)
    # `error` is one of the probe kind's fixed phrases (monitoring/probes/phrases.py);
    # `error_detail` what the driver or server said, masked. The database default lets
    # bulk loads that name no such column (COPY, INSERT ... SELECT) still insert.
    error = models.CharField(max_length=500, blank=True)
    error_detail = models.CharField(max_length=500, blank=True, default="", db_default="")
    # The slug of the location that probed it; empty: the default location (and every
    # check not probed from a place: heartbeats, checks stored before locations existed).
    location = models.CharField(max_length=40, blank=True, default="", db_default="")

    objects = CheckResultQuerySet.as_manager()

    class Meta:
        ordering = ["-checked_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["endpoint", "scheduled_for", "location"], name="check_one_per_slot"
            ),
        ]
        indexes = [
            # Time-range reads per endpoint (the checks list, analytics).
            models.Index(fields=["endpoint", "checked_at"], name="check_endpoint_time_idx"),
            # Top error causes read failed checks only: a small slice of the table.
            models.Index(
                fields=["endpoint", "checked_at"],
                name="check_failed_idx",
                condition=Q(ok=False),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.endpoint_id} at {self.checked_at:%Y-%m-%d %H:%M:%S}"


class StatusChange(models.Model):
    """An endpoint's move from one status to another, kept as history."""

    id = models.UUIDField(primary_key=True, default=time_ordered_uuid, editable=False)
    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="status_changes")
    changed_at = models.DateTimeField()
    from_status = models.CharField(max_length=16, choices=EndpointStatus.choices)
    to_status = models.CharField(max_length=16, choices=EndpointStatus.choices)
    reason = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["-changed_at", "-id"]
        indexes = [
            models.Index(fields=["endpoint", "changed_at"], name="status_endpoint_idx"),
            # Uptime reads when each endpoint was unwatched (paused or pending): a sliver of
            # its status history, read from the index alone on PostgreSQL.
            models.Index(
                fields=["endpoint", "changed_at"],
                name="status_unwatched_idx",
                condition=Q(to_status__in=(EndpointStatus.PAUSED, EndpointStatus.PENDING))
                | Q(from_status__in=(EndpointStatus.PAUSED, EndpointStatus.PENDING)),
                include=["from_status", "to_status", "id"],
            ),
        ]

    def __str__(self) -> str:
        return f"{self.endpoint_id}: {self.from_status} → {self.to_status}"


class Heartbeat(models.Model):
    """When a periodic process (the dispatcher) last finished a run, for /readyz.

    A database row rather than a cache key: every web process reads it whichever cache it
    has (the default cache is per process), and the dispatcher writes it once a tick.
    """

    name = models.CharField(max_length=50, primary_key=True)
    beat_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.name} at {self.beat_at:%Y-%m-%d %H:%M:%S}"

    @classmethod
    def beat(cls, name: str, at: datetime) -> None:
        """Record a run of `name` at `at` (an UPDATE; the row made on its first run)."""
        if not Heartbeat.objects.filter(name=name).update(beat_at=at):
            Heartbeat.objects.bulk_create([Heartbeat(name=name, beat_at=at)], ignore_conflicts=True)

    @classmethod
    def last(cls, name: str) -> datetime | None:
        """When `name` last ran, or None if never."""
        return Heartbeat.objects.filter(name=name).values_list("beat_at", flat=True).first()


class PingKind(models.TextChoices):
    """What a heartbeat's ping says."""

    SUCCESS = "success", "Success"
    START = "start", "Start"
    FAIL = "fail", "Failure"
    LOG = "log", "Log"


class Ping(models.Model):
    """One ping a heartbeat endpoint received; success and failure pings are checks too."""

    id = models.UUIDField(primary_key=True, default=time_ordered_uuid, editable=False)
    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="pings")
    kind = models.CharField(max_length=8, choices=PingKind.choices)
    exit_status = models.PositiveSmallIntegerField(null=True, blank=True)
    received_at = models.DateTimeField()
    duration_ms = models.FloatField(null=True, blank=True)
    rid = models.UUIDField(null=True, blank=True)
    client_ip = models.GenericIPAddressField(null=True, blank=True)
    method = models.CharField(max_length=8)
    user_agent = models.CharField(max_length=500, blank=True)
    body = models.TextField(blank=True)
    body_size = models.PositiveIntegerField(default=0)
    body_truncated = models.BooleanField(default=False)
    # Stored but not yet turned into a check and deadlines: a success ping of an `up`
    # heartbeat is stored at once and processed by the deadline loop a moment later
    # (`pipeline.heartbeats`), which flips no heartbeat that still has pending pings.
    pending = models.BooleanField(default=False)

    class Meta:
        ordering = ["-received_at", "-id"]
        indexes = [
            models.Index(fields=["endpoint", "received_at"], name="ping_endpoint_time_idx"),
            # The latest start, success or failure of a heartbeat: one index probe each.
            models.Index(fields=["endpoint", "kind", "received_at"], name="ping_endpoint_kind_idx"),
            models.Index(
                fields=["endpoint"], condition=models.Q(pending=True), name="ping_pending_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} of {self.endpoint_id} at {self.received_at:%Y-%m-%d %H:%M:%S}"
