"""What heartbeats cause: a ping stored (a success or failure ping is a check), and a missed
deadline turned into a failed check. Both go through the check pipeline
(`pipeline.checks.checks_record`), so statuses, incidents, rollups and notifications follow
exactly as for probes.

A ping is stored before it is processed (turned into a check and new deadlines), and the two
steps run at different times for the one ping that matters most to throughput, a success
ping of a heartbeat that is `up` (the ping a healthy job sends every run):

- **It changes nothing at once, so it is stored and answered.** The ping view runs one
  statement, an INSERT ... SELECT that finds the heartbeat `up` and stores the ping, in
  autocommit, before `OK` leaves: a ping answered `OK` is on disk.
  The deadline loop, every 2 s, processes pending pings in batches through the pipeline
  (`pings_process`) before it flips anything, and its flips skip a heartbeat that still has
  pending pings, so a ping stored in time never lets its heartbeat go late.
- **Every other ping is processed in the request**, in the same transaction that stores it,
  with the heartbeat's earlier pending pings first: a failure ping, an exit status, a first
  ping, a ping of a late or down heartbeat. Its status, incident and notification are there
  when `OK` is. (A run shorter than `min_run_seconds` is found when its success ping is
  processed: by the loop, a moment later, for an `up` heartbeat.)
"""

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from django.db import IntegrityError, transaction
from django.db.models import OuterRef, Subquery

from alerts.services.schedule_events import heartbeat_late_queue
from healthmon.db import update_each
from monitoring.checks import CheckOutcome
from monitoring.heartbeats import (
    deadlines_after,
    deadlines_after_start,
    heartbeats_claim_overdue,
    heartbeats_flip_late,
    ping_store_if_quiet,
)
from monitoring.models import Endpoint, EndpointStatus, EndpointType, Ping, PingKind
from monitoring.probes import ProbeResult
from monitoring.probes.phrases import EXIT_STATUS, FAILURE_PING, TOO_FAST
from pipeline.checks import checks_record

# Pings processed per transaction by the deadline loop: a few hundred milliseconds of work
# that holds the row locks of the heartbeats concerned.
PROCESS_BATCH = 2000
# The deadline loop processes batch after batch for at most this long, then flips.
PROCESS_SECONDS = 8.0
_ENDS = (PingKind.SUCCESS, PingKind.FAIL)


@dataclass(frozen=True, kw_only=True)
class PingIn:
    """A ping as the route received it."""

    ping_key: UUID
    kind: str
    exit_status: int | None
    received_at: datetime
    rid: UUID | None
    client_ip: str | None
    method: str
    user_agent: str
    body: str
    body_size: int
    body_truncated: bool


def ping_record(*, ping: PingIn) -> bool:
    """Store a ping; process it now unless it changes nothing at once (a success or start
    ping of an `up` heartbeat, left to the deadline loop). False, with nothing written,
    when no heartbeat has that key."""
    try:
        return _record(ping)
    except IntegrityError:  # the heartbeat was deleted since it was read
        return False


def _record(ping: PingIn) -> bool:
    if ping.kind in (PingKind.SUCCESS, PingKind.START) and ping_store_if_quiet(
        ping_key=ping.ping_key, values=_values(ping)
    ):
        return True
    found = (
        Endpoint.objects.filter(ping_key=ping.ping_key, type=EndpointType.HEARTBEAT)
        .values_list("id", "enabled", "status")
        .first()
    )
    if found is None:
        return False
    endpoint_id, enabled, status = found
    if ping.kind == PingKind.LOG or not enabled:
        _store(endpoint_id, ping, pending=False)  # kept for the log, processed never
    elif _changes_nothing_now(ping, status):  # it became quiet meanwhile
        _store(endpoint_id, ping, pending=True)
    else:
        with transaction.atomic():
            _store(endpoint_id, ping, pending=True)
            pings_process(endpoint_ids=[endpoint_id])
    return True


def _changes_nothing_now(ping: PingIn, status: str) -> bool:
    """A start or success ping of an `up` heartbeat: it moves no status and opens or
    resolves nothing (a run found shorter than `min_run_seconds` when it is processed, a
    moment later, is the one exception)."""
    return ping.kind in (PingKind.SUCCESS, PingKind.START) and status == EndpointStatus.UP


def _values(ping: PingIn) -> dict[str, Any]:
    """The Ping's fields the route gives."""
    return {
        "kind": ping.kind,
        "exit_status": ping.exit_status,
        "received_at": ping.received_at,
        "rid": ping.rid,
        "client_ip": ping.client_ip,
        "method": ping.method,
        "user_agent": ping.user_agent[:500],
        "body": ping.body,
        "body_size": ping.body_size,
        "body_truncated": ping.body_truncated,
    }


def _store(endpoint_id: UUID, ping: PingIn, *, pending: bool) -> None:
    Ping.objects.create(endpoint_id=endpoint_id, pending=pending, **_values(ping))


@transaction.atomic
def pings_process(*, endpoint_ids: Sequence[UUID] | None = None) -> int:
    """Process pending pings, oldest first, up to `PROCESS_BATCH` of them (with every other
    pending ping of their heartbeats): each success or failure ping becomes a check, and the
    latest ping of each heartbeat sets its deadlines. Returns how many pings were processed.

    The heartbeats are locked first, in id order as the check pipeline locks them, so two
    runs never process one ping twice: the second finds it no longer pending.
    """
    pending = Ping.objects.filter(pending=True)
    if endpoint_ids is not None:
        pending = pending.filter(endpoint_id__in=endpoint_ids)
    oldest = pending.order_by("received_at").values_list("endpoint_id", flat=True)
    ids = sorted(set(oldest[:PROCESS_BATCH]))
    if not ids:
        return 0
    endpoints = (
        Endpoint.objects.select_for_update(no_key=True)
        .only("id", "enabled", "interval_seconds", "config", "watch_started_at")
        .order_by("pk")
        .in_bulk(ids)
    )
    pings = list(
        Ping.objects.filter(pending=True, endpoint_id__in=list(endpoints))
        .order_by("received_at", "id")
        .only("id", "endpoint_id", "kind", "exit_status", "received_at", "rid")
    )
    runs = _Runs(pings)
    before = dict(runs.latest)
    outcomes = []
    for ping in pings:
        endpoint = endpoints[ping.endpoint_id]
        ping.pending = False
        if ping.kind in _ENDS:
            ping.duration_ms = runs.end(ping)
            if endpoint.enabled:
                outcomes.append(_outcome(endpoint, ping))
        elif ping.kind == PingKind.START:
            runs.start(ping)
    update_each(pings, ["pending", "duration_ms"])
    checks_record(outcomes=outcomes)
    _deadlines_set(endpoints, pings, before)
    return len(pings)


class _Runs:
    """Pairs each success or failure ping with the start of its run: the start with the same
    `rid`, or without one the latest start since the last end. What was processed before is
    read in one statement, an indexed probe per heartbeat and kind (and one more per `rid`
    not started in the batch)."""

    def __init__(self, pings: Sequence[Ping]) -> None:
        done = Ping.objects.filter(endpoint_id=OuterRef("pk"), pending=False)

        def latest(*kinds: str) -> Subquery:
            of_kind = done.filter(kind__in=kinds).order_by("-received_at")
            return Subquery(of_kind.values("received_at")[:1])

        rows = (
            Endpoint.objects.filter(pk__in={ping.endpoint_id for ping in pings})
            .annotate(
                start=latest(PingKind.START),
                success=latest(PingKind.SUCCESS),
                fail=latest(PingKind.FAIL),
            )
            .values_list("pk", "start", "success", "fail", "watch_started_at")
        )
        self._open: dict[UUID, datetime] = {}  # the start of each heartbeat's open run
        self.latest: dict[UUID, datetime] = {}  # each heartbeat's latest ping processed
        # A run begun before the heartbeat was last resumed is no run of the present watch.
        self._since: dict[UUID, datetime | None] = {}
        for pk, start, success, fail, since in rows:
            self._since[pk] = since
            ends = [end for end in (success, fail) if end is not None]
            watched = start is not None and (since is None or start >= since)
            if watched and (not ends or start > max(ends)):
                self._open[pk] = start
            if times := [t for t in (start, success, fail) if t is not None]:
                self.latest[pk] = max(times)
        self._by_rid: dict[tuple[UUID, UUID], datetime] = {}

    def start(self, ping: Ping) -> None:
        """A run begins."""
        self._open[ping.endpoint_id] = ping.received_at
        if ping.rid is not None:
            self._by_rid[(ping.endpoint_id, ping.rid)] = ping.received_at

    def end(self, ping: Ping) -> float | None:
        """The run's duration in milliseconds; None when it has no start."""
        if ping.rid is None:
            started = self._open.pop(ping.endpoint_id, None)
        else:  # its own run; the open run ends with it only if it is that run
            since = self._since.get(ping.endpoint_id)
            started = self._by_rid.get((ping.endpoint_id, ping.rid)) or self._started(ping, since)
            if self._open.get(ping.endpoint_id) == started:
                del self._open[ping.endpoint_id]
        if started is None:
            return None
        return (ping.received_at - started).total_seconds() * 1000

    @staticmethod
    def _started(ping: Ping, since: datetime | None) -> datetime | None:
        starts = Ping.objects.filter(
            endpoint_id=ping.endpoint_id,
            kind=PingKind.START,
            rid=ping.rid,
            pending=False,
            received_at__lte=ping.received_at,
        )
        if since is not None:
            starts = starts.filter(received_at__gte=since)
        return starts.order_by("-received_at").values_list("received_at", flat=True).first()


def _outcome(endpoint: Endpoint, ping: Ping) -> CheckOutcome:
    """The ping as a check: failed for a failure ping, a non-zero exit status or a run
    shorter than `min_run_seconds`."""
    error = ""
    duration_ms = ping.duration_ms
    if ping.kind == PingKind.FAIL:
        error = EXIT_STATUS.format(status=ping.exit_status) if ping.exit_status else FAILURE_PING
    else:
        shortest = endpoint.config.get("min_run_seconds")
        if shortest is not None and duration_ms is not None and duration_ms < shortest * 1000:
            error = TOO_FAST
    result = ProbeResult(ok=not error, response_time_ms=duration_ms, error=error)
    return CheckOutcome(endpoint.pk, ping.received_at, ping.received_at, result)


def _deadlines_set(
    endpoints: dict[UUID, Endpoint], pings: Sequence[Ping], before: dict[UUID, datetime]
) -> None:
    """Move each enabled heartbeat's deadlines on from its latest start, success or
    failure ping (after a start, the run must end within the grace), unless a later ping
    was processed before this one (a ping slow to commit)."""
    latest: dict[UUID, Ping] = {}
    for ping in pings:
        if ping.kind != PingKind.LOG:
            latest[ping.endpoint_id] = ping  # pings are in time order
    moved = []
    for pk, ping in latest.items():
        endpoint, at = endpoints[pk], ping.received_at
        since = endpoint.watch_started_at
        if not endpoint.enabled or (pk in before and before[pk] > at):
            continue
        if since is not None and at < since:  # sent before a pause: resumed, it waits
            continue
        after = deadlines_after_start if ping.kind == PingKind.START else deadlines_after
        due = after(interval_seconds=endpoint.interval_seconds, config=endpoint.config, at=at)
        endpoint.late_after, endpoint.alert_after = due.late_after, due.alert_after
        moved.append(endpoint)
    update_each(moved, ["late_after", "alert_after"])


def heartbeat_deadlines_run(*, now: datetime) -> tuple[int, int]:
    """Process the pings stored since the last run, then turn heartbeats past their period
    late (a `heartbeat.late` delivery per channel, in the same transaction), and late ones
    past their grace down (a failed check `no ping since ...`, which opens the incident);
    (late, down) counts.

    Each flip is a conditional UPDATE in its own short transaction: loops racing each
    other, or a loop run twice, flip each heartbeat once; neither flips a heartbeat with
    pending pings (one stored since this run processed them waits for the next run).
    """
    budget = time.monotonic() + PROCESS_SECONDS
    while pings_process() >= PROCESS_BATCH and time.monotonic() < budget:
        pass  # a backlog: process it batch after batch, within the task's time
    with transaction.atomic():
        late = heartbeats_flip_late(now=now)
        heartbeat_late_queue(endpoint_ids=late)
    with transaction.atomic():
        overdue = heartbeats_claim_overdue(now=now)
        checks_record(
            outcomes=[
                CheckOutcome(pk, deadline, deadline, ProbeResult(False, None, error=cause))
                for pk, deadline, cause in overdue
            ]
        )
    return len(late), len(overdue)
