"""Celery tasks of the check pipeline: probing and recording the batches the dispatcher sends,
and the heartbeats' deadline loop."""

from datetime import datetime, timedelta
from uuid import UUID

from celery import shared_task
from django.utils import timezone

from monitoring.models import MAX_TIMEOUT_SECONDS
from monitoring.scheduler import RUN_CHECKS
from pipeline.checks import checks_run
from pipeline.heartbeats import heartbeat_deadlines_run

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
def run_checks(items: list[list[str | int]], location: str | None = None) -> int:
    """Probe a batch of (endpoint id, slot[, expected]) items from `location` (the default
    one when not given); safe to run twice for one batch.

    `expected`, when there, is how many locations probe that endpoint in this round (one
    when left out, as in batches queued before locations existed)."""
    slots = [(UUID(str(item[0])), datetime.fromisoformat(str(item[1]))) for item in items]
    # The location and `expected` are read by checks_run(slots=, location=, expected=)
    # once the pipeline judges rounds across locations; until then every batch is stored
    # as the default location's.
    return checks_run(slots=slots)


# A ping is stored a moment after it was received: the loop flips what was due this long
# ago, so a ping received just before its deadline is always stored (and seen) first.
PING_STORE_MARGIN = timedelta(seconds=1)


@shared_task(ignore_result=True, acks_late=False, soft_time_limit=20, time_limit=30)
def run_heartbeat_deadlines() -> list[int]:
    """Flip heartbeats past their deadlines to late, then down (beat runs this every 2 s)."""
    late, down = heartbeat_deadlines_run(now=timezone.now() - PING_STORE_MARGIN)
    return [late, down]
