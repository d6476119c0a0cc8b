"""Endpoint writes: creation, changes, pausing and resuming, with the schedule kept right;
and what checks write: results, status, incidents."""

import asyncio
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime
from enum import Enum
from typing import Any
from uuid import UUID

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from accounts.audit import audit_record
from accounts.models import AuditAction, Project
from alerts.services import notifications_queue
from analytics.services import rollups_add
from healthmon.db import update_each
from healthmon.errors import InvalidInput, TooManyRequests
from monitoring.models import CheckResult, Endpoint, EndpointStatus, Incident, StatusChange
from monitoring.probes import ProbeResult, ProbeTask, run_batch
from monitoring.targets import mask_config, mask_target
from monitoring.validation import DEFAULT_INTERVAL, DEFAULT_TIMEOUT

CHECK_NOW_COOLDOWN_SECONDS = 5
# An endpoint whose run of results starts over: a new target, a pause, a resume.
_FRESH_STREAK: dict[str, Any] = {
    "streak_ok": None,
    "streak_length": 0,
    "streak_started_at": None,
    "streak_error": "",
}

# A change to any of these makes the endpoint due at once, so the user sees its effect.
_PROBE_FIELDS = frozenset(
    {"type", "target", "interval_seconds", "timeout_seconds", "config", "project"}
)


class Unset(Enum):
    """The type of `UNSET`: a field an edit leaves as it is."""

    UNSET = "UNSET"


UNSET = Unset.UNSET


@dataclass(frozen=True, kw_only=True)
class EndpointChanges:
    """What an edit of an endpoint changes; a field left `UNSET` keeps its value.

    Values are validated ones (`monitoring.validation.endpoint_validate`): a target that
    fits the type, a config with its defaults filled in.
    """

    project: Project | Unset = UNSET
    name: str | Unset = UNSET
    type: str | Unset = UNSET
    target: str | Unset = UNSET
    config: dict[str, Any] | Unset = UNSET
    interval_seconds: int | Unset = UNSET
    timeout_seconds: int | Unset = UNSET
    enabled: bool | Unset = UNSET
    failure_threshold: int | Unset = UNSET
    recovery_threshold: int | Unset = UNSET
    sla_target: float | Unset = UNSET

    def given(self) -> frozenset[str]:
        """The names of the fields given."""
        return frozenset(f.name for f in fields(self) if getattr(self, f.name) is not UNSET)


def _lock_project(project: Project) -> Project:
    """Lock the project row, so that it cannot be deleted while an endpoint joins it."""
    locked = Project.objects.select_for_update().filter(pk=project.pk).first()
    if locked is None:
        raise InvalidInput({"project": [f"Unknown project: {project.pk}."]})
    return locked


@transaction.atomic
def endpoint_create(
    *,
    project: Project,
    name: str,
    type: str,
    target: str,
    config: dict[str, Any],
    interval_seconds: int = DEFAULT_INTERVAL,
    timeout_seconds: int = DEFAULT_TIMEOUT,
    enabled: bool = True,
    failure_threshold: int = 2,
    recovery_threshold: int = 1,
    sla_target: float = 99.9,
) -> Endpoint:
    """Create an endpoint from validated values; an enabled one is due for its first check
    at once."""
    now = timezone.now()
    endpoint = Endpoint(
        project=_lock_project(project),
        name=name,
        type=type,
        target=target,
        target_masked=mask_target(target),
        config=config,
        config_masked=mask_config(config),
        interval_seconds=interval_seconds,
        timeout_seconds=timeout_seconds,
        enabled=enabled,
        failure_threshold=failure_threshold,
        recovery_threshold=recovery_threshold,
        sla_target=sla_target,
        status=EndpointStatus.PENDING if enabled else EndpointStatus.PAUSED,
        next_check_at=now if enabled else None,
        watch_started_at=now,
        created_at=now,
        updated_at=now,
    )
    endpoint.save(force_insert=True)
    audit_record(
        action=AuditAction.ENDPOINT_CREATED,
        organization_id=endpoint.project.organization_id,
        target=endpoint,
        details={"project": str(endpoint.project_id), "type": endpoint.type},
    )
    return endpoint


@transaction.atomic
def endpoint_delete(*, endpoint: Endpoint) -> None:
    """Stop monitoring an endpoint and delete it with its history."""
    project = Project.objects.only("organization_id").get(pk=endpoint.project_id)
    audit_record(
        action=AuditAction.ENDPOINT_DELETED,
        organization_id=project.organization_id,
        target=endpoint,
        details={"project": str(endpoint.project_id), "type": endpoint.type},
    )
    endpoint.delete()


@transaction.atomic
def endpoint_update(*, endpoint: Endpoint, changes: EndpointChanges) -> Endpoint:
    """Change an endpoint; a change to what or how it is probed makes it due now.

    The caller holds the endpoint's row lock (see the view), so that concurrent changes
    apply one after the other. A new target or type resets the status to pending: the last
    result was about another service.
    """
    if changes.project is not UNSET and changes.project.pk != endpoint.project_id:
        changes = replace(changes, project=_lock_project(changes.project))
    toggled = changes.enabled is not UNSET and changes.enabled != endpoint.enabled
    retargeted = (changes.target is not UNSET and changes.target != endpoint.target) or (
        changes.type is not UNSET and changes.type != endpoint.type
    )
    _assign(endpoint, changes)
    now = timezone.now()
    endpoint.updated_at = now
    columns = {*changes.given(), "updated_at", *_mask(endpoint, changes)}
    if toggled or retargeted or changes.config is not UNSET:
        # Results of checks started before now describe what is no longer watched.
        endpoint.watch_started_at = now
        columns.add("watch_started_at")
    if toggled or retargeted:
        columns |= _start_over(endpoint, now)
    due = endpoint.next_check_at if endpoint.enabled else None
    if endpoint.enabled and (toggled or _PROBE_FIELDS & changes.given()):
        due = now
    if due != endpoint.next_check_at:
        endpoint.next_check_at = due
        columns.add("next_check_at")
    endpoint.save(update_fields=sorted(columns))
    return endpoint


def _assign(endpoint: Endpoint, changes: EndpointChanges) -> None:
    """Set each field the changes give."""
    if changes.project is not UNSET:
        endpoint.project = changes.project
    if changes.name is not UNSET:
        endpoint.name = changes.name
    if changes.type is not UNSET:
        endpoint.type = changes.type
    if changes.target is not UNSET:
        endpoint.target = changes.target
    if changes.config is not UNSET:
        endpoint.config = changes.config
    if changes.interval_seconds is not UNSET:
        endpoint.interval_seconds = changes.interval_seconds
    if changes.timeout_seconds is not UNSET:
        endpoint.timeout_seconds = changes.timeout_seconds
    if changes.enabled is not UNSET:
        endpoint.enabled = changes.enabled
    if changes.failure_threshold is not UNSET:
        endpoint.failure_threshold = changes.failure_threshold
    if changes.recovery_threshold is not UNSET:
        endpoint.recovery_threshold = changes.recovery_threshold
    if changes.sla_target is not UNSET:
        endpoint.sla_target = changes.sla_target


def _mask(endpoint: Endpoint, changes: EndpointChanges) -> set[str]:
    """Refresh the masked forms of a new target or config; the columns written."""
    columns = set()
    if changes.target is not UNSET:
        endpoint.target_masked = mask_target(changes.target)
        columns.add("target_masked")
    if changes.config is not UNSET:
        endpoint.config_masked = mask_config(changes.config)
        columns.add("config_masked")
    return columns


def _start_over(endpoint: Endpoint, now: datetime) -> set[str]:
    """Back to pending (or paused) with no streak and no open incident: what the endpoint
    watches or whether it watches changed. Returns the columns to write."""
    change = endpoint.move_to(_resting_status(endpoint.enabled), now, "changed")
    if change is not None:
        change.save(force_insert=True)
    _close_incidents([endpoint.pk], now)
    endpoint.streak_ok = None
    endpoint.streak_length = 0
    endpoint.streak_started_at = None
    endpoint.streak_error = ""
    endpoint.detected_type = ""
    return {"status", "detected_type", *_FRESH_STREAK}


def _resting_status(enabled: bool) -> str:
    return EndpointStatus.PENDING if enabled else EndpointStatus.PAUSED


def _close_incidents(endpoint_ids: Iterable[UUID], at: datetime) -> None:
    """Resolve open incidents of endpoints no longer watched as before: nobody knows how
    long a paused or retargeted endpoint stayed down, so its downtime ends here."""
    Incident.objects.open().filter(endpoint_id__in=list(endpoint_ids)).update(resolved_at=at)


@transaction.atomic
def endpoints_set_enabled(*, endpoints: QuerySet[Endpoint], enabled: bool) -> int:
    """Pause or resume many endpoints; those already in that state are left alone."""
    now = timezone.now()
    rows = list(
        endpoints.filter(enabled=not enabled)
        .select_for_update(of=("self",))
        .order_by("pk")  # the order checks_record locks in: no deadlock between them
        .values_list("id", "status")
    )
    status = _resting_status(enabled)
    StatusChange.objects.bulk_create(
        StatusChange(
            endpoint_id=pk,
            changed_at=now,
            from_status=old,
            to_status=status,
            reason="resumed" if enabled else "paused",
        )
        for pk, old in rows
        if old != status
    )
    ids = [pk for pk, _ in rows]
    _close_incidents(ids, now)
    return Endpoint.objects.filter(id__in=ids).update(
        enabled=enabled,
        status=status,
        next_check_at=now if enabled else None,
        watch_started_at=now,
        updated_at=now,
        detected_type="",
        **_FRESH_STREAK,
    )


def endpoint_set_enabled(*, endpoint: Endpoint, enabled: bool) -> Endpoint:
    """Pause or resume one endpoint (a resumed one is due at once)."""
    endpoints_set_enabled(endpoints=Endpoint.objects.filter(pk=endpoint.pk), enabled=enabled)
    endpoint.refresh_from_db()
    return endpoint


@transaction.atomic
def endpoint_check_now(*, endpoint: Endpoint) -> datetime:
    """Queue an immediate check of an enabled endpoint; returns the slot it fills."""
    from monitoring.tasks import send_batch

    if not endpoint.enabled:
        raise InvalidInput({"enabled": ["The endpoint is paused: resume it to check it."]})
    # One immediate check per endpoint at a time: check-now must not turn the service
    # into a traffic generator pointed at someone's server.
    if not cache.add(f"check-now:{endpoint.pk}", 1, timeout=CHECK_NOW_COOLDOWN_SECONDS):
        raise TooManyRequests(retry_after=CHECK_NOW_COOLDOWN_SECONDS)
    slot = timezone.now()
    items = [[str(endpoint.pk), slot.isoformat()]]
    transaction.on_commit(lambda: send_batch(items))
    return slot


@dataclass(frozen=True)
class CheckOutcome:
    """A probe result for one endpoint's slot."""

    endpoint_id: UUID
    scheduled_for: datetime
    checked_at: datetime
    result: ProbeResult


def checks_run(*, slots: Sequence[tuple[UUID, datetime]]) -> int:
    """Probe the endpoints of a batch concurrently and record the results.

    Endpoints deleted or paused since they were claimed are skipped. Returns how many
    results were stored (a batch delivered twice stores nothing the second time).
    """
    endpoints = Endpoint.objects.in_bulk([pk for pk, _ in slots])
    work = [(endpoints[pk], slot) for pk, slot in slots if pk in endpoints]
    work = [(endpoint, slot) for endpoint, slot in work if endpoint.enabled]
    tasks = [
        ProbeTask(
            endpoint.type,
            endpoint.target,
            endpoint.config,
            float(endpoint.timeout_seconds),
            not_before=slot.timestamp(),
        )
        for endpoint, slot in work
    ]
    results = asyncio.run(run_batch(tasks, concurrency=settings.PROBE_CONCURRENCY))
    outcomes = [
        CheckOutcome(endpoint.pk, slot, datetime.fromtimestamp(result.started_at, UTC), result)
        for (endpoint, slot), result in zip(work, results, strict=True)
    ]
    return checks_record(outcomes=outcomes)


@transaction.atomic
def checks_record(*, outcomes: Sequence[CheckOutcome]) -> int:
    """Store check results once per slot, add them to the rollups, then move statuses
    and open or resolve incidents.

    The endpoint rows are locked first (in id order, so batches cannot deadlock): a
    duplicate delivery of the same batch waits, then finds its slots taken.
    """
    if not outcomes:
        return 0
    ids = sorted({outcome.endpoint_id for outcome in outcomes})
    locked = Endpoint.objects.defer("target", "config").select_for_update().order_by("pk")
    endpoints = locked.in_bulk(ids)
    # A batch's slots come from one dispatcher tick: a narrow time range, so one index
    # range probe per endpoint finds them (an IN list of 200 times made a slow plan).
    slots = [o.scheduled_for for o in outcomes]
    taken = set(
        CheckResult.objects.filter(
            endpoint_id__in=ids, scheduled_for__gte=min(slots), scheduled_for__lte=max(slots)
        ).values_list("endpoint_id", "scheduled_for")
    )
    fresh = [
        o
        for o in outcomes
        if o.endpoint_id in endpoints and (o.endpoint_id, o.scheduled_for) not in taken
    ]
    fresh = list({(o.endpoint_id, o.scheduled_for): o for o in fresh}.values())
    stored = CheckResult.objects.bulk_create(
        CheckResult(
            endpoint_id=o.endpoint_id,
            scheduled_for=o.scheduled_for,
            checked_at=o.checked_at,
            ok=o.result.ok,
            response_time_ms=o.result.response_time_ms,
            status_detail=o.result.status_detail,
            error=o.result.error,
        )
        for o in fresh
    )
    rollups_add(checks=stored)
    _apply_outcomes(endpoints, fresh)
    return len(fresh)


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
        _save_states(endpoints)
        Incident.objects.bulk_create(self.opened)
        Incident.objects.bulk_update(self.resolved, ["resolved_at"])
        StatusChange.objects.bulk_create(self.changes)


def _apply_outcomes(endpoints: dict[UUID, Endpoint], outcomes: Sequence[CheckOutcome]) -> None:
    ordered = sorted(outcomes, key=lambda o: (o.endpoint_id, o.checked_at))
    changed = []
    ledger = _Ledger(
        {
            incident.endpoint_id: incident
            for incident in Incident.objects.open().filter(endpoint_id__in=list(endpoints))
        }
    )
    for endpoint_id, group in itertools.groupby(ordered, key=lambda o: o.endpoint_id):
        endpoint = endpoints[endpoint_id]
        applied = False
        for outcome in group:
            applied |= _apply_outcome(endpoint, outcome, ledger)
        if applied:
            changed.append(endpoint)
    ledger.write(changed)
    notifications_queue(opened=ledger.opened, resolved=ledger.resolved, endpoints=endpoints)


_STATE_FIELDS = [
    "status",
    "last_checked_at",
    "detected_type",
    "streak_ok",
    "streak_length",
    "streak_started_at",
    "streak_error",
]


def _save_states(endpoints: Sequence[Endpoint]) -> None:
    """Write each endpoint's state columns in one executemany."""
    update_each(endpoints, _STATE_FIELDS)


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
    reason = result.error or result.status_detail
    change = endpoint.move_to(status, outcome.checked_at, reason)
    if change is not None:
        ledger.changes.append(change)
    return True


def _open_or_resolve(endpoint: Endpoint, ok: bool, ledger: _Ledger) -> None:
    """Open an incident once failures are confirmed; resolve it once recovery is."""
    incident = ledger.open_incidents.get(endpoint.pk)
    since = endpoint.streak_started_at
    assert since is not None  # noqa: S101 - set with the streak, just before
    if not ok and incident is None and endpoint.streak_length >= endpoint.failure_threshold:
        incident = Incident(endpoint=endpoint, started_at=since, cause=endpoint.streak_error)
        ledger.open_incidents[endpoint.pk] = incident
        ledger.opened.append(incident)
    elif ok and incident is not None and endpoint.streak_length >= endpoint.recovery_threshold:
        incident.resolved_at = since
        ledger.resolved.append(incident)
        del ledger.open_incidents[endpoint.pk]


def _status_after(
    endpoint: Endpoint, result: ProbeResult, open_incidents: dict[UUID, Incident]
) -> str:
    if endpoint.pk in open_incidents:
        return EndpointStatus.DOWN
    if not result.ok:
        return endpoint.status  # a failure not yet confirmed changes nothing
    slow = endpoint.config_masked.get("degraded_threshold_ms")
    if slow is not None and result.response_time_ms > slow:
        return EndpointStatus.DEGRADED
    return EndpointStatus.UP
