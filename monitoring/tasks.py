"""Celery tasks: the dispatcher beat runs every second, and the batches it sends."""

from datetime import datetime
from uuid import UUID

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from monitoring import scheduler, services
from monitoring.models import MAX_TIMEOUT_SECONDS

# A batch runs its probes concurrently, so it lasts about its slowest timeout.
BATCH_SOFT_TIME_LIMIT = MAX_TIMEOUT_SECONDS + 15
BATCH_TIME_LIMIT = MAX_TIMEOUT_SECONDS + 30
# A batch still queued after this long is dropped: its endpoints' next slots are near.
BATCH_EXPIRES_SECONDS = 300


@shared_task(ignore_result=True, acks_late=False)
def dispatch_due_checks() -> int:
    """Claim due endpoints and send them as batches (beat runs this every second)."""
    return scheduler.dispatch(now=timezone.now(), batch_size=settings.PROBE_BATCH_SIZE)


@shared_task(
    ignore_result=True,
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=BATCH_SOFT_TIME_LIMIT,
    time_limit=BATCH_TIME_LIMIT,
)
def run_checks(items: list[list[str]]) -> int:
    """Probe a batch of (endpoint id, slot) pairs; safe to run twice for one batch."""
    slots = [(UUID(pk), datetime.fromisoformat(slot)) for pk, slot in items]
    return services.checks_run(slots=slots)


SLOW_QUEUE = "slow"


def send_batch(items: list[list[str]], slow: bool = False) -> None:
    """Queue a batch (on the slow lane: endpoints whose last check failed); it expires
    rather than run long after its slot."""
    options = {"queue": SLOW_QUEUE} if slow else {}
    run_checks.apply_async(args=[items], expires=BATCH_EXPIRES_SECONDS, **options)
