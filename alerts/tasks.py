"""Celery tasks of alerts: one per delivery attempt, and the sweep beat runs."""

from typing import Any
from uuid import UUID

from celery import shared_task

from alerts import delivery, delivery_batch
from alerts.delivery import DELIVER_TASK
from alerts.services import announcements_queue, escalation
from alerts.services.schedule_events import maintenance_events_queue


@shared_task(
    name=DELIVER_TASK, ignore_result=True, acks_late=True, soft_time_limit=50, time_limit=60
)
def deliver(delivery_id: str | list[list[Any]], made: int | None = None) -> str | None:
    """Make a delivery's next attempt, `made` attempts having been made when it was queued
    (safe to run twice: a duplicate or late task finds more and sends nothing); or, given a
    list of [delivery id, made] pairs (what `delivery.queue` sends), each one's."""
    if isinstance(delivery_id, list):
        items = [(UUID(pk), int(attempts)) for pk, attempts in delivery_id]
        delivery_batch.deliveries_attempt(items=items)
        return None
    return delivery.delivery_attempt(delivery_id=UUID(delivery_id), made=made)


@shared_task(ignore_result=True, acks_late=False, soft_time_limit=50, time_limit=60)
def dispatch_deliveries() -> int:
    """Queue deliveries whose next attempt is due, or whose task was lost, openings held
    back by a maintenance that has ended while their incident goes on, and announcements of
    acknowledgements and updates people made (each in its own transaction)."""
    announced = announcements_queue()
    return delivery.openings_release() + delivery.deliveries_dispatch() + announced


@shared_task(ignore_result=True, acks_late=False, soft_time_limit=50, time_limit=60)
def run_escalations() -> int:
    """Send the escalation steps and reminders that are due (each once)."""
    return escalation.escalations_run()


@shared_task(ignore_result=True, acks_late=False, soft_time_limit=50, time_limit=60)
def queue_maintenance_events() -> int:
    """Write the `maintenance.started` and `maintenance.ended` deliveries of occurrences that
    just started or ended (beat, every 20 s)."""
    return maintenance_events_queue()
