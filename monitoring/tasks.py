"""Celery tasks: the dispatcher beat runs every second, the probe locations' watch loop and
the raw checks' partitions made ahead. The batches the dispatcher sends are run by the check
pipeline's task (`pipeline.tasks.run_checks`)."""

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from monitoring import scheduler
from monitoring.locations_live import locations_watch
from monitoring.partitions import partitions_ahead


@shared_task(ignore_result=True, acks_late=False)
def dispatch_due_checks() -> int:
    """Claim due endpoints and send them as batches (beat runs this every second)."""
    return scheduler.dispatch(now=timezone.now(), batch_size=settings.PROBE_BATCH_SIZE)


@shared_task(ignore_result=True, acks_late=False, soft_time_limit=20, time_limit=30)
def watch_locations() -> int:
    """Turn silent probe locations offline and tell the operators (beat runs this every
    5 s); returns how many went offline."""
    return locations_watch(timezone.now())


@shared_task(ignore_result=True, soft_time_limit=300, time_limit=360)
def make_check_partitions() -> int:
    """Make the raw checks' partitions of today and the next days (beat runs this hourly;
    idempotent); returns how many were made."""
    made = partitions_ahead(
        today=timezone.now().date(), ahead_days=settings.CHECK_PARTITIONS_AHEAD_DAYS
    )
    return len(made)
