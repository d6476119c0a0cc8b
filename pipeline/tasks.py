"""Celery tasks of the check pipeline: probing and recording the batches the dispatcher sends."""

from datetime import datetime
from uuid import UUID

from celery import shared_task

from monitoring.models import MAX_TIMEOUT_SECONDS
from monitoring.scheduler import RUN_CHECKS
from pipeline.checks import checks_run

# A batch runs its probes concurrently, so it lasts about its slowest timeout.
BATCH_SOFT_TIME_LIMIT = MAX_TIMEOUT_SECONDS + 15
BATCH_TIME_LIMIT = MAX_TIMEOUT_SECONDS + 30


@shared_task(
    name=RUN_CHECKS,
    ignore_result=True,
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=BATCH_SOFT_TIME_LIMIT,
    time_limit=BATCH_TIME_LIMIT,
)
def run_checks(items: list[list[str]]) -> int:
    """Probe a batch of (endpoint id, slot) pairs; safe to run twice for one batch."""
    slots = [(UUID(pk), datetime.fromisoformat(slot)) for pk, slot in items]
    return checks_run(slots=slots)
