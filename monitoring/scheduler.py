"""The dispatcher: claim due endpoints, move their next check on, send them in batches.

One claim per endpoint per round, however many places probe it: each claimed endpoint's
batch goes to every online location it lists (the default location when it lists none,
through the ordinary queues), so the results of one round share one `scheduled_for`.

On PostgreSQL the claim is one `UPDATE ... FROM (SELECT ... FOR UPDATE SKIP LOCKED)
RETURNING`, so any number of dispatchers (two beats by mistake, or a failover) never claim
an endpoint twice for one slot, and a tick costs two statements however many are due.
SQLite has no row locks: there each row is claimed by a compare-and-set UPDATE of its
`next_check_at`, which SQLite's single writer makes just as exclusive.
"""

import logging
import random
from collections import defaultdict
from collections.abc import Collection, Sequence
from datetime import datetime, timedelta
from functools import partial
from typing import Any
from uuid import UUID

from django.db import connection, transaction

from healthmon import metrics
from healthmon.logging import get_logger
from healthmon.queue import enqueue_batch
from monitoring.locations import default_slug, online_slugs, queue_for
from monitoring.models import Endpoint, Heartbeat

logger = logging.getLogger(__name__)
events = get_logger(__name__)
# A tick that claims a slot more than this late says the dispatcher is falling behind.
LAG_WARNING_SECONDS = 1.0
Slot = tuple[UUID, datetime]
# The slot, whether the last check failed, and the locations the endpoint lists.
Claim = tuple[UUID, datetime, bool, list[str]]
# A batch's item: endpoint id, slot, and (when more than one) how many locations probe it in
# this round; an item of two is a round of one location, as before locations existed.
Item = list[str | int]
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
    return [(pk, slot) for pk, slot, _, _ in _claim(now, limit)]


def _claim(now: datetime, limit: int) -> list[Claim]:
    """Claim due endpoints; each with its slot and whether its last check failed.

    Endpoints whose last check failed go to the slow lane: a batch lasts as long as its
    slowest check, and a target that hung or timed out last time will likely do so again.
    Kept apart, such targets never hold up a batch of healthy ones; the slow queue is
    served by its own workers (see the README).
    """
    if connection.features.has_select_for_update_skip_locked:
        return _claim_locked(now, limit)
    due = (
        Endpoint.objects.due(now)
        .order_by("next_check_at")
        .values_list("id", "next_check_at", "interval_seconds", "streak_ok", "locations")
    )
    return _claim_compare_and_set(due, now, limit)


# One statement claims and moves on (`next_slot` in SQL): the rows due are found by the
# partial index `endpoint_probe_due_idx` (probed endpoints only), locked with SKIP LOCKED,
# updated and returned with only what the batches need. A row another dispatcher moved on
# meanwhile is re-read once locked and no longer matches `next_check_at <= now`, so it is
# never claimed twice. It replaced a SELECT, an Endpoint instance and an UPDATE per row,
# whose tick took p50 534 ms at 100,000 endpoints (bench/README.md).
_CLAIM_SQL = """
WITH claimed AS (
    UPDATE monitoring_endpoint AS e
    SET next_check_at = CASE
        WHEN due.slot + make_interval(secs => e.interval_seconds) > %(now)s
        THEN due.slot + make_interval(secs => e.interval_seconds)
        ELSE %(now)s + make_interval(secs => e.interval_seconds * (0.5 + random() / 2))
    END
    FROM (
        SELECT id, next_check_at AS slot FROM monitoring_endpoint
        WHERE enabled AND type <> 'heartbeat' AND next_check_at <= %(now)s
        ORDER BY next_check_at
        LIMIT %(limit)s
        FOR UPDATE SKIP LOCKED
    ) AS due
    WHERE e.id = due.id
    RETURNING e.id, due.slot, e.streak_ok IS FALSE AS failing,
        ARRAY(SELECT jsonb_array_elements_text(e.locations)) AS locations
)
SELECT id, slot, failing, locations FROM claimed ORDER BY slot, id
"""


def _claim_locked(now: datetime, limit: int) -> list[Claim]:
    with connection.cursor() as cursor:
        cursor.execute(_CLAIM_SQL, {"now": now, "limit": limit})
        return cursor.fetchall()


def _claim_compare_and_set(due: Any, now: datetime, limit: int) -> list[Claim]:
    claimed = []
    with transaction.atomic():
        # The rest of a row (the listed locations) rides along with the claim.
        for pk, slot, every, last_ok, *rest in list(due[:limit]):
            won = Endpoint.objects.filter(pk=pk, next_check_at=slot, enabled=True).update(
                next_check_at=next_slot(slot, every, now)
            )
            if won:
                claimed.append((pk, slot, last_ok is False, *rest))
    return claimed


def batches(slots: Sequence[Slot], size: int) -> list[list[list[str]]]:
    """Slots as JSON-ready task arguments, `size` per batch."""
    items = [[str(pk), slot.isoformat()] for pk, slot in slots]
    return [items[i : i + size] for i in range(0, len(items), size)]


def send_batch(items: Sequence[Item], slow: bool = False, location: str | None = None) -> None:
    """Queue a batch for a location (None: the default one); it expires rather than run long
    after its slot.

    The default location's batches go to the ordinary queues (`slow` for endpoints whose
    last check failed) exactly as before locations existed, without a `location` argument
    (the task's default), so workers of an older release still run them. A named
    location's batches, slow lane included, go to its one queue, `probes.<slug>`.
    """
    queue = queue_for(location) if location is not None else None
    if queue is None:
        options: dict[str, Any] = {"queue": SLOW_QUEUE} if slow else {}
    else:
        options = {"queue": queue, "kwargs": {"location": location}}
    enqueue_batch(RUN_CHECKS, items, expires=BATCH_EXPIRES_SECONDS, **options)


def hand_over(
    items: Sequence[Item], slow: bool = False, locations: Sequence[str | None] = (None,)
) -> None:
    """Queue a batch to each of its locations; if the broker took it for none of them,
    give its slots back to be claimed again on the next tick rather than lose them.

    When some locations got it, the round goes on with those: its verdict is judged by the
    locations that answer, as when one goes silent, and no target is probed twice for it.
    """
    sent = False
    for location in locations:
        try:
            if location is None:
                send_batch(items, slow)
            else:
                send_batch(items, slow, location)
            sent = True
        except Exception:
            logger.exception(
                "Could not queue a batch of %d checks for %s", len(items), location or "default"
            )
    if not sent:
        logger.warning("The batch of %d checks stays due", len(items))
        for pk, slot, *_ in items:
            Endpoint.objects.filter(pk=str(pk), enabled=True, next_check_at__gt=slot).update(
                next_check_at=slot
            )


Lane = tuple[tuple[str, ...], bool]  # the round's target locations, and the slow lane


def lanes(claims: Sequence[Claim], online: Collection[str]) -> dict[Lane, list[Item]]:
    """Claimed slots as batch items grouped by their online target locations and lane.

    An endpoint listing no location goes to the default one (always online); one whose
    listed locations are all offline gets no lane: nothing is sent for this round.
    """
    default = (default_slug(),)
    grouped: dict[Lane, list[Item]] = defaultdict(list)
    for pk, slot, failing, listed in claims:
        if not listed:
            grouped[default, failing].append([str(pk), slot.isoformat()])
            continue
        targets = tuple(sorted({slug for slug in listed if slug in online}))
        if len(targets) == 1:
            grouped[targets, failing].append([str(pk), slot.isoformat()])
        elif targets:
            grouped[targets, failing].append([str(pk), slot.isoformat(), len(targets)])
    return grouped


def _queue_batches(claims: Sequence[Claim], online: Collection[str], size: int) -> None:
    """Hand each lane's batches over to its locations once the claim is committed."""
    default = default_slug()
    for (targets, slow), items in lanes(claims, online).items():
        locations = tuple(None if slug == default else slug for slug in targets)
        for i in range(0, len(items), size):
            batch = items[i : i + size]
            transaction.on_commit(partial(hand_over, batch, slow, locations), robust=True)


def dispatch(*, now: datetime, batch_size: int) -> int:
    """Claim what is due and queue it in batches to its online locations once the claim is
    committed; then record the tick (the heartbeat /readyz reads, the metrics)."""
    total, lag = 0, 0.0
    online: set[str] | None = None  # read once a tick, and only when a claim lists places
    while True:
        with transaction.atomic():
            claims = _claim(now + LOOKAHEAD, CLAIM_LIMIT)
            if online is None and any(listed for *_, listed in claims):
                online = online_slugs(now)
            _queue_batches(claims, online or set(), batch_size)
        total += len(claims)
        if claims:  # oldest first: the first is the latest
            lag = max(lag, (now - claims[0][1]).total_seconds())
        if len(claims) < CLAIM_LIMIT:
            break
    Heartbeat.beat(HEARTBEAT, now)
    metrics.dispatch_observed(claimed=total, lag_seconds=lag)
    if lag > LAG_WARNING_SECONDS:
        events.warning("dispatcher_lag", lag_seconds=round(lag, 3), claimed=total)
    return total
