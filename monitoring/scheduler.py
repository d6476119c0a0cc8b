"""The dispatcher: claim due endpoints, move their next check on, send them in batches.

On PostgreSQL the claim is `SELECT ... FOR UPDATE SKIP LOCKED`, so any number of
dispatchers (two beats by mistake, or a failover) never claim an endpoint twice for one
slot. SQLite has no row locks: there each row is claimed by a compare-and-set UPDATE of
its `next_check_at`, which SQLite's single writer makes just as exclusive.
"""

import logging
import random
from collections.abc import Sequence
from datetime import datetime, timedelta
from functools import partial
from typing import Any
from uuid import UUID

from django.db import connection, transaction

from healthmon import metrics
from healthmon.db import update_each
from healthmon.logging import get_logger
from healthmon.queue import enqueue
from monitoring.models import Endpoint, Heartbeat

logger = logging.getLogger(__name__)
events = get_logger(__name__)
# A tick that claims a slot more than this late says the dispatcher is falling behind.
LAG_WARNING_SECONDS = 1.0
Slot = tuple[UUID, datetime]
Claim = tuple[UUID, datetime, bool]  # the slot, and whether the last check failed
CLAIM_LIMIT = 2000
# Beat runs the dispatcher once a second: it claims what falls due before the next tick and
# hands it over early; each probe then waits for its own slot (monitoring.probes.runner),
# so a check starts on time instead of up to a tick late.
LOOKAHEAD = timedelta(seconds=1.5)  # a tick, plus the slowest claims' time
# The task that probes a batch and records its results. It belongs to the check pipeline,
# which sits above monitoring (`pipeline.tasks`), so it is queued by this name.
RUN_CHECKS = "pipeline.tasks.run_checks"
HEARTBEAT = "dispatcher"  # the row /readyz reads (monitoring.readiness)
SLOW_QUEUE = "slow"
# A batch still queued after this long is dropped: its endpoints' next slots are near.
BATCH_EXPIRES_SECONDS = 300


def next_slot(scheduled: datetime, interval: int, now: datetime) -> datetime:
    """The slot after `scheduled`: one interval on, keeping each endpoint's phase.

    An endpoint that fell behind (a new one, or workers were down) restarts at a random
    point of its next interval, so a backlog does not come due again on the same second.
    """
    following = scheduled + timedelta(seconds=interval)
    if following > now:
        return following
    return now + timedelta(seconds=interval * random.uniform(0.5, 1.0))  # noqa: S311


def claim_due(*, now: datetime, limit: int = CLAIM_LIMIT) -> list[Slot]:
    """Claim up to `limit` due endpoints; returns (endpoint id, slot) pairs, oldest first."""
    return [(pk, slot) for pk, slot, _ in _claim(now, limit)]


def _claim(now: datetime, limit: int) -> list[Claim]:
    """Claim due endpoints; each with its slot and whether its last check failed.

    Endpoints whose last check failed go to the slow lane: a batch lasts as long as its
    slowest check, and a target that hung or timed out last time will likely do so again.
    Kept apart, such targets never hold up a batch of healthy ones; the slow queue is
    served by its own workers (see the README).
    """
    due = (
        Endpoint.objects.due(now)
        .order_by("next_check_at")
        .values_list("id", "next_check_at", "interval_seconds", "streak_ok")
    )
    if connection.features.has_select_for_update_skip_locked:
        return _claim_locked(due, now, limit)
    return _claim_compare_and_set(due, now, limit)


def _claim_locked(due: Any, now: datetime, limit: int) -> list[Claim]:
    with transaction.atomic():
        rows = list(due.select_for_update(skip_locked=True)[:limit])
        update_each(
            [Endpoint(id=pk, next_check_at=next_slot(at, every, now)) for pk, at, every, _ in rows],
            ["next_check_at"],
        )
    return [(pk, slot, last_ok is False) for pk, slot, _, last_ok in rows]


def _claim_compare_and_set(due: Any, now: datetime, limit: int) -> list[Claim]:
    claimed = []
    with transaction.atomic():
        for pk, slot, every, last_ok in list(due[:limit]):
            won = Endpoint.objects.filter(pk=pk, next_check_at=slot, enabled=True).update(
                next_check_at=next_slot(slot, every, now)
            )
            if won:
                claimed.append((pk, slot, last_ok is False))
    return claimed


def batches(slots: Sequence[Slot], size: int) -> list[list[list[str]]]:
    """Slots as JSON-ready task arguments, `size` per batch."""
    items = [[str(pk), slot.isoformat()] for pk, slot in slots]
    return [items[i : i + size] for i in range(0, len(items), size)]


def send_batch(items: list[list[str]], slow: bool = False) -> None:
    """Queue a batch (on the slow lane: endpoints whose last check failed); it expires
    rather than run long after its slot."""
    options = {"queue": SLOW_QUEUE} if slow else {}
    enqueue(RUN_CHECKS, items, expires=BATCH_EXPIRES_SECONDS, **options)


def hand_over(items: list[list[str]], slow: bool = False) -> None:
    """Queue a batch; if the broker cannot take it, give its slots back to be claimed again
    on the next tick rather than lose them."""
    try:
        send_batch(items, slow=slow)
    except Exception:
        logger.exception("Could not queue a batch of %d checks; they stay due", len(items))
        for pk, slot in items:
            Endpoint.objects.filter(pk=pk, enabled=True, next_check_at__gt=slot).update(
                next_check_at=slot
            )


def dispatch(*, now: datetime, batch_size: int) -> int:
    """Claim what is due and queue it in batches once the claim is committed; then record
    the tick (the heartbeat /readyz reads, the metrics)."""
    total, lag = 0, 0.0
    while True:
        with transaction.atomic():
            slots = _claim(now + LOOKAHEAD, CLAIM_LIMIT)
            for slow in (False, True):
                lane = [(pk, at) for pk, at, failing in slots if failing is slow]
                for items in batches(lane, batch_size):
                    transaction.on_commit(partial(hand_over, items, slow), robust=True)
        total += len(slots)
        lag = max([lag, *((now - slot).total_seconds() for _, slot, _ in slots)])
        if len(slots) < CLAIM_LIMIT:
            break
    Heartbeat.beat(HEARTBEAT, now)
    metrics.dispatch_observed(claimed=total, lag_seconds=lag)
    if lag > LAG_WARNING_SECONDS:
        events.warning("dispatcher_lag", lag_seconds=round(lag, 3), claimed=total)
    return total
