"""Celery tasks: the dispatcher beat runs every second. The batches it sends are run by
the check pipeline's task (`pipeline.tasks.run_checks`)."""

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from monitoring import scheduler


@shared_task(ignore_result=True, acks_late=False)
def dispatch_due_checks() -> int:
    """Claim due endpoints and send them as batches (beat runs this every second)."""
    return scheduler.dispatch(now=timezone.now(), batch_size=settings.PROBE_BATCH_SIZE)
