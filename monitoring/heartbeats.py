"""Heartbeat endpoints: the job pings us, nothing is probed.

The rules of what a heartbeat accepts (no target; period and grace bounds), the deadlines a
ping sets (a start sets them too, so a run that never finishes goes down), and the deadline
loop's two flips, each a conditional UPDATE that cannot fire twice. What a ping or a missed
deadline then causes (a check, incidents, notifications) is the check pipeline's
(`pipeline.heartbeats`), which sits above this app.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast
from uuid import UUID

from django.db import connection, models
from django.db.models import Max, Q

from healthmon.errors import FieldErrors
from monitoring.models import (
    MAX_HEARTBEAT_SECONDS,
    Endpoint,
    EndpointStatus,
    EndpointType,
    Ping,
    PingKind,
    StatusChange,
    time_ordered_uuid,
)
from monitoring.probes.phrases import NEVER_FINISHED, NO_PING, NO_PING_YET
from monitoring.schedules import next_due, schedule_of

MIN_PERIOD_SECONDS = 60
MIN_GRACE_SECONDS = 60
DEFAULT_GRACE_SECONDS = 3600
# What a heartbeat stores as its target: nothing is probed, the job calls its ping URL.
NO_TARGET = ""
TARGET_SENT = "Not accepted for heartbeat endpoints: the job calls the endpoint's ping_url."
THRESHOLD_ONE = "A heartbeat goes down at its first failure and up at its first success: 1."
TYPE_CHANGE = "A heartbeat cannot become a probed endpoint or the reverse: create a new one."


def heartbeat_errors(
    values: Mapping[str, Any], *, current_type: str | None, interval: int | None
) -> FieldErrors:
    """What a heartbeat refuses among the fields given (`current_type` None on creation):
    a target, an interval outside 60 s to 365 days, a change of type to or from heartbeat."""
    errors: FieldErrors = {}
    new_type = values.get("type", current_type)
    if current_type is not None and (current_type == EndpointType.HEARTBEAT) != (
        new_type == EndpointType.HEARTBEAT
    ):
        errors["type"] = [TYPE_CHANGE]
    if new_type != EndpointType.HEARTBEAT:
        return errors
    if "target" in values:
        errors["target"] = [TARGET_SENT]
    if interval is not None and interval < MIN_PERIOD_SECONDS:
        errors["interval_seconds"] = [
            f"Ensure this value is greater than or equal to {MIN_PERIOD_SECONDS}."
        ]
    if interval is not None and interval > MAX_HEARTBEAT_SECONDS:
        errors["interval_seconds"] = [
            f"Ensure this value is less than or equal to {MAX_HEARTBEAT_SECONDS}."
        ]
    return errors


@dataclass(frozen=True)
class Deadlines:
    """When a heartbeat turns late, then down, unless a ping comes."""

    late_after: datetime
    alert_after: datetime


def deadlines_after(*, interval_seconds: int, config: Mapping[str, Any], at: datetime) -> Deadlines:
    """The deadlines a success or failure ping received at `at` sets."""
    late = next_due(schedule_of(interval_seconds, config), at)
    return Deadlines(late, late + _grace(config))


def deadlines_after_start(
    *, interval_seconds: int, config: Mapping[str, Any], at: datetime
) -> Deadlines:
    """The deadlines a start received at `at` sets: the run must end within the grace
    (down then, "started at ..., never finished", as healthchecks has it), and is late
    from the next expected time if that comes sooner."""
    end = at + _grace(config)
    late = next_due(schedule_of(interval_seconds, config), at)
    return Deadlines(min(late, end), end)


def _grace(config: Mapping[str, Any]) -> timedelta:
    return timedelta(seconds=int(config.get("grace_seconds", DEFAULT_GRACE_SECONDS)))


def heartbeat_reschedule(endpoint: Endpoint, now: datetime) -> set[str]:
    """After a heartbeat's period, cron, zone or grace changed: its deadlines again from its
    latest ping under the new schedule (as healthchecks does), so a shorter period is not
    waited out under the old one; a late heartbeat the new schedule gives more time is up
    again (the loop makes an up one late within seconds). The columns to write; the caller
    saves the endpoint and holds its row lock. A heartbeat never pinged has no deadlines."""
    if endpoint.late_after is None or endpoint.last_checked_at is None:
        return set()
    start = _open_starts([endpoint.pk]).get(endpoint.pk)
    after = deadlines_after_start if start is not None else deadlines_after
    due = after(
        interval_seconds=endpoint.interval_seconds,
        config=endpoint.config,
        at=start or endpoint.last_checked_at,
    )
    endpoint.late_after, endpoint.alert_after = due.late_after, due.alert_after
    columns = {"late_after", "alert_after"}
    if endpoint.status == EndpointStatus.LATE and due.late_after > now:
        change = endpoint.move_to(EndpointStatus.UP, now, "schedule changed")
        if change is not None:
            change.save(force_insert=True)
            columns.add("status")
    return columns


def _update_where(assignment: str, where: str, params: list[Any]) -> list[UUID]:
    """`UPDATE endpoint SET <assignment> WHERE <where>` for the heartbeats the condition
    holds for, once each; their ids (RETURNING: PostgreSQL, and SQLite from 3.35).

    On PostgreSQL the rows are locked first in id order, skipping rows another transaction
    holds (they are flipped at the next run): every other writer locks endpoints in id
    order, so the loop cannot deadlock with them, and a locked row is checked again against
    the condition, so no flip fires twice.
    """
    quote = connection.ops.quote_name
    table, pk = quote(Endpoint._meta.db_table), quote("id")
    lock = ""
    if connection.features.has_select_for_update_skip_locked:
        lock = f" ORDER BY {pk} FOR NO KEY UPDATE SKIP LOCKED"
    sql = (
        f"UPDATE {table} SET {assignment} WHERE {pk} IN "  # noqa: S608 - our own names
        f"(SELECT {pk} FROM {table} WHERE {where}{lock}) RETURNING {pk}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [pk if isinstance(pk, UUID) else UUID(str(pk)) for (pk,) in cursor.fetchall()]


def _adapt(moment: datetime) -> Any:
    return connection.ops.adapt_datetimefield_value(moment)


def _no_pending_pings(table: str) -> str:
    """A condition on the endpoint table: no ping of it is waiting to be processed. A
    heartbeat whose ping is stored but not processed yet was pinged in time."""
    quote = connection.ops.quote_name
    pings = quote(Ping._meta.db_table)
    return (
        f"NOT EXISTS (SELECT 1 FROM {pings} WHERE {pings}.{quote('endpoint_id')} = "  # noqa: S608
        f"{table}.{quote('id')} AND {pings}.{quote('pending')} = %s)"
    )


def heartbeats_flip_late(*, now: datetime) -> list[UUID]:
    """Move heartbeats past their period to late, once each; their ids. Up ones, and
    pending ones whose first run started and has not ended (a start set their deadlines).

    One conditional UPDATE per status left (`_update_where`): a second loop finds them late
    already and moves nothing. Late is no downtime and opens nothing; the move is recorded
    as history. Call it inside a transaction, which holds the rows until the history is
    written.
    """
    table = connection.ops.quote_name(Endpoint._meta.db_table)
    changes = []
    flipped: list[UUID] = []
    for status in (EndpointStatus.UP, EndpointStatus.PENDING):
        ids = _update_where(
            "status = %s",
            "type = %s AND enabled = %s AND status = %s AND late_after <= %s "
            f"AND {_no_pending_pings(table)}",
            [EndpointStatus.LATE, EndpointType.HEARTBEAT, True, status, _adapt(now), True],
        )
        rows = Endpoint.objects.filter(pk__in=ids).values_list(
            "id", "late_after", "last_checked_at"
        )
        started = _open_starts(ids)
        changes += [
            StatusChange(
                endpoint_id=pk,
                changed_at=late_after or now,
                from_status=status,
                to_status=EndpointStatus.LATE,
                reason=overdue_cause(last, started.get(pk)),
            )
            for pk, late_after, last in rows
        ]
        flipped += ids
    StatusChange.objects.bulk_create(changes)
    return flipped


def heartbeats_claim_overdue(*, now: datetime) -> list[tuple[UUID, datetime, str]]:
    """Claim late heartbeats past their grace, once each: (id, deadline, cause).

    The claim clears `alert_after` in one conditional UPDATE, so a second loop, or the same
    one run again, claims nothing; the caller records the missed deadline as a failed check
    in the same transaction, so a loop killed between the two leaves the claim undone.
    """
    table = connection.ops.quote_name(Endpoint._meta.db_table)
    # The missed deadline is recorded at the deadline, or when the present watch began if
    # later (a check dated before it would be ignored as stale, leaving the heartbeat late).
    deadlines = {
        pk: max(deadline, since) if since is not None and deadline is not None else deadline
        for pk, deadline, since in Endpoint.objects.filter(
            type=EndpointType.HEARTBEAT,
            enabled=True,
            status=EndpointStatus.LATE,
            alert_after__lte=now,
        ).values_list("id", "alert_after", "watch_started_at")
    }
    if not deadlines:
        return []
    ids = _update_where(
        "alert_after = NULL",
        "type = %s AND enabled = %s AND status = %s AND alert_after <= %s "
        f"AND {_no_pending_pings(table)}",
        [EndpointType.HEARTBEAT, True, EndpointStatus.LATE, _adapt(now), True],
    )
    last = dict(Endpoint.objects.filter(pk__in=ids).values_list("id", "last_checked_at"))
    started = _open_starts(ids)
    return [
        (pk, deadlines.get(pk) or now, overdue_cause(last[pk], started.get(pk)))
        for pk in sorted(ids)
    ]


def ping_store_if_quiet(*, ping_key: UUID, values: Mapping[str, Any]) -> bool:
    """Store a ping, pending, when its heartbeat is enabled and `up`, as a start or success
    ping leaves it (but for a run found too short when it is processed); False, with
    nothing written, for any other heartbeat or an unknown key.

    One INSERT ... SELECT, the whole of a healthy job's ping: the heartbeat is read and the
    ping written in a single statement, no transaction around it. `values` are the Ping's
    fields but its id, endpoint and `pending`.
    """
    quote, meta = connection.ops.quote_name, Ping._meta
    row = {**values, "id": time_ordered_uuid(), "pending": True}
    fields = [cast(models.Field, meta.get_field(name)) for name in row]
    params = [field.get_db_prep_save(row[field.name], connection) for field in fields]
    columns = ", ".join(quote(str(field.column)) for field in fields)
    placeholders = ", ".join(["%s"] * len(fields))
    endpoint = quote(Endpoint._meta.db_table)
    sql = (
        f"INSERT INTO {quote(meta.db_table)} ({columns}, {quote('endpoint_id')}) "  # noqa: S608
        f"SELECT {placeholders}, {quote('id')} FROM {endpoint} "
        "WHERE ping_key = %s AND type = %s AND enabled = %s AND status = %s"
    )
    key = Endpoint._meta.get_field("ping_key").get_db_prep_value(ping_key, connection)
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, key, EndpointType.HEARTBEAT, True, EndpointStatus.UP])
        return cursor.rowcount == 1


def _open_starts(ids: list[UUID]) -> dict[UUID, datetime]:
    """When the run still open began, for those of `ids` whose latest start came after
    their latest success or failure ping."""
    rows = (
        Ping.objects.filter(endpoint_id__in=ids)
        .values("endpoint_id")
        .annotate(
            start=Max("received_at", filter=Q(kind=PingKind.START)),
            end=Max("received_at", filter=Q(kind__in=[PingKind.SUCCESS, PingKind.FAIL])),
        )
    )
    return {
        row["endpoint_id"]: row["start"]
        for row in rows
        if row["start"] is not None and (row["end"] is None or row["start"] > row["end"])
    }


def overdue_cause(last: datetime | None, open_start: datetime | None) -> str:
    """The cause of a missed deadline: a run started and never finished, or no ping."""
    if open_start is not None:
        return NEVER_FINISHED.format(time=_utc(open_start))
    return no_ping_since(last)


def no_ping_since(last: datetime | None) -> str:
    """The cause of a missed deadline."""
    if last is None:
        return NO_PING_YET
    return NO_PING.format(time=_utc(last))


def _utc(moment: datetime) -> str:
    return f"{moment:%Y-%m-%d %H:%M:%S} UTC"
