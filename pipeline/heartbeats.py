"""What heartbeats cause: a ping stored (a success or failure ping is a check), and a missed
deadline turned into a failed check. Both go through the check pipeline
(`pipeline.checks.checks_record`), so statuses, incidents, rollups and notifications follow
exactly as for probes."""

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from django.db import transaction

from monitoring.checks import CheckOutcome
from monitoring.heartbeats import (
    deadlines_after,
    heartbeats_claim_overdue,
    heartbeats_flip_late,
)
from monitoring.models import Endpoint, EndpointType, Ping, PingKind
from monitoring.probes import ProbeResult
from monitoring.probes.phrases import EXIT_STATUS, FAILURE_PING, TOO_FAST
from pipeline.checks import checks_record


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


@transaction.atomic
def ping_record(*, ping: PingIn) -> bool:
    """Store a ping; a success or failure ping of an enabled heartbeat is also a check that
    moves its status; it and a start set the next deadlines. False (nothing written) when no
    heartbeat has that key."""
    endpoint = (
        Endpoint.objects.select_for_update()
        .only("id", "enabled", "interval_seconds", "config")
        .filter(ping_key=ping.ping_key, type=EndpointType.HEARTBEAT)
        .first()
    )
    if endpoint is None:
        return False
    ends_run = ping.kind in (PingKind.SUCCESS, PingKind.FAIL)
    duration = _run_duration(endpoint, ping) if ends_run else None
    Ping.objects.create(
        endpoint=endpoint,
        kind=ping.kind,
        exit_status=ping.exit_status,
        received_at=ping.received_at,
        duration_ms=duration,
        rid=ping.rid,
        client_ip=ping.client_ip,
        method=ping.method,
        user_agent=ping.user_agent[:500],
        body=ping.body,
        body_size=ping.body_size,
        body_truncated=ping.body_truncated,
    )
    if ends_run and endpoint.enabled:
        checks_record(outcomes=[_outcome(endpoint, ping, duration)])
    if ping.kind != PingKind.LOG and endpoint.enabled:
        # A start sets the deadlines from its own time too: a run that never ends is late
        # a period after it began and down a grace later ("started at ..., never finished").
        due = deadlines_after(
            interval_seconds=endpoint.interval_seconds,
            config=endpoint.config,
            at=ping.received_at,
        )
        Endpoint.objects.filter(pk=endpoint.pk).update(
            late_after=due.late_after, alert_after=due.alert_after
        )
    return True


def _run_duration(endpoint: Endpoint, ping: PingIn) -> float | None:
    """Milliseconds since the run's start: the start with the same `rid`, or without one
    the latest start since the last end; None when there is none."""
    pings = Ping.objects.filter(endpoint=endpoint, received_at__lte=ping.received_at)
    starts = pings.filter(kind=PingKind.START)
    if ping.rid is not None:
        starts = starts.filter(rid=ping.rid)
    else:
        ended = pings.filter(kind__in=[PingKind.SUCCESS, PingKind.FAIL]).order_by("-received_at")
        last_end = ended.values_list("received_at", flat=True).first()
        if last_end is not None:
            starts = starts.filter(received_at__gt=last_end)
    started = starts.order_by("-received_at").values_list("received_at", flat=True).first()
    if started is None:
        return None
    return (ping.received_at - started).total_seconds() * 1000


def _outcome(endpoint: Endpoint, ping: PingIn, duration_ms: float | None) -> CheckOutcome:
    """The ping as a check: failed for a failure ping, a non-zero exit status or a run
    shorter than `min_run_seconds`."""
    error = ""
    if ping.kind == PingKind.FAIL:
        error = EXIT_STATUS.format(status=ping.exit_status) if ping.exit_status else FAILURE_PING
    else:
        shortest = endpoint.config.get("min_run_seconds")
        if shortest is not None and duration_ms is not None and duration_ms < shortest * 1000:
            error = TOO_FAST
    result = ProbeResult(ok=not error, response_time_ms=duration_ms, error=error)
    return CheckOutcome(endpoint.pk, ping.received_at, ping.received_at, result)


def heartbeat_deadlines_run(*, now: datetime) -> tuple[int, int]:
    """Turn heartbeats past their period late, and late ones past their grace down (a
    failed check `no ping since ...`, which opens the incident); (late, down) counts.

    Each flip is a conditional UPDATE in its own short transaction: loops racing each
    other, or a loop run twice, flip each heartbeat once.
    """
    with transaction.atomic():
        late = heartbeats_flip_late(now=now)
    with transaction.atomic():
        overdue = heartbeats_claim_overdue(now=now)
        checks_record(
            outcomes=[
                CheckOutcome(pk, deadline, deadline, ProbeResult(False, None, error=cause))
                for pk, deadline, cause in overdue
            ]
        )
    return len(late), len(overdue)
