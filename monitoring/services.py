"""Endpoint writes: creation, changes, pausing and resuming, deletion and check-now, with the
schedule kept right. What checks write (results, statuses, incidents) is in
`monitoring.checks`, run by the check pipeline (`pipeline.checks`)."""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields, replace
from datetime import datetime
from enum import Enum
from functools import partial
from typing import Any
from uuid import UUID, uuid4

from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from accounts.audit import audit_record
from accounts.models import AuditAction, Project
from healthmon.errors import InvalidInput, TooManyRequests
from monitoring.heartbeats import heartbeat_reschedule
from monitoring.locations import default_slug, online_slugs
from monitoring.models import (
    CheckResult,
    Endpoint,
    EndpointStatus,
    EndpointType,
    Incident,
    IncidentState,
    StatusChange,
)
from monitoring.probes.base import ProbeTask
from monitoring.probes.icmp import require_icmp
from monitoring.probes.secrets import masked, secrets_of
from monitoring.scheduler import lanes, send_batch
from monitoring.slugs import SLUG_TAKEN, slug_taken
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
# A paused or resumed heartbeat has no deadline: a resumed one is pending until its next
# ping, as a new one is (healthchecks makes a resumed check "new" the same way), so a
# deadline from before the pause can never fire or be mistaken for a current one.
_NO_DEADLINES: dict[str, Any] = {"late_after": None, "alert_after": None}


def _schedule(endpoint: Endpoint) -> tuple[Any, ...]:
    """What a heartbeat's deadlines follow: its period, cron, zone and grace."""
    config = endpoint.config
    return (endpoint.interval_seconds, *(config.get(key) for key in _SCHEDULE_KEYS))


_SCHEDULE_KEYS = ("cron", "timezone", "grace_seconds")

# A change to any of these makes the endpoint due at once, so the user sees its effect.
_PROBE_FIELDS = frozenset(
    {"type", "target", "interval_seconds", "timeout_seconds", "config", "project", "locations"}
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
    slug: str | Unset | None = UNSET
    locations: list[str] | Unset = UNSET

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
    slug: str | None = None,
    locations: list[str] | None = None,
) -> Endpoint:
    """Create an endpoint from validated values; an enabled one is due for its first check
    at once (a heartbeat instead gets its ping key and waits for its first ping)."""
    if type == EndpointType.ICMP:
        require_icmp(target)
    now = timezone.now()
    heartbeat = type == EndpointType.HEARTBEAT
    endpoint = Endpoint(
        ping_key=uuid4() if heartbeat else None,
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
        slug=slug,
        locations=list(locations or []),
        status=EndpointStatus.PENDING if enabled else EndpointStatus.PAUSED,
        next_check_at=now if enabled and not heartbeat else None,
        watch_started_at=now,
        created_at=now,
        updated_at=now,
    )
    _save_slugged(endpoint, force_insert=True)
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
    if changes.type == EndpointType.ICMP and endpoint.type != EndpointType.ICMP:
        require_icmp(str(changes.target if changes.target is not UNSET else endpoint.target))
    toggled = changes.enabled is not UNSET and changes.enabled != endpoint.enabled
    retargeted = (changes.target is not UNSET and changes.target != endpoint.target) or (
        changes.type is not UNSET and changes.type != endpoint.type
    )
    heartbeat = endpoint.type == EndpointType.HEARTBEAT
    schedule = _schedule(endpoint)
    _assign(endpoint, changes)
    now = timezone.now()
    endpoint.updated_at = now
    columns = {*changes.given(), "updated_at", *_mask(endpoint, changes)}
    # Results of checks started before now describe what is no longer watched. A heartbeat
    # is not probed: its config tells when to expect the job, and a run under way when it
    # changes is still the job's run.
    if toggled or retargeted or (changes.config is not UNSET and not heartbeat):
        endpoint.watch_started_at = now
        columns.add("watch_started_at")
    if toggled or retargeted:
        columns |= _start_over(endpoint, now)
    elif heartbeat and _schedule(endpoint) != schedule:
        columns |= heartbeat_reschedule(endpoint, now)
    due = endpoint.next_check_at if endpoint.enabled else None
    if endpoint.enabled and (toggled or _PROBE_FIELDS & changes.given()):
        due = now
    if due != endpoint.next_check_at:
        endpoint.next_check_at = due
        columns.add("next_check_at")
    _save_slugged(endpoint, update_fields=sorted(columns))
    return endpoint


def _save_slugged(endpoint: Endpoint, **how: Any) -> None:
    """Save; a slug a concurrent request took meanwhile is refused as taken."""
    try:
        with transaction.atomic():
            endpoint.save(**how)
    except IntegrityError:
        if endpoint.slug and slug_taken(
            endpoint.slug, project_id=endpoint.project_id, endpoint_id=endpoint.pk
        ):
            raise InvalidInput({"slug": [SLUG_TAKEN]}) from None
        raise


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
    if changes.slug is not UNSET:
        endpoint.slug = changes.slug
    if changes.locations is not UNSET:
        endpoint.locations = changes.locations


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
    endpoint.late_after = endpoint.alert_after = None
    return {"status", "detected_type", *_FRESH_STREAK, *_NO_DEADLINES}


def _resting_status(enabled: bool) -> str:
    return EndpointStatus.PENDING if enabled else EndpointStatus.PAUSED


def _close_incidents(endpoint_ids: Iterable[UUID], at: datetime) -> None:
    """Resolve open incidents of endpoints no longer watched as before: nobody knows how
    long a paused or retargeted endpoint stayed down, so its downtime ends here."""
    Incident.objects.open().filter(endpoint_id__in=list(endpoint_ids)).update(
        resolved_at=at, state=IncidentState.RESOLVED, updated_at=at
    )


@transaction.atomic
def endpoints_set_enabled(*, endpoints: QuerySet[Endpoint], enabled: bool) -> int:
    """Pause or resume many endpoints; those already in that state are left alone."""
    now = timezone.now()
    rows = list(
        endpoints.filter(enabled=not enabled)
        .select_for_update(of=("self",))
        .order_by("pk")  # the order the check pipeline locks in: no deadlock between them
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
        **_NO_DEADLINES,
    )


def endpoint_set_enabled(*, endpoint: Endpoint, enabled: bool) -> Endpoint:
    """Pause or resume one endpoint (a resumed one is due at once)."""
    endpoints_set_enabled(endpoints=Endpoint.objects.filter(pk=endpoint.pk), enabled=enabled)
    endpoint.refresh_from_db()
    return endpoint


@transaction.atomic
def endpoint_check_now(*, endpoint: Endpoint) -> datetime:
    """Queue an immediate check of an enabled endpoint; returns the slot it fills."""
    if not endpoint.enabled:
        raise InvalidInput({"enabled": ["The endpoint is paused: resume it to check it."]})
    if endpoint.type == EndpointType.HEARTBEAT:
        raise InvalidInput({"type": ["A heartbeat is not probed: its job pings it."]})
    # One immediate check per endpoint at a time: check-now must not turn the service
    # into a traffic generator pointed at someone's server.
    if not cache.add(f"check-now:{endpoint.pk}", 1, timeout=CHECK_NOW_COOLDOWN_SECONDS):
        raise TooManyRequests(retry_after=CHECK_NOW_COOLDOWN_SECONDS)
    slot = timezone.now()
    # One round, sent as the dispatcher sends it: to each of the endpoint's online
    # locations, judged together by their quorum.
    claim = (endpoint.pk, slot, False, list(endpoint.locations))
    routes = lanes([claim], online_slugs(slot) if endpoint.locations else ())
    if not routes:
        cache.delete(f"check-now:{endpoint.pk}")
        raise InvalidInput({"locations": ["None of the endpoint's locations is online."]})
    default = default_slug()
    for (targets, _), items in routes.items():
        for slug in targets:
            where = None if slug == default else slug
            transaction.on_commit(partial(send_batch, items, False, where))
    return slot


def endpoint_secret_forms(*, endpoint: Endpoint) -> list[str]:
    """Every form the endpoint's probe sends its secrets in (plain, percent-encoded, Basic)."""
    task = ProbeTask(
        endpoint.type, endpoint.target, endpoint.config, float(endpoint.timeout_seconds)
    )
    return secrets_of(task)


@transaction.atomic
def endpoint_stored_text_scrub(*, endpoint: Endpoint, secrets: Sequence[str]) -> int:
    """Mask the secrets in the endpoint's stored check errors and incident causes.

    Probes mask every form a secret is sent in before anything is stored; rows stored by
    earlier versions may still quote a derived form (a Basic header's base64). Returns how
    many rows changed.
    """
    changed = 0
    failed = endpoint.checks.exclude(error="", status_detail="").only("error", "status_detail")
    for batch in _batches(failed.iterator(chunk_size=2000), 2000):
        dirty = [check for check in batch if _scrubbed(check, ("error", "status_detail"), secrets)]
        CheckResult.objects.bulk_update(dirty, ["error", "status_detail"])
        changed += len(dirty)
    incidents = endpoint.incidents.only("cause")
    dirty_incidents = [i for i in incidents if _scrubbed(i, ("cause",), secrets)]
    Incident.objects.bulk_update(dirty_incidents, ["cause"])
    return changed + len(dirty_incidents)


def _scrubbed(row: Any, names: Sequence[str], secrets: Sequence[str]) -> bool:
    """Scrub the row's text fields in place; whether any changed."""
    dirty = False
    for name in names:
        text = getattr(row, name)
        if text and (clean := masked(text, secrets)) != text:
            setattr(row, name, clean)
            dirty = True
    return dirty


def _batches(rows: Iterable[Any], size: int) -> Iterable[list[Any]]:
    batch: list[Any] = []
    for row in rows:
        batch.append(row)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
