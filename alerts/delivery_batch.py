"""Attempts at many deliveries in one task: what a burst of incidents is sent by.

The same guarantees as one attempt at a time (`alerts.delivery.delivery_attempt`), in a
handful of queries for the whole batch rather than about eight per delivery: one
conditional claim per number of attempts made, the rows and their channels read once each
(a channel's secret decrypted once), the sends over the worker's pooled connections, then
the successes recorded `RECORD_EVERY` at a time. A failed send is recorded one by one as
before (back-off, giving up, the channel's failure count). Sending stops after
`BATCH_BUDGET_SECONDS`; the deliveries not sent by then are handed back, unclaimed, to the
sweep.
"""

import json
import logging
import time
import uuid
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from functools import partial
from typing import Any

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from alerts import delivery as single
from alerts.delivery import (
    HOLD,
    _clear_failures,
    _record,
    _try,
    events,
    outcome_activity,
    outcome_line,
)
from alerts.models import Delivery, DeliveryAttempt, DeliveryStatus, NotificationChannel
from alerts.transport import MAX_ERROR_LENGTH, Sent
from healthmon import metrics
from healthmon.db import bound_cursor
from monitoring.models import ActivityKind, IncidentActivity, time_ordered_uuid


def deliveries_attempt(*, items: Sequence[tuple[uuid.UUID, int]]) -> dict[str, int]:
    """Make the next attempt at each pending delivery of a batch ((id, attempts made when
    queued) pairs) and record them; returns how many ended in each status. A delivery a
    duplicate or late task already moved on is skipped, as `delivery_attempt` does."""
    now = timezone.now()
    deliveries = _claimed(_claim(items, now))
    overtaken = single.overtaken_escalations(deliveries)
    deliveries = [d for d in deliveries if d.pk not in overtaken]
    counts: defaultdict[str, int] = defaultdict(int)
    done: list[tuple[Delivery, Sent]] = []  # sent, not recorded yet
    started, made = time.monotonic(), 0
    for delivery in deliveries:
        if made and time.monotonic() - started > single.BATCH_BUDGET_SECONDS:
            break
        sent, made = _try(delivery), made + 1
        if not sent.ok:
            counts[_record(delivery, sent, now)] += 1
            continue
        done.append((delivery, sent))
        # Recorded RECORD_EVERY at a time: a worker that dies mid-batch sends again only those.
        if len(done) >= RECORD_EVERY:
            _count(counts, _record_successes(done, now))
            done = []
    if done:
        _count(counts, _record_successes(done, now))
    _unclaim([d.pk for d in deliveries[made:]])
    return dict(counts)


# Successes recorded together: fewer queries than one by one, and no more than this many
# are sent again when a worker dies between a send and its record.
RECORD_EVERY = 25


def _count(counts: defaultdict[str, int], statuses: list[str]) -> None:
    for status in statuses:
        counts[status] += 1


def _claim(items: Sequence[tuple[uuid.UUID, int]], now: datetime) -> list[uuid.UUID]:
    """Count and hold the next attempt of each delivery still pending with the attempts
    its task was queued with; the ids claimed. Rows another task holds are left to it."""
    if connection.vendor == "postgresql":
        return _claim_at_once(items, now)
    by_made: defaultdict[int, list[uuid.UUID]] = defaultdict(list)
    for pk, made in items:
        by_made[made].append(pk)
    claimed: list[uuid.UUID] = []
    with transaction.atomic():
        for made, pks in by_made.items():
            mine = list(
                Delivery.objects.select_for_update(skip_locked=True)
                .filter(pk__in=pks, status=DeliveryStatus.PENDING, attempts=made)
                .order_by("pk")  # locked in one order: two batches never deadlock
                .values_list("pk", flat=True)
            )
            Delivery.objects.filter(pk__in=mine).update(
                attempts=made + 1, next_attempt_at=now + HOLD
            )
            claimed += mine
    return claimed


def _claim_at_once(items: Sequence[tuple[uuid.UUID, int]], now: datetime) -> list[uuid.UUID]:
    """`_claim` on PostgreSQL: one statement (its own transaction), whatever the numbers
    of attempts; the rows locked in id order, so two batches never deadlock."""
    table = connection.ops.quote_name(Delivery._meta.db_table)
    statement = f"""
        UPDATE {table} AS d SET attempts = d.attempts + 1, next_attempt_at = %(until)b
        WHERE d.id IN (
            SELECT t.id FROM {table} AS t
            JOIN unnest(%(ids)b::uuid[], %(made)b::int4[]) AS q(id, made)
              ON q.id = t.id AND t.attempts = q.made
            WHERE t.status = %(pending)b
            ORDER BY t.id
            FOR UPDATE OF t SKIP LOCKED
        )
        RETURNING d.id
    """  # noqa: S608 - the table's name only
    params: dict[str, Any] = {
        "until": now + HOLD,
        "ids": [pk for pk, _ in items],
        "made": [made for _, made in items],
        "pending": DeliveryStatus.PENDING.value,
    }
    with bound_cursor() as cursor:
        cursor.execute(statement, params)
        return [row[0] for row in cursor.fetchall()]


def _claimed(pks: list[uuid.UUID]) -> list[Delivery]:
    """The claimed rows, each channel read (and its secret decrypted) once for all."""
    if not pks:
        return []
    deliveries = list(Delivery.objects.filter(pk__in=pks).order_by("created_at"))
    channels = NotificationChannel.objects.in_bulk({d.channel_id for d in deliveries})
    # A channel deleted meanwhile took its deliveries with it.
    deliveries = [d for d in deliveries if d.channel_id in channels]
    for delivery in deliveries:
        delivery.channel = channels[delivery.channel_id]
    return deliveries


def _unclaim(pks: list[uuid.UUID]) -> None:
    """Give back claims never sent: the attempt uncounted, the sweep sends it next."""
    if pks:
        Delivery.objects.filter(pk__in=pks, status=DeliveryStatus.PENDING).update(
            attempts=F("attempts") - 1, next_attempt_at=timezone.now()
        )


def _record_successes(results: list[tuple[Delivery, Sent]], at: datetime) -> list[str]:
    """Record successful sends together: their attempts, the deliveries still pending
    marked delivered (one a duplicate task finished first stays as it is), their
    incidents' timeline lines, their channels' failures cleared; the status each delivery
    ended in. On PostgreSQL in one statement (one round trip), elsewhere by the ORM."""
    if not results:
        return []
    if connection.vendor == "postgresql":
        moved = _successes_written(results, at)
    else:
        moved = _successes_saved(results, at)
    for delivery, sent in results:
        _log_success(delivery, sent, delivery.pk in moved)
    return [DeliveryStatus.DELIVERED for _ in results]


@transaction.atomic
def _successes_saved(results: list[tuple[Delivery, Sent]], at: datetime) -> set[uuid.UUID]:
    """`_record_successes` by the ORM, in one transaction; the deliveries moved."""
    DeliveryAttempt.objects.bulk_create(
        DeliveryAttempt(
            delivery=delivery,
            attempted_at=at,
            ok=True,
            status_code=sent.status_code,
            error=sent.error[:MAX_ERROR_LENGTH],
            duration_ms=sent.duration_ms,
        )
        for delivery, sent in results
    )
    pending = (
        Delivery.objects.select_for_update()
        .filter(pk__in=[d.pk for d, _ in results], status=DeliveryStatus.PENDING)
        .order_by("pk")
    )
    moved = set(pending.values_list("pk", flat=True))
    Delivery.objects.filter(pk__in=moved).update(
        status=DeliveryStatus.DELIVERED,
        delivered_at=timezone.now(),
        next_attempt_at=None,
        last_error="",
    )
    # The timeline line of each delivery about an incident that this batch moved.
    IncidentActivity.objects.bulk_create(
        outcome_activity(delivery.incident_id, delivery, sent, delivered=True)
        for delivery, sent in results
        if delivery.pk in moved and delivery.incident_id is not None
    )
    for channel_id in {d.channel_id for d, _ in results}:
        _clear_failures(channel_id)
    return moved


def _successes_written(results: list[tuple[Delivery, Sent]], at: datetime) -> set[uuid.UUID]:
    """`_record_successes` on PostgreSQL: one statement, so one round trip and one
    transaction, its values bound by the server as a few arrays; the deliveries moved.

    The deliveries still pending are locked in id order (two batches never deadlock) and
    marked delivered; only those get a timeline line (joined to what the UPDATE returned).
    """
    quote = connection.ops.quote_name
    lines = [
        (d.pk, time_ordered_uuid(), d.incident_id, *outcome_line(d, sent, delivered=True)[1:])
        for d, sent in results
        if d.incident_id is not None
    ]
    statement = f"""
        WITH moved AS (
            UPDATE {quote(Delivery._meta.db_table)} AS d
            SET status = %(delivered)b, delivered_at = %(now)b, next_attempt_at = NULL,
                last_error = ''
            WHERE d.id IN (
                SELECT id FROM {quote(Delivery._meta.db_table)}
                WHERE id = ANY(%(ids)b::uuid[]) AND status = %(pending)b
                ORDER BY id FOR UPDATE
            )
            RETURNING d.id
        ), attempts AS (
            INSERT INTO {quote(DeliveryAttempt._meta.db_table)}
                (delivery_id, attempted_at, ok, status_code, error, duration_ms)
            SELECT a.id, %(at)b, true, a.code, a.error, a.ms
            FROM unnest(%(ids)b::uuid[], %(codes)b::int4[], %(errors)b::text[],
                        %(ms)b::float8[]) AS a(id, code, error, ms)
        ), timeline AS (
            INSERT INTO {quote(IncidentActivity._meta.db_table)}
                (id, incident_id, kind, at, text, detail)
            SELECT l.id, l.incident_id, %(kind)b, %(now)b, l.text, l.detail::jsonb
            FROM unnest(%(line_deliveries)b::uuid[], %(line_ids)b::uuid[],
                        %(incidents)b::uuid[], %(texts)b::text[], %(details)b::text[])
                AS l(delivery_id, id, incident_id, text, detail)
            JOIN moved ON moved.id = l.delivery_id
        ), cleared AS (
            UPDATE {quote(NotificationChannel._meta.db_table)}
            SET consecutive_failures = 0, failing_since = NULL
            WHERE id = ANY(%(channels)b::uuid[])
              AND (consecutive_failures <> 0 OR failing_since IS NOT NULL)
        )
        SELECT id FROM moved
    """  # noqa: S608 - table names only
    params: dict[str, Any] = {
        "delivered": DeliveryStatus.DELIVERED.value,
        "pending": DeliveryStatus.PENDING.value,
        "kind": ActivityKind.DELIVERED.value,
        "now": timezone.now(),
        "at": at,
        "ids": [d.pk for d, _ in results],
        "codes": [sent.status_code for _, sent in results],
        "errors": [sent.error[:MAX_ERROR_LENGTH] for _, sent in results],
        "ms": [sent.duration_ms for _, sent in results],
        "line_deliveries": [line[0] for line in lines],
        "line_ids": [line[1] for line in lines],
        "incidents": [line[2] for line in lines],
        "texts": [line[3] for line in lines],
        "details": [json.dumps(line[4]) for line in lines],
        "channels": list({d.channel_id for d, _ in results}),
    }
    with bound_cursor() as cursor:
        cursor.execute(statement, params)
        return {row[0] for row in cursor.fetchall()}


def _log_success(delivery: Delivery, sent: Sent, moved: bool) -> None:
    """The line and the metric of one successful attempt, as `_record` writes them."""
    if moved:
        transaction.on_commit(partial(metrics.delivery_observed, outcome="delivered"), robust=True)
    events.log(
        logging.INFO,
        "delivery_attempt",
        delivery_id=str(delivery.pk),
        channel_kind=delivery.channel.kind,
        attempt=delivery.attempts,
        status_code=sent.status_code,
        outcome="delivered" if moved else "superseded",
        duration_ms=round(sent.duration_ms, 1),
    )
