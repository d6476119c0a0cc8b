"""Request parsing and response shapes of the endpoint API."""

from datetime import datetime
from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import empty
from rest_framework.utils import html

from accounts.api.serializers import NameField, VisibleProjectField
from healthmon.api.errors import field_errors
from healthmon.api.serializers import AllErrorsMixin, api_timestamp
from healthmon.errors import InvalidInput
from monitoring.locations import shown_slug
from monitoring.models import (
    SLA_TIERS,
    CheckResult,
    Endpoint,
    EndpointType,
    Location,
    Ping,
)
from monitoring.models.endpoints import heartbeat_ping_url
from monitoring.targets import MAX_TARGET_LENGTH
from monitoring.validation import (
    DEFAULT_INTERVAL,
    DEFAULT_TIMEOUT,
    MAX_NAME_LENGTH,
    endpoint_limits,
    endpoint_validate,
)
from monitoring.validation.locations import MAX_ENDPOINT_LOCATIONS

# The numeric fields beside their bounds (`endpoint_limits`), which `get_fields` adds.
NUMBERS: dict[str, dict[str, Any]] = {
    "interval_seconds": {
        "default": DEFAULT_INTERVAL,
        "help_text": (
            "Seconds between checks, from MIN_CHECK_INTERVAL (10 by default) to 1 day; for a "
            "heartbeat, the period between pings, from 60 s to 365 days."
        ),
    },
    "timeout_seconds": {
        "required": False,
        "help_text": (
            f"Seconds one check may take, below the interval. Omitted on creation: "
            f"{DEFAULT_TIMEOUT}, or interval_seconds - 1 when the interval is "
            f"{DEFAULT_TIMEOUT} or less. A value sent is never changed: one not below the "
            "interval is refused."
        ),
    },
    "failure_threshold": {
        "default": 2,
        "help_text": "Consecutive failed checks that open an incident (the endpoint goes down).",
    },
    "recovery_threshold": {
        "default": 1,
        "help_text": "Consecutive successful checks that resolve the incident.",
    },
}


class TargetField(serializers.CharField):
    """The target: read with its secrets masked, written in clear (or masked, to keep them)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(
            trim_whitespace=False,
            max_length=MAX_TARGET_LENGTH,
            help_text=(
                "A URL whose scheme fits the type, or host:port for custom. Passwords and "
                "secret query parameters are answered as ****; send **** back to keep them. "
                "Required, except for heartbeats, which refuse it (empty in answers)."
            ),
            required=False,
            **kwargs,
        )

    def get_attribute(self, instance: Endpoint) -> str:
        """The masked form, without decrypting the stored target."""
        return instance.target_masked

    def get_value(self, dictionary: Any) -> Any:
        """The value given; a page form's empty box is a blank target (refused as such), not
        a missing one, though the field is optional (heartbeats have none)."""
        value = super().get_value(dictionary)
        if value is empty and html.is_html_input(dictionary) and self.field_name in dictionary:
            return dictionary[self.field_name]
        return value


# Posted by a page form that drew the location boxes: none ticked then means no locations.
LOCATIONS_SHOWN = "locations-shown"


class LocationsField(serializers.ListField):
    """The slugs of the locations an endpoint is probed from."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(
            child=serializers.CharField(max_length=40),
            required=False,
            help_text=(
                f"Slugs of defined locations (`GET /locations`), each once, at most "
                f"{MAX_ENDPOINT_LOCATIONS}; empty (the default): the default location. "
                "Heartbeats take none. `config.quorum` says how many must fail."
            ),
            **kwargs,
        )

    def get_value(self, dictionary: Any) -> Any:
        """The value given; a page form's boxes all left unticked are an empty list."""
        value = super().get_value(dictionary)
        if value is empty and html.is_html_input(dictionary) and LOCATIONS_SHOWN in dictionary:
            return dictionary.getlist(self.field_name)
        return value


class ConfigField(serializers.JSONField):
    """Per-type options; secret values (authorization headers and the like) read masked."""

    def get_attribute(self, instance: Endpoint) -> Any:
        """The masked form, without decrypting the stored config."""
        return instance.config_masked


class BadgeUrlsSerializer(serializers.Serializer[Any]):
    """The public badges of a badge key, an endpoint's or a status page's (no login; the key
    is the only secret in them): each SVG for a README, each JSON for shields.io's endpoint
    badge."""

    status_svg = serializers.URLField(read_only=True)
    status_json = serializers.URLField(read_only=True)
    uptime_svg = serializers.URLField(
        read_only=True, help_text="`?period=24h|7d|30d|90d` (default 30d) may be added."
    )
    uptime_json = serializers.URLField(read_only=True)
    response_time_svg = serializers.URLField(read_only=True)
    response_time_json = serializers.URLField(read_only=True)


# Each badge's name in `badges` and the end of its URL.
_BADGES = tuple(
    (f"{kind.replace('-', '_')}_{fmt}", f"/{kind}.{fmt}")
    for kind in ("status", "uptime", "response-time")
    for fmt in ("svg", "json")
)


def badge_urls(badge_key: str) -> dict[str, str]:
    """The URLs of a badge key's badges (`/badge/<key>/...`, statuspages serves them)."""
    base = f"{settings.WEB_BASE_URL}/badge/{badge_key}"
    return {name: base + end for name, end in _BADGES}


class EndpointSerializer(AllErrorsMixin, serializers.ModelSerializer[Endpoint]):
    """An endpoint as the API shows and accepts it.

    Validation looks at the fields together: the target must fit the type, the config is
    checked against the type's options, and the timeout stays below the interval.
    """

    # Each field is parsed here; the rules across fields are the domain's
    # (`monitoring.validation.endpoint_validate`), which the endpoint page calls too. The
    # docstring above is the schema's description of the component: keep it for clients.

    project = VisibleProjectField()
    name = NameField(max_length=MAX_NAME_LENGTH)
    type = serializers.ChoiceField(choices=EndpointType.choices)
    target = TargetField()
    locations = LocationsField()
    config = ConfigField(required=False, help_text="Per-type options; defaults filled in.")
    sla_target = serializers.ChoiceField(
        choices=SLA_TIERS,
        default=99.9,  # type: ignore[arg-type]  # float choices: the stubs allow str and int
        help_text="SLA target (uptime %): 99.9 Standard, 99.95 High or 99.99 Premium.",
    )
    detected_type = serializers.CharField(
        read_only=True, help_text="For `custom`: the protocol found at the target, once checked."
    )
    slug = serializers.CharField(
        required=False,
        allow_null=True,
        trim_whitespace=False,
        help_text="Heartbeats, optional: `[a-z0-9_-]`, at most 100, unique in the project; the "
        "job may then call `/ping/<project ping_key>/<slug>` (same suffixes). Null removes it.",
    )
    certificate_expires_at = serializers.DateTimeField(
        read_only=True,
        allow_null=True,
        help_text="When the certificate of the latest TLS handshake expires; null before one.",
    )
    certificate_issuer = serializers.CharField(
        read_only=True, help_text="That certificate's issuer (RFC 4514); empty before one."
    )
    ping_url = serializers.SerializerMethodField(
        help_text="Heartbeats: the URL the job calls (`/start`, `/fail`, `/<exit status>`, "
        "`/log` appended as needed); null for other types."
    )
    badges = serializers.SerializerMethodField(
        help_text="Public badge URLs (SVG and shields.io JSON); `?label=` sets the label."
    )

    class Meta:
        model = Endpoint
        # The slug's uniqueness in its project is the domain's rule (`monitoring.slugs`), named
        # as a field error; DRF's generated unique-together validator would make it required.
        validators: list[Any] = []
        fields = [
            "id",
            "project",
            "name",
            "type",
            "target",
            "interval_seconds",
            "timeout_seconds",
            "locations",
            "config",
            "enabled",
            "failure_threshold",
            "recovery_threshold",
            "sla_target",
            "status",
            "detected_type",
            "slug",
            "ping_url",
            "badges",
            "certificate_expires_at",
            "certificate_issuer",
            "last_checked_at",
            "next_check_at",
            "created_at",
            "updated_at",
        ]
        read_only_fields = [
            "id",
            "status",
            "detected_type",
            "certificate_expires_at",
            "certificate_issuer",
            "last_checked_at",
            "next_check_at",
            "created_at",
            "updated_at",
        ]

    def to_representation(self, instance: Endpoint) -> dict[str, Any]:
        """The fields, built directly: DRF's generic path costs ~60 µs per endpoint.

        A test checks that the answer equals the generic path's, field for field.
        """
        return endpoint_representation({name: getattr(instance, name) for name in ROW_FIELDS})

    def get_ping_url(self, instance: Endpoint) -> str | None:
        """The heartbeat's ping URL; None for probed endpoints."""
        return instance.ping_url

    @extend_schema_field(BadgeUrlsSerializer)
    def get_badges(self, instance: Endpoint) -> dict[str, str]:
        """The endpoint's public badge URLs."""
        return badge_urls(instance.badge_key)

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        """The fields, the numbers bounded by `endpoint_limits()` as they are now (the
        interval's minimum is a setting)."""
        fields = super().get_fields()
        limits = endpoint_limits()
        for name, kwargs in NUMBERS.items():
            fields[name] = serializers.IntegerField(
                min_value=limits[name]["min"], max_value=limits[name]["max"], **kwargs
            )
        return fields

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """Check interval, timeout, target and config against each other and the type; the
        fields refused on their own are left out of the rules that need them."""
        try:
            return endpoint_validate(attrs, current=self.instance, failed=self.failed)
        except InvalidInput as exc:
            raise field_errors(exc) from exc


# The columns an endpoint's representation is made of: a list reads only these, as rows.
ROW_FIELDS = (
    "id",
    "project_id",
    "name",
    "type",
    "target_masked",
    "interval_seconds",
    "timeout_seconds",
    "locations",
    "config_masked",
    "enabled",
    "failure_threshold",
    "recovery_threshold",
    "sla_target",
    "status",
    "detected_type",
    "slug",
    "ping_key",
    "badge_key",
    "certificate_expires_at",
    "certificate_issuer",
    "last_checked_at",
    "next_check_at",
    "created_at",
    "updated_at",
)


def endpoint_representation(row: dict[str, Any]) -> dict[str, Any]:
    """An endpoint as the API shows it, from its `ROW_FIELDS` (a `.values()` row).

    A list builds no model instances: for a page of 50 that saves ~1 ms of CPU.
    """
    ping_key = row["ping_key"]
    return {
        "id": str(row["id"]),
        "project": str(row["project_id"]),
        "name": row["name"],
        "type": row["type"],
        "target": row["target_masked"],
        "interval_seconds": row["interval_seconds"],
        "timeout_seconds": row["timeout_seconds"],
        "locations": list(row["locations"] or []),
        "config": row["config_masked"],
        "enabled": row["enabled"],
        "failure_threshold": row["failure_threshold"],
        "recovery_threshold": row["recovery_threshold"],
        "sla_target": row["sla_target"],
        "status": row["status"],
        "detected_type": row["detected_type"],
        "slug": row["slug"],
        "ping_url": heartbeat_ping_url(ping_key) if ping_key is not None else None,
        "badges": badge_urls(row["badge_key"]),
        "certificate_expires_at": api_timestamp(row["certificate_expires_at"]),
        "certificate_issuer": row["certificate_issuer"],
        "last_checked_at": api_timestamp(row["last_checked_at"]),
        "next_check_at": api_timestamp(row["next_check_at"]),
        "created_at": api_timestamp(row["created_at"]),
        "updated_at": api_timestamp(row["updated_at"]),
    }


class CheckResultSerializer(serializers.ModelSerializer[CheckResult]):
    """One stored check: `error` is a short fixed phrase, `error_detail` what the driver or
    server said (secrets masked)."""

    def to_representation(self, instance: CheckResult) -> dict[str, Any]:
        """The fields, the location by its shown slug (stored empty for the default one)."""
        data = super().to_representation(instance)
        data["location"] = shown_slug(instance.location)
        return data

    class Meta:
        model = CheckResult
        fields = [
            "id",
            "checked_at",
            "location",
            "ok",
            "response_time_ms",
            "status_detail",
            "error",
            "error_detail",
        ]
        read_only_fields = fields
        extra_kwargs = {
            "location": {
                "help_text": "The slug of the location the check ran from (`GET /locations`)."
            },
            "response_time_ms": {
                "help_text": "How long the check took; for a heartbeat, the run's duration when "
                "a start ping was paired, else null."
            },
            "error": {
                "help_text": "Why the check failed, one of the probe kind's short fixed phrases "
                "(`connection refused`, `HTTP 503`, `authentication failed`); empty when ok."
            },
            "error_detail": {
                "help_text": "What the driver or server said about the failure, secrets masked "
                "as `****`, at most 500 characters; empty when ok or when there is nothing "
                "to add."
            },
        }


class LocationSerializer(serializers.ModelSerializer[Location]):
    """A place checks run from: its slug, name and liveness (never its workers' host names).

    `online` is computed when asked, from `last_seen_at`; `workers` counts the workers heard
    from within the same 60 s."""

    online = serializers.SerializerMethodField(
        help_text="A worker of it was heard from within the last 60 s."
    )
    workers = serializers.SerializerMethodField(
        help_text="How many of its workers were heard from within the last 60 s."
    )

    class Meta:
        model = Location
        fields = ["id", "slug", "name", "online", "last_seen_at", "workers"]
        read_only_fields = fields

    def get_online(self, instance: Location) -> bool:
        """Heard from within `OFFLINE_AFTER` of the request (the stored flag may lag)."""
        since: datetime = self.context["since"]
        return instance.last_seen_at is not None and instance.last_seen_at >= since

    def get_workers(self, instance: Location) -> int:
        """The live workers, counted by the view's query."""
        return int(getattr(instance, "live_workers", 0))


class PingSerializer(serializers.ModelSerializer[Ping]):
    """One ping a heartbeat received; `duration_ms` is the run's, when a start was paired."""

    class Meta:
        model = Ping
        fields = [
            "id",
            "kind",
            "exit_status",
            "received_at",
            "duration_ms",
            "rid",
            "client_ip",
            "method",
            "user_agent",
            "body_size",
            "body_truncated",
        ]
        read_only_fields = fields


class CheckNowSerializer(serializers.Serializer[Any]):
    """The answer to check-now: the slot queued."""

    endpoint = serializers.UUIDField()
    scheduled_for = serializers.DateTimeField()
