"""Shapes of the analytics responses, for the OpenAPI schema (rows are built by
`analytics.reports`; a test checks every key against these)."""

from typing import Any

from rest_framework import serializers

S = serializers.Serializer[Any]
_MS: dict[str, Any] = {"allow_null": True, "help_text": "Milliseconds, successful checks only."}
_PERCENT: dict[str, Any] = {
    "allow_null": True,
    "help_text": "Percent; null when there is nothing to measure (no check).",
}
_UPTIME: dict[str, Any] = {
    "allow_null": True,
    "help_text": "Time-weighted uptime %: 100 * (1 - incident time / watched time); null "
    "with no data: nothing watched (before the first check, paused) or no check in the span.",
}
_NO_DATA = "Null with no data (nothing watched, or no check in the range)."


class _Identity(S):
    endpoint = serializers.UUIDField(required=False, help_text="With group_by=endpoint.")
    project = serializers.UUIDField()
    name = serializers.CharField()


class _Latency(S):
    checks = serializers.IntegerField(help_text="Checks in the range; 0: every figure is null.")
    failures = serializers.IntegerField()
    success_rate = serializers.FloatField(allow_null=True, help_text="Check-count success rate, %.")
    error_rate = serializers.FloatField(allow_null=True, help_text="Check-count error rate, %.")
    avg_ms = serializers.FloatField(**_MS)
    min_ms = serializers.FloatField(**_MS)
    max_ms = serializers.FloatField(**_MS)
    p50_ms = serializers.FloatField(**_MS)
    p95_ms = serializers.FloatField(**_MS)
    p99_ms = serializers.FloatField(**_MS)


class _Uptimes(S):
    uptime_24h = serializers.FloatField(**_UPTIME)
    uptime_7d = serializers.FloatField(**_UPTIME)
    uptime_30d = serializers.FloatField(**_UPTIME)
    checks_24h = serializers.IntegerField(help_text="Checks in the 24 h of `uptime_24h`.")
    checks_7d = serializers.IntegerField(help_text="Checks in the 7 d of `uptime_7d`.")
    checks_30d = serializers.IntegerField(help_text="Checks in the 30 d of `uptime_30d`.")


class SummarySerializer(_Identity, _Latency, _Uptimes):
    """Per endpoint (or project): latency and rates over the range; uptime to its end."""

    status = serializers.CharField(required=False)
    sla_target = serializers.FloatField(required=False)


class UptimeSerializer(_Identity, _Uptimes):
    """Time-weighted uptime beside the check-count success rate."""

    success_rate_24h = serializers.FloatField(**_PERCENT)
    success_rate_7d = serializers.FloatField(**_PERCENT)
    success_rate_30d = serializers.FloatField(**_PERCENT)


class PointSerializer(S):
    """One bucket of a response-time series."""

    t = serializers.DateTimeField(help_text="Bucket start (UTC).")
    avg_ms = serializers.FloatField(**_MS)
    min_ms = serializers.FloatField(**_MS)
    max_ms = serializers.FloatField(**_MS)
    p95_ms = serializers.FloatField(**_MS)
    count = serializers.IntegerField(help_text="Checks in the bucket.")
    failures = serializers.IntegerField()


class SeriesSerializer(_Identity):
    """A response-time series."""

    points = PointSerializer(many=True)


class _Incident(S):
    id = serializers.UUIDField()
    endpoint = serializers.UUIDField()
    started_at = serializers.DateTimeField()
    resolved_at = serializers.DateTimeField(allow_null=True)
    duration_seconds = serializers.FloatField(allow_null=True)
    cause = serializers.CharField()


class _AvailabilityBucket(S):
    t = serializers.DateTimeField()
    uptime = serializers.FloatField(
        allow_null=True,
        help_text="Time-weighted uptime % of the bucket; null when nothing was watched in it "
        "(before the first check, paused) or the range holds no check.",
    )
    downtime_s = serializers.FloatField()


class _Maintenance(S):
    endpoint = serializers.UUIDField()
    starts_at = serializers.DateTimeField()
    ends_at = serializers.DateTimeField()


class AvailabilitySerializer(_Identity):
    """Uptime per bucket, the downtime incidents and the maintenance inside the range
    (clipped to it; maintenance counts as neither up nor down time)."""

    checks = serializers.IntegerField(help_text="Checks in the range; 0: every uptime is null.")
    uptime = serializers.FloatField(**_UPTIME)
    downtime_s = serializers.FloatField()
    buckets = _AvailabilityBucket(many=True)
    incidents = _Incident(many=True)
    maintenance = _Maintenance(many=True)


class _ErrorPoint(S):
    t = serializers.DateTimeField()
    checks = serializers.IntegerField()
    failures = serializers.IntegerField()
    error_rate = serializers.FloatField(**_PERCENT)


class _Cause(S):
    error = serializers.CharField()
    count = serializers.IntegerField()


class ErrorsSerializer(_Identity):
    """Failures, error rate against the previous period of the same length, trend, causes."""

    checks = serializers.IntegerField()
    failures = serializers.IntegerField()
    error_rate = serializers.FloatField(**_PERCENT)
    previous_error_rate = serializers.FloatField(**_PERCENT)
    error_rate_change = serializers.FloatField(
        allow_null=True, help_text="Percentage points versus the previous period."
    )
    trend = _ErrorPoint(many=True)
    top_errors = _Cause(many=True, help_text="From raw checks (kept RAW_RETENTION_DAYS).")


class TierSerializer(S):
    """One SLA tier's standing."""

    target = serializers.FloatField()
    tier = serializers.CharField()
    uptime = serializers.FloatField(**_UPTIME)
    allowed_downtime_month_s = serializers.FloatField(help_text="Per 30-day month.")
    allowed_downtime_year_s = serializers.FloatField(help_text="Per 365-day year.")
    allowed_downtime_s = serializers.FloatField(
        allow_null=True, help_text=f"For the watched time of the range. {_NO_DATA}"
    )
    downtime_s = serializers.FloatField(allow_null=True, help_text=_NO_DATA)
    budget_remaining_s = serializers.FloatField(
        allow_null=True, help_text=f"Allowed minus used, not below 0. {_NO_DATA}"
    )
    compliant = serializers.BooleanField(
        allow_null=True, help_text=f"Whether the downtime fits the allowance. {_NO_DATA}"
    )


class SlaSerializer(_Identity):
    """Uptime over the range and the three tiers side by side."""

    sla_target = serializers.FloatField(required=False)
    checks = serializers.IntegerField(help_text="Checks in the range; 0: no uptime, no standing.")
    uptime = serializers.FloatField(**_UPTIME)
    watched_s = serializers.FloatField(
        help_text="Seconds watched in the range: from the first check on, not paused."
    )
    downtime_s = serializers.FloatField()
    tiers = TierSerializer(many=True)


class CompareSerializer(SummarySerializer):
    """One endpoint of a comparison."""

    sla = TierSerializer(help_text="At the endpoint's own SLA target.")
    points = PointSerializer(many=True)


class CompareResponseSerializer(S):
    """A comparison: the resolved range and one row per endpoint, in the order asked."""

    to = serializers.DateTimeField()
    bucket = serializers.ChoiceField(choices=["5m", "1h", "1d"])
    results = CompareSerializer(many=True)

    def get_fields(self) -> dict[str, serializers.Field]:
        """The declared fields plus `from`, a Python keyword."""
        return {"from": serializers.DateTimeField(), **super().get_fields()}


class LocationSummarySerializer(_Identity):
    """With group_by=location (summary): an endpoint's figures from one location, from
    raw checks."""

    location = serializers.CharField(help_text="The location's slug.")
    checks = serializers.IntegerField()
    failures = serializers.IntegerField()
    uptime = serializers.FloatField(
        allow_null=True, help_text="Checks from this location that succeeded, %."
    )
    avg_ms = serializers.FloatField(**_MS)
    min_ms = serializers.FloatField(**_MS)
    max_ms = serializers.FloatField(**_MS)
    p95_ms = serializers.FloatField(allow_null=True, help_text="Exact, from raw checks.")
    last_checked_at = serializers.DateTimeField(allow_null=True)
    last_ok = serializers.BooleanField(allow_null=True)


class LocationSeriesSerializer(_Identity):
    """With group_by=location (response-time): one location's series."""

    location = serializers.CharField()
    points = PointSerializer(many=True)


class LocationUptimeSerializer(_Identity):
    """With group_by=location (uptime): checks from one location that succeeded, %."""

    location = serializers.CharField()
    uptime_24h = serializers.FloatField(**_PERCENT)
    uptime_7d = serializers.FloatField(**_PERCENT)
    uptime_30d = serializers.FloatField(**_PERCENT)
    checks_24h = serializers.IntegerField()
    checks_7d = serializers.IntegerField()
    checks_30d = serializers.IntegerField()
    failures_24h = serializers.IntegerField()
    failures_7d = serializers.IntegerField()
    failures_30d = serializers.IntegerField()
