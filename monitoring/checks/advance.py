"""The advance stage: streaks, statuses and incidents moved by a batch's results."""

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from uuid import UUID

from django.db import connection

from healthmon.db import bound_cursor, update_each
from healthmon.logging import get_logger
from monitoring.bulk import rows_update
from monitoring.checks.outcome import ROUND_LOCATION, CheckOutcome
from monitoring.models import (
    Endpoint,
    EndpointStatus,
    Incident,
    IncidentState,
    StatusChange,
)
from monitoring.probes import ProbeResult

logger = get_logger(__name__)


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
