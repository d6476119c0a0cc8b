"""Rollups: per endpoint, per 5 minutes, hour and day, what its checks add up to.

Every tier holds the same sums (checks, failures, and over successful checks that have a
time their count and the response-time sum, minimum, maximum and histogram), so any range
is answered from the coarsest rows that tile it and percentiles survive the aggregation.
"""

from datetime import datetime, timedelta
from typing import Any

from django.db import models

from analytics import histogram
from monitoring.models import Endpoint


class RollupQuerySet(models.QuerySet["Rollup"]):
    """Reusable rollup filters."""

    def between(self, start: datetime, end: datetime) -> "RollupQuerySet":
        """Rows whose bucket starts in [start, end)."""
        return self.filter(bucket__gte=start, bucket__lt=end)


class Rollup(models.Model):
    """What one endpoint's checks in one bucket add up to. Response-time figures cover
    successful checks only: a refused connection answers fast and is no response time."""

    # No index of its own: the unique (endpoint, bucket) serves every lookup by endpoint.
    endpoint = models.ForeignKey(
        Endpoint, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    bucket = models.DateTimeField(help_text="Start of the bucket (UTC).")
    count = models.PositiveIntegerField(default=0, help_text="Checks.")
    failures = models.PositiveIntegerField(default=0, help_text="Failed checks.")
    # What `sum_ms` is divided by: a heartbeat ping with no paired start succeeds untimed.
    timed = models.PositiveIntegerField(default=0, help_text="Successes with a response time.")
    sum_ms = models.FloatField(default=0.0, help_text="Response times of successes, summed.")
    min_ms = models.FloatField(null=True)
    max_ms = models.FloatField(null=True)
    # The histogram: h00 … h35, one column per bucket of `analytics.histogram`.
    for _name in histogram.FIELDS:
        locals()[_name] = models.PositiveIntegerField(default=0)
    del _name

    objects = RollupQuerySet.as_manager()

    # The bucket width; set by each tier.
    width: timedelta

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"{self.endpoint_id} at {self.bucket:%Y-%m-%d %H:%M}"


def _meta(table: str) -> Any:
    class Meta:
        db_table = table
        ordering = ["endpoint", "bucket"]
        # The only index: every read is for a list of endpoints over a time range, and
        # retention deletes endpoint by endpoint through it too. A `bucket` index made
        # PostgreSQL read a whole day of every organization's rows for one page of
        # endpoints and filter them (bench/README.md, load).
        constraints = [
            models.UniqueConstraint(fields=["endpoint", "bucket"], name=f"{table}_unique"),
        ]

    return Meta


class FiveMinuteRollup(Rollup):
    """Five-minute buckets; kept `ROLLUP_5M_RETENTION_DAYS`."""

    width = timedelta(minutes=5)
    Meta = _meta("analytics_rollup_5m")


class HourRollup(Rollup):
    """Hourly buckets; kept `ROLLUP_1H_RETENTION_DAYS`."""

    width = timedelta(hours=1)
    Meta = _meta("analytics_rollup_1h")


class DayRollup(Rollup):
    """Daily buckets (UTC days); kept forever."""

    width = timedelta(days=1)
    Meta = _meta("analytics_rollup_1d")


# Finest first.
TIERS: tuple[type[Rollup], ...] = (FiveMinuteRollup, HourRollup, DayRollup)


class RollupFold(models.Model):
    """How far the hourly and daily tiers are folded (`analytics.fold`): each of their rows
    holds exactly the five-minute buckets of its span that start before `folded_to`. One
    row at most; none yet means no fold has run, and ingest writes every tier itself."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    folded_to = models.DateTimeField(help_text="Five-minute buckets before this are folded.")

    class Meta:
        db_table = "analytics_rollup_fold"
        constraints = [models.CheckConstraint(condition=models.Q(id=1), name="rollup_fold_single")]

    def __str__(self) -> str:
        return f"folded to {self.folded_to:%Y-%m-%d %H:%M}"
