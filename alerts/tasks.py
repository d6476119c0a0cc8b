"""Celery tasks of alerts: one per delivery attempt, and the sweep beat runs."""

from uuid import UUID

from celery import shared_task

from alerts import delivery
from alerts.delivery import DELIVER_TASK
from alerts.services.schedule_events import maintenance_events_queue


@shared_task(
    name=DELIVER_TASK, ignore_result=True, acks_late=True, soft_time_limit=50, time_limit=60
)
def deliver(delivery_id: str, made: int | None = None) -> str | None:
    """Make a delivery's next attempt, `made` attempts having been made when it was queued
    (safe to run twice: a duplicate or late task finds more and sends nothing)."""
    return delivery.delivery_attempt(delivery_id=UUID(delivery_id), made=made)


@shared_task(ignore_result=True, acks_late=False, soft_time_limit=50, time_limit=60)
def dispatch_deliveries() -> int:
    """Queue deliveries whose next attempt is due, or whose task was lost, and openings
    held back by a maintenance that has ended while their incident goes on."""
    return delivery.openings_release() + delivery.deliveries_dispatch()


@shared_task(ignore_result=True, acks_late=False, soft_time_limit=50, time_limit=60)
def queue_maintenance_events() -> int:
    """Write the `maintenance.started` and `maintenance.ended` deliveries of occurrences that
    just started or ended (beat, every 20 s)."""
    return maintenance_events_queue()
