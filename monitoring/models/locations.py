"""Probe locations: the places checks run from, the workers that keep them alive, their
outages, and the rounds of multi-location endpoints waiting for every location's result.

A location is a Celery queue (`probes.<slug>`); any worker that consumes it, wherever it
runs, probes from that place (`monitoring.locations`). The default location is served by
workers started without `PROBE_LOCATION`, through the ordinary queues.
"""

from datetime import timedelta

from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

from healthmon.slugs import LOCATION_SLUG_PATTERN

# Offline after this long without a heartbeat from any of the location's workers.
OFFLINE_AFTER = timedelta(seconds=60)
SLUG_PATTERN = LOCATION_SLUG_PATTERN
slug_validator = RegexValidator(
    SLUG_PATTERN, "Lower-case letters, digits and inner hyphens, at most 40 characters."
)


class Location(models.Model):
    """A place checks run from. `online` is kept by the watch loop from `last_seen_at`
    (`monitoring.locations.locations_watch`); the dispatcher reads `last_seen_at` itself."""

    slug = models.CharField(max_length=40, unique=True, validators=[slug_validator])
    name = models.CharField(max_length=100)
    online = models.BooleanField(default=False, editable=False)
    last_seen_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return f"{self.name} ({self.slug})"


class LocationWorker(models.Model):
    """A worker of a location, by host name: its heartbeats keep the location online.
    `workers` of a location counts those seen within `OFFLINE_AFTER`."""

    location = models.ForeignKey(Location, on_delete=models.CASCADE, related_name="workers")
    hostname = models.CharField(max_length=255)
    last_seen_at = models.DateTimeField()

    class Meta:
        ordering = ["location", "hostname"]
        constraints = [
            models.UniqueConstraint(fields=["location", "hostname"], name="location_worker_unique")
        ]

    def __str__(self) -> str:
        return f"{self.hostname} in {self.location_id}"


class LocationOutage(models.Model):
    """A location gone silent: opened once when it goes offline (its admins told once),
    resolved when a worker of it is heard again."""

    location = models.ForeignKey(Location, on_delete=models.CASCADE, related_name="outages")
    started_at = models.DateTimeField()
    resolved_at = models.DateTimeField(null=True, blank=True)
    # When the people to tell were told (an outbox: the watch loop sends, then stamps).
    announced_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["-started_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["location"],
                condition=Q(resolved_at__isnull=True),
                name="location_one_open_outage",
            )
        ]

    def __str__(self) -> str:
        return f"{self.location_id} silent since {self.started_at:%Y-%m-%d %H:%M:%S}"


class PendingRound(models.Model):
    """A round of a multi-location endpoint whose locations have not all answered yet.

    Made by the first result of the round that cannot judge it alone; removed when the last
    expected result judges it, or by the sweep once `judge_at` passes (the silent locations
    then left out, as offline ones are)."""

    endpoint = models.ForeignKey(
        "monitoring.Endpoint", on_delete=models.CASCADE, related_name="+", db_index=False
    )
    scheduled_for = models.DateTimeField()
    expected = models.PositiveSmallIntegerField()
    judge_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["endpoint", "scheduled_for"], name="pending_round_unique"
            )
        ]
        indexes = [models.Index(fields=["judge_at"], name="pending_round_judge_idx")]

    def __str__(self) -> str:
        return f"{self.endpoint_id} round {self.scheduled_for:%Y-%m-%d %H:%M:%S}"
