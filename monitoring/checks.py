"""What checks write in monitoring: the probing of a batch, its results stored once per slot,
and the streaks, statuses and incidents they move.

These are monitoring's stages of the check pipeline; `pipeline.checks` runs them in order, in
one transaction, with the stages of the layers above (rollups, notifications) between them.
"""

import asyncio
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from operator import attrgetter
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import connection, models, transaction

from accounts.models import Project
from healthmon import metrics
from healthmon.db import bound_cursor, update_each
from healthmon.logging import get_logger
from monitoring.bulk import CHECK_COLUMNS, checks_copy, loaded, rows_update
from monitoring.locations import default_slug, shown_slug, stored_slug
from monitoring.models import (
    CheckResult,
    Endpoint,
    EndpointStatus,
    Incident,
    IncidentState,
    StatusChange,
    time_ordered_uuid,
)
from monitoring.probes import ProbeResult, ProbeTask, run_batch

logger = get_logger(__name__)


@dataclass(frozen=True)
class CheckOutcome:
    """A probe result for one endpoint's slot, from one location (`location` as stored:
    empty for the default one), in a round `expected` locations were sent; or a round's
    verdict (`location` ROUND_LOCATION), which the stages after the store take as one
    check."""

    endpoint_id: UUID
    scheduled_for: datetime
    checked_at: datetime
    result: ProbeResult
    location: str = ""
    expected: int = 1

    @property
    def ok(self) -> bool:
        """Whether the check (or round) succeeded; with `response_time_ms`, what the
        rollups count of it."""
        return self.result.ok

    @property
    def response_time_ms(self) -> float | None:
        """The check's response time (a round's: the mean of its successful locations)."""
        return self.result.response_time_ms

    @property
    def in_round(self) -> bool:
        """Part of a multi-location round: judged with the round, not on its own."""
        return self.expected > 1


# The `location` of a round's verdict: every location that answered.
ROUND_LOCATION = "*"


def checks_probe(
    *,
    slots: Sequence[tuple[UUID, datetime]],
    location: str | None = None,
    expected: Mapping[UUID, int] | None = None,
) -> list[CheckOutcome]:
    """Probe the endpoints of a batch concurrently, each at its slot, from `location` (the
    default one when None); `expected` gives the locations each endpoint's round was sent
    to (1 when missing).

    Endpoints deleted or paused since they were claimed are skipped.
    """
    slug = location or default_slug()
    expected = expected or {}
    # What a probe needs, no more: building whole endpoints (a dozen timestamps parsed
    # each) cost the worker as much CPU as storing their results.
    wanted = Endpoint.objects.only("type", "target", "config", "timeout_seconds", "enabled")
    endpoints = wanted.in_bulk([pk for pk, _ in slots])
    work = [(endpoints[pk], slot) for pk, slot in slots if pk in endpoints]
    work = [(endpoint, slot) for endpoint, slot in work if endpoint.enabled]
    tasks = [
        ProbeTask(
            endpoint.type,
            endpoint.target,
            endpoint.config,
            float(endpoint.timeout_seconds),
            not_before=slot.timestamp(),
            location=slug,
        )
        for endpoint, slot in work
    ]
    results = asyncio.run(run_batch(tasks, concurrency=settings.PROBE_CONCURRENCY))
    return [
        CheckOutcome(
            endpoint.pk,
            slot,
            datetime.fromtimestamp(result.started_at, UTC),
            result,
            location=stored_slug(slug),
            expected=max(1, int(expected.get(endpoint.pk, 1))),
        )
        for (endpoint, slot), result in zip(work, results, strict=True)
    ]


@dataclass(frozen=True)
class Stored:
    """What the store stage wrote: the outcomes it stored (one row each), and the
    endpoints it locked (their state columns loaded, target and config deferred)."""

    outcomes: list[CheckOutcome]
    endpoints: dict[UUID, Endpoint]


def endpoints_lock(*, ids: Sequence[UUID], skip_locked: bool = False) -> dict[UUID, Endpoint]:
    """Lock endpoints in id order until the transaction ends, their state columns loaded
    (target and config deferred); with `skip_locked`, those another transaction holds are
    left out instead of waited for.

    FOR NO KEY UPDATE: it serialises pipelines as FOR UPDATE does, yet lets rows that
    refer to the endpoint (a ping being stored) be inserted meanwhile. The project comes
    along unlocked: a new incident takes its organization.
    """
    if connection.vendor == "postgresql":
        return _lock_on_postgresql(ids, skip_locked)
    locked = Endpoint.objects.defer("target", "config").select_related("project")
    locked = locked.select_for_update(no_key=True, of=("self",), skip_locked=skip_locked)
    return locked.order_by("pk").in_bulk(list(ids))


# What the pipeline's stages read of a locked endpoint: every column but the encrypted ones.
_LOCKED: list[Any] = [
    f for f in Endpoint._meta.concrete_fields if f.attname not in ("target", "config")
]


def _lock_on_postgresql(ids: Sequence[UUID], skip_locked: bool) -> dict[UUID, Endpoint]:
    """The same lock and rows as the ORM's query, the ids sent as one binary array: built
    by the ORM, 200 ids quoted into an IN list cost more CPU than the rest of the batch's
    queries (bench/README.md, ingest). The project comes with its organization only."""
    quote = connection.ops.quote_name
    columns = ", ".join(f"e.{quote(f.column)}" for f in _LOCKED)
    sql = (
        f"SELECT {columns}, p.organization_id FROM {quote(Endpoint._meta.db_table)} e "  # noqa: S608
        f"JOIN {quote(Project._meta.db_table)} p ON p.id = e.project_id "
        "WHERE e.id = ANY(%b::uuid[]) ORDER BY e.id FOR NO KEY UPDATE OF e"
        + (" SKIP LOCKED" if skip_locked else "")
    )
    with bound_cursor() as cursor:
        cursor.execute(sql, [list(ids)])
        rows = cursor.fetchall()
    names = [f.attname for f in _LOCKED]
    json_at = [n for n, f in enumerate(_LOCKED) if isinstance(f, models.JSONField)]
    project_at = names.index("project_id")
    found = {}
    for row in rows:
        values = list(row[:-1])
        for n in json_at:
            values[n] = _LOCKED[n].from_db_value(values[n], None, connection)
        endpoint = loaded(Endpoint, names, values)
        project = loaded(Project, _PROJECT, (values[project_at], row[-1]))
        Endpoint.project.field.set_cached_value(endpoint, project)
        found[endpoint.pk] = endpoint
    return found


_PROJECT = ("id", "organization_id")


def checks_store(*, outcomes: Sequence[CheckOutcome]) -> Stored:
    """Lock the outcomes' endpoints and store each result whose slot is still free.

    Runs inside the pipeline's transaction, which holds the locks to its end. The endpoint
    rows are locked in id order, so batches cannot deadlock; a duplicate delivery of the
    same batch waits, then finds its slots taken and stores nothing.
    """
    if not outcomes:
        return Stored([], {})
    ids = sorted({outcome.endpoint_id for outcome in outcomes}, key=attrgetter("int"))
    endpoints = endpoints_lock(ids=ids)
    # A batch's slots come from one dispatcher tick: a narrow time range, so one index
    # range probe per endpoint finds them (an IN list of 200 times made a slow plan).
    # A slot is taken per location: each location of a round stores its own result.
    slots = [o.scheduled_for for o in outcomes]
    taken = _taken(ids, min(slots), max(slots))
    fresh = [
        o
        for o in outcomes
        if o.endpoint_id in endpoints and (o.endpoint_id, o.scheduled_for, o.location) not in taken
    ]
    fresh = list({(o.endpoint_id, o.scheduled_for, o.location): o for o in fresh}.values())
    checks_insert(outcomes=fresh)
    # Counted once the pipeline's transaction commits: a batch rolled back stored nothing.
    kinds = [(endpoints[o.endpoint_id].type, o.result.ok, o.result.response_time_ms) for o in fresh]
    _log_failures(fresh, endpoints)
    transaction.on_commit(partial(metrics.checks_observed, kinds=kinds), robust=True)
    return Stored(fresh, endpoints)


def _taken(ids: Sequence[UUID], first: datetime, last: datetime) -> set[tuple[UUID, datetime, str]]:
    """The (endpoint, slot, location) of the checks stored for these endpoints in
    [first, last]: on PostgreSQL one prepared statement, the ids one binary array (the
    ORM's IN list of 200 ids cost more CPU to build than the query took to run)."""
    if connection.vendor != "postgresql":
        return set(
            CheckResult.objects.filter(
                endpoint_id__in=ids, scheduled_for__gte=first, scheduled_for__lte=last
            ).values_list("endpoint_id", "scheduled_for", "location")
        )
    table = connection.ops.quote_name(CheckResult._meta.db_table)
    sql = (
        f"SELECT endpoint_id, scheduled_for, location FROM {table} "  # noqa: S608 - model's
        "WHERE endpoint_id = ANY(%b::uuid[]) AND scheduled_for >= %b AND scheduled_for <= %b"
    )
    with bound_cursor() as cursor:
        cursor.execute(sql, [list(ids), first, last])
        return set(cursor.fetchall())


def checks_insert(*, outcomes: Sequence[CheckOutcome], copy: bool | None = None) -> None:
    """Write a row per outcome, whose slot the caller found free while holding its
    endpoint's lock: by one binary COPY (PostgreSQL's default), else through the ORM."""
    if copy is None:
        copy = connection.vendor == "postgresql"
    if copy:
        checks_copy(rows=(_row(o) for o in outcomes))
        return
    CheckResult.objects.bulk_create(
        CheckResult(**dict(zip(_COPIED, _row(o), strict=True))) for o in outcomes
    )


_COPIED = [name for name, _ in CHECK_COLUMNS]


def _row(o: CheckOutcome) -> tuple[Any, ...]:
    """A check's row, its values in `CHECK_COLUMNS` order."""
    result, ms = o.result, o.result.response_time_ms
    return (
        time_ordered_uuid(),
        o.endpoint_id,
        o.scheduled_for,
        o.checked_at,
        result.ok,
        None if ms is None else float(ms),
        result.status_detail,
        result.error,
        result.error_detail,
        o.location,
    )


def _log_failures(fresh: Sequence[CheckOutcome], endpoints: Mapping[UUID, Endpoint]) -> None:
    """A warning per failed check; its texts were already scrubbed of the target's secrets."""
    for o in fresh:
        if not o.result.ok:
            logger.warning(
                "check_failed",
                endpoint_id=str(o.endpoint_id),
                type=endpoints[o.endpoint_id].type,
                error=o.result.error,
                error_detail=o.result.error_detail,
                scheduled_for=o.scheduled_for.isoformat(),
                location=shown_slug(o.location),
            )


@dataclass(frozen=True)
class Transitions:
    """The incidents a batch opened and resolved, and the status changes it made, saved."""

    opened: list[Incident]
    resolved: list[Incident]
    changes: list[StatusChange] = field(default_factory=list)


@dataclass
class _Ledger:
    """What a batch's results change, gathered so that a batch writes it in a few
    statements however many endpoints go down or recover at once."""

    open_incidents: dict[UUID, Incident]
    opened: list[Incident] = field(default_factory=list)
    resolved: list[Incident] = field(default_factory=list)
    changes: list[StatusChange] = field(default_factory=list)

    def write(self, endpoints: list[Endpoint]) -> None:
        """Save the endpoints' new state and every row the results created or closed."""
        if connection.vendor == "postgresql":
            rows_update(endpoints, _STATE_FIELDS)  # one statement, one array per column
        else:
            update_each(endpoints, _STATE_FIELDS)  # one executemany
        Incident.objects.bulk_create(self.opened)
        Incident.objects.bulk_update(self.resolved, ["resolved_at", "state", "updated_at"])
        StatusChange.objects.bulk_create(self.changes)


_STATE_FIELDS = [
    "status",
    "last_checked_at",
    "detected_type",
    "streak_ok",
    "streak_length",
    "streak_started_at",
    "streak_error",
    "last_round_at",
]


def incidents_advance(
    *, endpoints: dict[UUID, Endpoint], outcomes: Sequence[CheckOutcome]
) -> Transitions:
    """Move the locked endpoints' streaks and statuses by their new results, opening and
    resolving incidents; results older than what an endpoint shows move nothing.

    Runs inside the pipeline's transaction, after the store stage locked `endpoints`.
    """
    # UUIDs order as their integers do: comparing those is a C operation.
    ordered = sorted(outcomes, key=lambda o: (o.endpoint_id.int, o.checked_at))
    changed = []
    ledger = _Ledger(
        {incident.measured_endpoint_id: incident for incident in _open_incidents(list(endpoints))}
    )
    for endpoint_id, group in itertools.groupby(ordered, key=lambda o: o.endpoint_id):
        endpoint = endpoints[endpoint_id]
        applied = False
        for outcome in group:
            applied |= _apply_outcome(endpoint, outcome, ledger)
            # A round's verdict moved `last_round_at` even when it moves nothing else.
            applied |= outcome.location == ROUND_LOCATION
        if applied:
            changed.append(endpoint)
    ledger.write(changed)
    return Transitions(ledger.opened, ledger.resolved, ledger.changes)


def _open_incidents(endpoint_ids: list[UUID]) -> list[Incident]:
    """The open incidents of these endpoints; on PostgreSQL by one prepared statement, the
    ids one binary array: most batches find none, yet the ORM's IN list of 200 ids cost as
    much CPU as building the batch's endpoints."""
    if connection.vendor != "postgresql":
        return list(Incident.objects.open().filter(endpoint_id__in=endpoint_ids))
    fields = Incident._meta.concrete_fields
    quote = connection.ops.quote_name
    sql = (
        f"SELECT {', '.join(quote(str(f.column)) for f in fields)} "  # noqa: S608 - model names
        f"FROM {quote(Incident._meta.db_table)} "
        "WHERE endpoint_id = ANY(%b::uuid[]) AND resolved_at IS NULL"
    )
    with bound_cursor() as cursor:
        cursor.execute(sql, [endpoint_ids])
        rows = cursor.fetchall()
    converters = [(n, f.from_db_value) for n, f in enumerate(fields) if hasattr(f, "from_db_value")]
    names = [f.attname for f in fields]
    found = []
    for row in rows:
        values = list(row)
        for n, convert in converters:
            values[n] = convert(values[n], None, connection)
        found.append(Incident.from_db(connection.alias, names, values))
    return found


def _is_stale(endpoint: Endpoint, outcome: CheckOutcome) -> bool:
    """A result that must not move the endpoint: it is paused, the check began before the
    endpoint was last changed, resumed or retargeted, or a later result is applied."""
    return (
        not endpoint.enabled
        or (
            endpoint.watch_started_at is not None
            and outcome.scheduled_for < endpoint.watch_started_at
        )
        or (endpoint.last_checked_at is not None and outcome.checked_at < endpoint.last_checked_at)
    )


def _apply_outcome(endpoint: Endpoint, outcome: CheckOutcome, ledger: _Ledger) -> bool:
    """Advance one endpoint's state by one result; False when the result is stale (it is
    stored all the same)."""
    if _is_stale(endpoint, outcome):
        return False
    result = outcome.result
    if endpoint.streak_ok is result.ok:
        endpoint.streak_length += 1
    else:
        endpoint.streak_ok, endpoint.streak_length = result.ok, 1
        endpoint.streak_started_at = outcome.checked_at
        endpoint.streak_error = result.error[:500]
    endpoint.last_checked_at = outcome.checked_at
    if result.detected_type:
        endpoint.detected_type = result.detected_type
    _open_or_resolve(endpoint, result.ok, ledger)
    status = _status_after(endpoint, result, ledger.open_incidents)
    # Leaving pending, the endpoint has been watched since its streak began: a failure
    # confirmed at the third check was down, and watched, from the first (its incident's start).
    at = endpoint.streak_started_at if endpoint.status == EndpointStatus.PENDING else None
    reason = result.error or result.status_detail
    if status == EndpointStatus.DEGRADED:
        reason = _degraded_reason(endpoint, result, reason)
    change = endpoint.move_to(status, at or outcome.checked_at, reason)
    if change is not None:
        ledger.changes.append(change)
        logger.info(
            "status_changed",
            endpoint_id=str(endpoint.pk),
            type=endpoint.type,
            from_status=change.from_status,
            to_status=change.to_status,
            error=change.reason,
        )
    return True


def _open_or_resolve(endpoint: Endpoint, ok: bool, ledger: _Ledger) -> None:
    """Open an incident once failures are confirmed; resolve it once recovery is."""
    incident = ledger.open_incidents.get(endpoint.pk)
    since = endpoint.streak_started_at
    assert since is not None  # noqa: S101 - set with the streak, just before
    if not ok and incident is None and endpoint.streak_length >= endpoint.failure_threshold:
        incident = Incident(
            organization_id=endpoint.project.organization_id,
            endpoint=endpoint,
            started_at=since,
            cause=endpoint.streak_error,
        )
        ledger.open_incidents[endpoint.pk] = incident
        ledger.opened.append(incident)
        logger.warning(
            "incident_opened",
            incident_id=str(incident.pk),
            endpoint_id=str(endpoint.pk),
            type=endpoint.type,
            cause=incident.cause,
        )
    elif ok and incident is not None and endpoint.streak_length >= endpoint.recovery_threshold:
        incident.resolved_at = since
        incident.state = IncidentState.RESOLVED
        incident.updated_at = since
        ledger.resolved.append(incident)
        logger.info(
            "incident_resolved",
            incident_id=str(incident.pk),
            endpoint_id=str(endpoint.pk),
            type=endpoint.type,
        )
        del ledger.open_incidents[endpoint.pk]


def _status_after(
    endpoint: Endpoint, result: ProbeResult, open_incidents: dict[UUID, Incident]
) -> str:
    if endpoint.pk in open_incidents:
        return EndpointStatus.DOWN
    if not result.ok:
        return endpoint.status  # a failure not yet confirmed changes nothing
    if _slow(endpoint, result) or _lossy(endpoint, result) or result.failing_locations:
        return EndpointStatus.DEGRADED
    return EndpointStatus.UP


def _slow(endpoint: Endpoint, result: ProbeResult) -> bool:
    """A success slower than `config.degraded_above_ms`. A check with no time (a heartbeat
    ping without a start) is never slow."""
    slow = endpoint.config_masked.get("degraded_above_ms")
    timed = result.response_time_ms
    return slow is not None and timed is not None and timed > slow


def _degraded_reason(endpoint: Endpoint, result: ProbeResult, detail: str) -> str:
    """Why a success degrades the endpoint: the locations failing in its round (`Failing
    in eu-west: Connection refused`), then its slowness."""
    slow = endpoint.config_masked.get("degraded_above_ms")
    if result.failing_locations:
        failing = f"Failing in {result.failing_locations}"
        if _slow(endpoint, result):
            return f"{failing}; {result.response_time_ms:.0f} ms (above {slow} ms)"
        return failing
    if result.response_time_ms is None:  # a failed round keeping a degraded status
        return detail
    return f"{detail}, {result.response_time_ms:.0f} ms (above {slow} ms)".lstrip(", ")


def _lossy(endpoint: Endpoint, result: ProbeResult) -> bool:
    """An ICMP check that got replies, but lost more than `config.max_loss_percent`."""
    most = endpoint.config_masked.get("max_loss_percent")
    return most is not None and result.loss_percent is not None and result.loss_percent > most
