"""The query parameters every analytics route shares, validated into one `Query`."""

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from django.utils import timezone
from rest_framework import serializers

from analytics.reports import MAX_COMPARED
from analytics.selectors import bucket_for
from analytics.windows import BUCKETS, MAX_POINTS, MAX_RANGE, PERIODS
from healthmon.intervals import Window
from monitoring.locations import known_slugs, stored_slug
from monitoring.models import SLA_TIERS

EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
LATEST = datetime(2100, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Query:
    """A validated analytics query."""

    window: Window
    now: datetime
    bucket: str
    group_by: str
    endpoint: UUID | None
    project: UUID | None
    targets: tuple[float, ...]
    endpoints: tuple[UUID, ...]
    # A stored location slug ("" for the default location) with `location=`; else None.
    location: str | None = None


class _Time(serializers.DateTimeField):
    def to_internal_value(self, value: Any) -> datetime:
        parsed = super().to_internal_value(value)
        try:
            parsed = parsed.astimezone(UTC)
        except OverflowError as exc:
            raise serializers.ValidationError("Out of range.") from exc
        if not EARLIEST <= parsed < LATEST:
            raise serializers.ValidationError("Must be between 2000 and 2100.")
        return parsed


class _IdList(serializers.CharField):
    def to_internal_value(self, value: Any) -> tuple[UUID, ...]:  # type: ignore[override]
        ids = [part.strip() for part in str(super().to_internal_value(value)).split(",")]
        try:
            parsed = tuple(dict.fromkeys(UUID(part) for part in ids if part))
        except ValueError as exc:
            raise serializers.ValidationError("Comma-separated endpoint ids.") from exc
        if not 1 <= len(parsed) <= MAX_COMPARED:
            raise serializers.ValidationError(f"Between 1 and {MAX_COMPARED} endpoint ids.")
        return parsed


class QuerySerializer(serializers.Serializer[Any]):
    """`from`/`to` (ISO 8601, UTC) or `period`; `bucket`, `group_by`, `endpoint`, `project`,
    `target`, `endpoints`, `location`. Invalid or inverted ranges and ranges over 400 days
    are 400s; so are an unknown location and `location=` with group_by other than
    `location` (given alone, it means group_by=location)."""

    endpoint = serializers.UUIDField(required=False, help_text="Only this endpoint.")
    project = serializers.UUIDField(required=False, help_text="Only this project's endpoints.")
    period = serializers.ChoiceField(
        choices=list(PERIODS),
        default="24h",
        help_text="The range ending at `to` (default now) when `from` is not given.",
    )
    bucket = serializers.ChoiceField(
        choices=list(BUCKETS),
        required=False,
        help_text="Series resolution; by default the finest giving at most 800 points.",
    )
    group_by = serializers.ChoiceField(
        choices=["endpoint", "project", "location"],
        default="endpoint",
        help_text="location: per endpoint and location, from raw checks (RAW_RETENTION_DAYS).",
    )
    location = serializers.CharField(
        required=False, max_length=40, help_text="Only this location's checks (its slug)."
    )
    target = serializers.ChoiceField(
        choices=[target for target, _ in SLA_TIERS],
        required=False,
        help_text="Only this SLA tier (default: all three).",
    )
    endpoints = _IdList(required=False, help_text="Comma-separated endpoint ids (compare).")

    def get_fields(self) -> dict[str, serializers.Field]:
        """The declared fields plus `from` and `to`, which are Python keywords."""
        fields = super().get_fields()
        fields["from"] = _Time(required=False, help_text="Start (ISO 8601).")
        fields["to"] = _Time(required=False, help_text="End (ISO 8601; default now).")
        return fields

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """Resolve the window and check it and the bucket count."""
        now = timezone.now()
        end = attrs.get("to") or now
        start = attrs.get("from") or max(EARLIEST, end - PERIODS[attrs["period"]])
        if start >= end:
            raise serializers.ValidationError({"to": ["Must be after `from`."]})
        if end - start > MAX_RANGE:
            raise serializers.ValidationError({"to": ["The range may span at most 400 days."]})
        window = Window(start, end)
        bucket = bucket_for(window, attrs.get("bucket"))
        if window.seconds / BUCKETS[bucket].total_seconds() > MAX_POINTS:
            raise serializers.ValidationError(
                {"bucket": [f"More than {MAX_POINTS} buckets; choose a larger bucket."]}
            )
        target = attrs.get("target")
        location = self._location(attrs)
        return {
            "query": Query(
                window=window,
                now=now,
                bucket=bucket,
                group_by="location" if location is not None else attrs["group_by"],
                endpoint=attrs.get("endpoint"),
                project=attrs.get("project"),
                targets=(float(target),) if target is not None else (),
                endpoints=attrs.get("endpoints", ()),
                location=location,
            )
        }

    def _location(self, attrs: dict[str, Any]) -> str | None:
        """The stored slug of `location=`, checked: a location that exists, asked for with
        group_by=location or no group_by."""
        slug = attrs.get("location")
        if slug is None:
            return None
        if not known_slugs([slug]):
            raise serializers.ValidationError({"location": [f"Unknown location {slug!r}."]})
        if "group_by" in self.initial_data and attrs["group_by"] != "location":
            raise serializers.ValidationError(
                {"location": ["Only with group_by=location (or without group_by)."]}
            )
        return stored_slug(slug)
