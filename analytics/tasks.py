"""Periodic analytics upkeep."""

from celery import shared_task

from analytics import services


@shared_task(ignore_result=True, soft_time_limit=3000, time_limit=3300)
def apply_retention() -> dict[str, int]:
    """Delete raw checks and rollups past their retention (hourly, idempotent)."""
    return services.retention_run()


@shared_task(ignore_result=True, soft_time_limit=50, time_limit=55)
def fold_rollups() -> int:
    """Fold the five-minute rollups into the hourly and daily ones (every minute)."""
    return services.rollups_fold()
