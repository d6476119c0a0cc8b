"""Request parsing and response shapes of the alerts API: notification channels, their
deliveries, and maintenance windows."""

from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from accounts.api.serializers import NameField, ProjectIdsField
from alerts import validation
from alerts.models import (
    CHANNEL_EVENTS,
    MAX_ADDRESSES,
    ChannelKind,
    Delivery,
    DeliveryAttempt,
    DeliveryStatus,
    MaintenanceWindow,
    NotificationChannel,
    Recurrence,
    Scoped,
    ScopeIds,
    load_scopes,
)
from alerts.recurrence import WEEKLY as WEEKLY_RULE
from healthmon.api.errors import field_errors
from healthmon.api.serializers import AllErrorsMixin
from healthmon.errors import InvalidInput
from monitoring.access import access_endpoints
from monitoring.models import Endpoint
from monitoring.targets import MAX_TARGET_LENGTH

MAX_SCOPE_IDS = 500

# --- scope: the projects and endpoints a channel or window is narrowed to ---------------------


def _scope_ids(instance: Scoped, index: int) -> list[str]:
    """Project (0) or endpoint (1) ids of the scope `ScopedSerializer` loaded, as strings."""
    scope: ScopeIds = getattr(instance, "scope_ids", (set(), set()))
    return sorted(str(pk) for pk in scope[index])


class ScopedListSerializer(serializers.ListSerializer[Any]):
    """A page of channels or windows, their scopes read in two queries for the whole page."""

    def to_representation(self, data: Any) -> list[Any]:
        """Load the page's scopes, then render each row."""
        rows = list(data.all() if hasattr(data, "all") else data)
        load_scopes(rows)
        return [self.child.to_representation(row) for row in rows]  # type: ignore[union-attr]


class ProjectsField(ProjectIdsField):
    """Project ids; an id the caller cannot see is a 400. Empty: the whole organization."""

    def get_attribute(self, instance: Scoped) -> list[str]:
        """The ids of the scope, as strings."""
        return _scope_ids(instance, 0)

    def to_representation(self, data: Any) -> list[str]:
        """Already strings."""
        return list(data)


class EndpointsField(serializers.ListField):
    """Endpoint ids; an id the caller cannot see is a 400. Empty: the whole organization."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(child=serializers.UUIDField(), max_length=MAX_SCOPE_IDS, **kwargs)

    def to_internal_value(self, data: Any) -> list[Endpoint]:
        """Resolve the ids to endpoints the caller can see (the length checked first)."""
        if isinstance(data, list) and len(data) > MAX_SCOPE_IDS:
            self.fail("max_length", max_length=MAX_SCOPE_IDS)
        ids = super().to_internal_value(data)
        try:
            return access_endpoints(self.context["request"].user, ids)
        except InvalidInput as exc:
            raise field_errors(exc) from exc

    def get_attribute(self, instance: Scoped) -> list[str]:
        """The ids of the scope, as strings."""
        return _scope_ids(instance, 1)

    def to_representation(self, data: Any) -> list[str]:
        """Already strings."""
        return list(data)


class StrictBooleanField(serializers.BooleanField):
    """JSON true or false only (DRF's also takes "yes", 1 and the like)."""

    def to_internal_value(self, data: Any) -> bool:
        """Refuse anything but a JSON boolean."""
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


class ScopedSerializer(AllErrorsMixin, serializers.ModelSerializer[Any]):
    """A channel or window with its `projects` and `endpoints`; alone, its scope is read
    fresh (two queries), in a list once for the page."""

    projects = ProjectsField(
        required=False, help_text="Project ids; empty (with `endpoints`): all projects."
    )
    endpoints = EndpointsField(
        required=False, help_text="Endpoint ids; empty (with `projects`): all endpoints."
    )

    def to_representation(self, instance: Any) -> dict[str, Any]:
        """Read the scope unless the list serializer did."""
        if not isinstance(self.parent, serializers.ListSerializer):
            load_scopes([instance])
        return dict(super().to_representation(instance))


# --- channel config, per kind -----------------------------------------------------------------


CONFIG_SCHEMA = {
    "type": "object",
    "description": (
        "`email`: `{addresses, to_members}`. `webhook`, `slack`, `teams`, `discord`: `{url}`, "
        "answered with its path and query as ****; send it back as answered to keep it."
    ),
    "properties": {
        "addresses": {
            "type": "array",
            "items": {
                "type": "string",
                "format": "email",
                "maxLength": validation.MAX_ADDRESS_LENGTH,
            },
            "maxItems": MAX_ADDRESSES,
        },
        "to_members": {
            "type": "boolean",
            "description": "Also mail the members who can see the endpoint's project.",
        },
        "url": {"type": "string", "maxLength": MAX_TARGET_LENGTH},
    },
    "additionalProperties": False,
}


@extend_schema_field(CONFIG_SCHEMA)
class ChannelConfigField(serializers.DictField):
    """The kind's options; read masked, without decrypting the stored config."""

    def get_attribute(self, instance: NotificationChannel) -> Any:
        """The masked form."""
        return instance.config_masked


EVENTS_SCHEMA = {
    "type": "array",
    "items": {"type": "string", "enum": CHANNEL_EVENTS},
    "description": "The events the channel is sent (default: all; empty: none but "
    "escalation steps and tests).",
}


@extend_schema_field(EVENTS_SCHEMA)
class ChannelEventsField(serializers.Field):
    """The events a channel chose: names from `CHANNEL_EVENTS` (an unknown one is a 400)."""

    def to_internal_value(self, data: Any) -> list[str]:
        """Check the list; without repeats, in `CHANNEL_EVENTS` order."""
        try:
            return validation.channel_events(data)
        except InvalidInput as exc:
            raise serializers.ValidationError(exc.errors["events"]) from exc

    def to_representation(self, value: Any) -> list[str]:
        """As stored."""
        return list(value or [])


# --- channels ---------------------------------------------------------------------------------


class NotificationChannelSerializer(ScopedSerializer):
    """A notification channel as the API shows and accepts it. `kind` is fixed at creation;
    the config is checked against it."""

    name = NameField()
    kind = serializers.ChoiceField(
        choices=ChannelKind.choices, help_text="Fixed once the channel exists."
    )
    config = ChannelConfigField()
    enabled = StrictBooleanField(default=True, help_text="A disabled channel sends nothing.")
    events = ChannelEventsField(required=False)
    failing = serializers.SerializerMethodField(
        help_text="Deliveries keep failing: each gets one attempt until one succeeds."
    )

    class Meta:
        model = NotificationChannel
        list_serializer_class = ScopedListSerializer
        fields = [
            "id",
            "name",
            "kind",
            "config",
            "projects",
            "endpoints",
            "enabled",
            "events",
            "created_at",
            "failing",
            "failing_since",
            "consecutive_failures",
            "updated_at",
        ]
        read_only_fields = [
            "id",
            "created_at",
            "failing",
            "failing_since",
            "consecutive_failures",
            "updated_at",
        ]

    def get_failing(self, channel: NotificationChannel) -> bool:
        """Flagged as failing."""
        return channel.failing_since is not None

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """The kind cannot change; the config must fit it (a masked URL sent back as it was
        answered keeps the stored one). Each rule runs when the fields it needs passed."""
        stored = self.instance
        errors: dict[str, list[str]] = {}
        if "config" not in attrs and stored is None and "config" not in self.failed:
            errors["config"] = ["This field is required."]
        if stored is not None:
            try:
                validation.channel_kind(attrs.pop("kind", stored.kind), stored=stored)
            except InvalidInput as exc:
                errors.update(exc.errors)
        kind = stored.kind if stored is not None else attrs.get("kind")
        if "config" in attrs and kind is not None:
            try:
                attrs["config"] = validation.channel_config(kind, attrs["config"], stored=stored)
            except InvalidInput as exc:
                errors.update(exc.nested("config").errors)
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


class NotificationChannelCreatedSerializer(NotificationChannelSerializer):
    """The creation answer: a webhook's signing secret is in it, and never again."""

    secret = serializers.CharField(
        required=False,
        help_text="`webhook` only: the key of `X-Healthmon-Signature`. Shown once: store it.",
    )

    class Meta(NotificationChannelSerializer.Meta):
        fields = [*NotificationChannelSerializer.Meta.fields, "secret"]

    def to_representation(self, instance: NotificationChannel) -> dict[str, Any]:
        """The channel, and its secret when it has one."""
        body = super().to_representation(instance)
        body.pop("secret", None)
        if instance.kind == ChannelKind.WEBHOOK:
            body["secret"] = instance.secret
        return body


class DeliveryAttemptSerializer(serializers.ModelSerializer[DeliveryAttempt]):
    """One try at sending: when, whether it worked, and what came back."""

    class Meta:
        model = DeliveryAttempt
        fields = ["attempted_at", "ok", "status_code", "error", "duration_ms"]
        read_only_fields = fields


class DeliverySerializer(serializers.ModelSerializer[Delivery]):
    """One event for one channel and its tries, oldest try first."""

    event_id = serializers.UUIDField(
        read_only=True, help_text="The idempotency key receivers see (the same on every try)."
    )
    tries = DeliveryAttemptSerializer(many=True, read_only=True)

    class Meta:
        model = Delivery
        fields = [
            "id",
            "event",
            "event_id",
            "incident",
            "occurred_at",
            "status",
            "attempts",
            "next_attempt_at",
            "last_error",
            "created_at",
            "delivered_at",
            "tries",
        ]
        read_only_fields = fields
        extra_kwargs = {
            "next_attempt_at": {
                "help_text": "Pending: when the next attempt is due. An opening suppressed "
                "by maintenance: when it is looked at again (sent then if the maintenance is "
                "over and the incident still open). Otherwise null."
            }
        }


# --- maintenance windows ----------------------------------------------------------------------


class AwareDateTimeField(serializers.DateTimeField):
    """An ISO 8601 time with its offset (a naive one is ambiguous: refused), kept in UTC."""

    default_error_messages = {
        "naive": "Give the time zone: Z or an offset such as +02:00.",
    }

    def enforce_timezone(self, value: datetime) -> datetime:
        """Refuse a naive time; move an aware one to UTC."""
        if timezone.is_naive(value):
            self.fail("naive")
        return super().enforce_timezone(value)


class RecurrenceField(serializers.ChoiceField):
    """`weekly` (`rrule: FREQ=WEEKLY`), or null: the old input, kept working. Answered
    `weekly` when the rule is exactly that, else null."""

    def __init__(self, **kwargs: Any) -> None:
        choices = [(Recurrence.WEEKLY.value, Recurrence.WEEKLY.label)]
        super().__init__(choices=choices, allow_null=True, **kwargs)

    def get_attribute(self, instance: MaintenanceWindow) -> Any:
        """Read from the rule (the old column is not read)."""
        return Recurrence.WEEKLY.value if instance.rrule == WEEKLY_RULE else None

    def to_representation(self, value: Any) -> Any:
        """A one-off window's empty recurrence is answered as null."""
        return str(value) if value else None


class MaintenanceWindowSerializer(ScopedSerializer):
    """A maintenance window: notifications held back, downtime not counted."""

    name = NameField(required=False, allow_blank=True, default="")
    starts_at = AwareDateTimeField(
        help_text="The first occurrence's start; a rule repeats its wall-clock time in `timezone`."
    )
    ends_at = AwareDateTimeField(
        help_text="After `starts_at`; each occurrence lasts as long (in wall-clock time), "
        "less than the rule's period (a weekly window: < 7 days)."
    )
    recurrence = RecurrenceField(
        default=None,
        help_text="Old input: `weekly` is `rrule: FREQ=WEEKLY`; answered `weekly` when the "
        "rule is exactly that, else null.",
    )
    rrule = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=500,
        help_text='RFC 5545 rule without DTSTART, e.g. "FREQ=MONTHLY;BYDAY=1SU"; HOURLY or '
        'coarser. "" (default): once.',
    )
    timezone = serializers.CharField(
        required=False,
        max_length=64,
        help_text="IANA zone the rule is read in (default UTC), e.g. Europe/Berlin.",
    )
    active = serializers.SerializerMethodField(help_text="An occurrence covers the present.")
    next_start = serializers.SerializerMethodField(
        help_text="The start of the next occurrence at or after now; null if none."
    )

    class Meta:
        model = MaintenanceWindow
        list_serializer_class = ScopedListSerializer
        fields = [
            "id",
            "name",
            "starts_at",
            "ends_at",
            "recurrence",
            "rrule",
            "timezone",
            "projects",
            "endpoints",
            "active",
            "next_start",
            "created_at",
        ]
        read_only_fields = ["id", "active", "next_start", "created_at"]

    def _now(self) -> datetime:
        now: datetime = self.context.get("now") or timezone.now()
        return now

    def get_active(self, window: MaintenanceWindow) -> bool:
        """Whether an occurrence covers now."""
        return window.active_at(self._now())

    @extend_schema_field(serializers.DateTimeField(allow_null=True))
    def get_next_start(self, window: MaintenanceWindow) -> str | None:
        """The next occurrence's start, ISO 8601 in UTC."""
        start = window.next_start(self._now())
        return None if start is None else serializers.DateTimeField().to_representation(start)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """It ends after it starts; its rule (or `recurrence`) and zone are valid, an
        occurrence shorter than the rule's period. A change is checked against the stored
        fields it leaves as they are; `attrs` then hold the rule as stored (`rrule`,
        `timezone`), not `recurrence`."""
        stored: MaintenanceWindow | None = self.instance
        recurrence = attrs.pop("recurrence", None) or Recurrence.ONCE
        if "rrule" in attrs:
            rule = attrs["rrule"]
        elif "recurrence" in self.initial_data and stored is not None:
            rule = ""  # the old input alone decides
        else:
            rule = stored.rrule if stored is not None else ""
        starts_at: datetime | None = attrs.get("starts_at", getattr(stored, "starts_at", None))
        ends_at: datetime | None = attrs.get("ends_at", getattr(stored, "ends_at", None))
        if self.failed & {"starts_at", "ends_at"} or starts_at is None or ends_at is None:
            # The times are refused on their own: judge the rule from a placeholder start.
            starts_at = starts_at or self._now()
            ends_at = starts_at + timedelta(seconds=1)
        zone = attrs.get("timezone", stored.timezone if stored is not None else "UTC")
        try:
            attrs["rrule"], attrs["timezone"] = validation.maintenance_window(
                starts_at=starts_at,
                ends_at=ends_at,
                recurrence=recurrence,
                rrule=rule,
                timezone=zone,
            )
        except InvalidInput as exc:
            raise field_errors(exc) from exc
        return attrs


class DeliveryQuerySerializer(serializers.Serializer[Any]):
    """`?status=` of the deliveries list (empty: any)."""

    status = serializers.ChoiceField(
        choices=DeliveryStatus.choices, required=False, allow_blank=True
    )
