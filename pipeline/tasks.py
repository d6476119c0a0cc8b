"""Celery tasks of the check pipeline: probing and recording the batches the dispatcher sends,
and the heartbeats' deadline loop."""

import time
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from celery import shared_task
from django.utils import timezone

from monitoring.models import MAX_TIMEOUT_SECONDS
from monitoring.rounds import SWEEP_BATCH
from monitoring.scheduler import RUN_CHECKS
from pipeline.checks import checks_run, rounds_judge_due
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
def run_checks(items: list[list[Any]], location: str | None = None) -> int:
    """Probe a batch of [endpoint id, slot, expected locations] items from `location` (the
    default one when None); safe to run twice for one batch. Items without the count (sent
    before locations existed) are rounds of one location."""
    slots = [(UUID(item[0]), datetime.fromisoformat(item[1])) for item in items]
    expected = {UUID(item[0]): int(item[2]) for item in items if len(item) > 2}
    return checks_run(slots=slots, location=location, expected=expected)


# A ping is stored a moment after it was received: the loop flips what was due this long
# ago, so a ping received just before its deadline is always stored (and seen) first.
PING_STORE_MARGIN = timedelta(seconds=1)


@shared_task(ignore_result=True, acks_late=False, soft_time_limit=20, time_limit=30)
def run_heartbeat_deadlines() -> list[int]:
    """Flip heartbeats past their deadlines to late, then down (beat runs this every 2 s)."""
    late, down = heartbeat_deadlines_run(now=timezone.now() - PING_STORE_MARGIN)
    return [late, down]


# The sweep stops taking batches after this long, well inside its time limit; beat runs it
# again 5 s later.
ROUND_SWEEP_SECONDS = 15.0


@shared_task(ignore_result=True, acks_late=False, soft_time_limit=25, time_limit=30)
def judge_pending_rounds() -> int:
    """Judge the multi-location rounds whose wait is over with the results that arrived
    (beat runs this every 5 s); returns the verdicts applied."""
    deadline, verdicts = time.monotonic() + ROUND_SWEEP_SECONDS, 0
    while True:
        claimed, judged = rounds_judge_due(now=timezone.now())
        verdicts += judged
        if claimed < SWEEP_BATCH or time.monotonic() > deadline:
            return verdicts
