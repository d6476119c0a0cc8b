"""Escalation policies: their writes (audited), starting an incident's escalation when it
opens, and the beat loop that sends each step and reminder once.

The loop claims due `Escalation` rows as the dispatcher claims endpoints: `SELECT ... FOR
UPDATE SKIP LOCKED`, then a conditional UPDATE that moves the row on only if it still
stands where it was read. The deliveries it writes carry a key derived from (incident,
step, reminder), so the outbox's unique (channel, event_id) refuses a second write of the
same send even if two loops got that far; they are written in the claim's transaction
and queued when it commits (the delivery sweep sends those whose task was lost).
"""

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from accounts.audit import audit_record
from accounts.models import AuditAction, Organization, Project
from alerts import messages
from alerts.delivery import HELD_HORIZON, HOLD, queue
from alerts.escalation_selectors import StepView, load_steps
from alerts.escalation_validation import StepInput
from alerts.maintenance import maintenance_intervals
from alerts.models import (
    Delivery,
    DeliveryStatus,
    Escalation,
    EscalationPolicy,
    EscalationStep,
    NotificationChannel,
    NotificationEvent,
    load_scopes,
)
from healthmon.encryption import encrypted_fields
from healthmon.intervals import Interval
from monitoring.models import ActivityKind, Endpoint, Incident, IncidentActivity, IncidentKind

_NAMESPACE = uuid.UUID("0c8e4b5e-2f7d-4a53-b1f4-3d6f1a9e7c21")
CLAIM_LIMIT = 200
MAX_TEXT = 500

# --- policies ---------------------------------------------------------------------------------


def _steps_set(policy: EscalationPolicy, steps: Sequence[StepInput]) -> None:
    """Replace the policy's steps (positions from 0, in the order given)."""
    EscalationStep.objects.filter(policy=policy).delete()
    rows = EscalationStep.objects.bulk_create(
        EscalationStep(policy=policy, position=index, after_minutes=step.after_minutes)
        for index, step in enumerate(steps)
    )
    through = EscalationStep.channels.through
    through.objects.bulk_create(
        through(escalationstep_id=row.pk, notificationchannel_id=channel.pk)
        for row, step in zip(rows, steps, strict=True)
        for channel in step.channels
    )


def _scope_set(
    policy: EscalationPolicy,
    projects: Sequence[Project] | None,
    endpoints: Sequence[Endpoint] | None,
) -> set[str]:
    if projects is not None:
        policy.projects.set(projects)
    if endpoints is not None:
        policy.endpoints.set(endpoints)
    return {
        name for name, ids in (("projects", projects), ("endpoints", endpoints)) if ids is not None
    }


@transaction.atomic
def escalation_policy_create(
    *,
    organization: Organization,
    name: str,
    steps: Sequence[StepInput],
    repeat_every_minutes: int | None = None,
    projects: Sequence[Project] = (),
    endpoints: Sequence[Endpoint] = (),
) -> EscalationPolicy:
    """Create a policy with its steps and scope, in the audit log."""
    policy = EscalationPolicy(
        organization=organization, name=name, repeat_every_minutes=repeat_every_minutes
    )
    policy.save(force_insert=True)
    _steps_set(policy, steps)
    _scope_set(policy, projects, endpoints)
    audit_record(
        action=AuditAction.ESCALATION_POLICY_CREATED,
        organization_id=organization.pk,
        target=policy,
        details={"steps": len(steps), "repeat_every_minutes": repeat_every_minutes},
    )
    return policy


@transaction.atomic
def escalation_policy_update(
    *,
    policy: EscalationPolicy,
    name: str,
    repeat_every_minutes: int | None,
    steps: Sequence[StepInput] | None = None,
    projects: Sequence[Project] | None = None,
    endpoints: Sequence[Endpoint] | None = None,
) -> EscalationPolicy:
    """Change a policy (None for steps, projects or endpoints: keep them). Incidents already
    escalating go on with the new steps from where they stand."""
    fields = {
        field
        for field, changed in (
            ("name", name != policy.name),
            ("repeat_every_minutes", repeat_every_minutes != policy.repeat_every_minutes),
        )
        if changed
    }
    policy.name, policy.repeat_every_minutes = name, repeat_every_minutes
    policy.updated_at = timezone.now()
    policy.save(update_fields=["name", "repeat_every_minutes", "updated_at"])
    if steps is not None:
        _steps_set(policy, steps)
        fields.add("steps")
    fields |= _scope_set(policy, projects, endpoints)
    audit_record(
        action=AuditAction.ESCALATION_POLICY_UPDATED,
        organization_id=policy.organization_id,
        target=policy,
        details={"fields": sorted(fields)},
    )
    return policy


@transaction.atomic
def escalation_policy_delete(*, policy: EscalationPolicy) -> None:
    """Delete a policy, in the audit log; incidents escalating by it stop escalating."""
    audit_record(
        action=AuditAction.ESCALATION_POLICY_DELETED,
        organization_id=policy.organization_id,
        target=policy,
    )
    Escalation.objects.filter(policy=policy).update(next_escalation_at=None)
    policy.delete()


# --- starting ---------------------------------------------------------------------------------


def _rank(policy: EscalationPolicy, endpoint: Endpoint) -> int | None:
    """How closely a policy covers an endpoint: 0 by name, 1 by its project, 2 as the
    whole organization's; None when it does not cover it."""
    projects, endpoints = policy.scope_ids
    if endpoint.pk in endpoints:
        return 0
    if endpoint.project_id in projects:
        return 1
    return 2 if not projects and not endpoints else None


def covering_policy(
    policies: Sequence[EscalationPolicy], endpoint: Endpoint
) -> EscalationPolicy | None:
    """The most specific policy covering the endpoint (ties: the oldest), scopes loaded."""
    ranked = [
        (rank, policy.created_at, str(policy.pk), policy)
        for policy in policies
        if (rank := _rank(policy, endpoint)) is not None
    ]
    return min(ranked, key=lambda r: r[:3])[3] if ranked else None


def escalations_start(*, opened: Sequence[Incident], endpoints: dict[uuid.UUID, Endpoint]) -> int:
    """Start escalating each measured incident just opened that a policy covers: its first
    step is due its delay after the incident started. Called by `checks_record` inside its
    transaction; declared incidents never escalate (a person declared them). Returns the
    escalations started; no query runs when nothing opened."""
    measured = [i for i in opened if i.kind == IncidentKind.AUTOMATIC and i.endpoint_id]
    if not measured:
        return 0
    org_ids = {i.organization_id for i in measured}
    policies = list(EscalationPolicy.objects.filter(organization_id__in=org_ids))
    if not policies:
        return 0
    load_scopes(policies)
    first = dict(
        EscalationStep.objects.filter(policy__in=policies, position=0).values_list(
            "policy_id", "after_minutes"
        )
    )
    rows = []
    for incident in measured:
        mine = [p for p in policies if p.organization_id == incident.organization_id]
        policy = covering_policy(mine, endpoints[incident.measured_endpoint_id])
        if policy is None or policy.pk not in first:
            continue
        due = incident.started_at + timedelta(minutes=first[policy.pk])
        rows.append(Escalation(incident=incident, policy=policy, next_escalation_at=due))
    return len(Escalation.objects.bulk_create(rows, ignore_conflicts=True))


# --- the loop ---------------------------------------------------------------------------------


def escalation_key(incident_id: object, step: int, reminder: int) -> uuid.UUID:
    """The idempotency key of one send of a step (0-based) or of a reminder (1, 2, ...)."""
    return uuid.uuid5(_NAMESPACE, f"{incident_id}:escalated:{step}:{reminder}")


@dataclass
class _Batch:
    """What the claimed escalations need, read once for all of them."""

    now: datetime
    incidents: dict[uuid.UUID, Incident]
    policies: dict[uuid.UUID, EscalationPolicy]
    channels: dict[uuid.UUID, NotificationChannel]
    busy: dict[uuid.UUID, list[Interval]]
    told: set[tuple[uuid.UUID, uuid.UUID]]  # (incident, channel) told of the opening
    queued: list[tuple[str, int]]


def _load(claimed: Sequence[Escalation], now: datetime) -> _Batch:
    incidents = {
        incident.pk: incident
        for incident in Incident.objects.filter(pk__in=[e.incident_id for e in claimed])
        .select_related("endpoint__project")
        .defer(*encrypted_fields(Endpoint, "endpoint"))
    }
    policies = list(EscalationPolicy.objects.filter(pk__in={e.policy_id for e in claimed}))
    load_steps(policies)
    wanted = {pk for p in policies for step in p.step_list for pk in step.channel_ids}  # type: ignore[attr-defined]
    channels = NotificationChannel.objects.filter(pk__in=wanted).without_secrets()
    live = [i for i in incidents.values() if i.resolved_at is None and i.endpoint is not None]
    endpoints = list({i.measured_endpoint_id: i.measured_endpoint for i in live}.values())
    openings = Delivery.objects.filter(
        incident_id__in=[i.pk for i in live], event=NotificationEvent.OPENED
    ).exclude(status=DeliveryStatus.FAILED)
    return _Batch(
        now=now,
        incidents=incidents,
        policies={p.pk: p for p in policies},
        channels={c.pk: c for c in channels},
        busy=maintenance_intervals(endpoints, now, now + HELD_HORIZON) if endpoints else {},
        told=set(openings.values_list("incident_id", "channel_id")),
        queued=[],
    )


def escalations_run(*, now: datetime | None = None, limit: int = CLAIM_LIMIT) -> int:
    """Send the escalation steps and reminders that are due (beat runs this every 5 s);
    returns the deliveries written."""
    now = now or timezone.now()
    with transaction.atomic():
        claimed = list(
            Escalation.objects.due(now)
            .order_by("next_escalation_at")
            .select_for_update(skip_locked=True)[:limit]
        )
        if not claimed:
            return 0
        batch = _load(claimed, now)
        written = sum(_advance(escalation, batch) for escalation in claimed)
        queued = batch.queued
        if queued:
            transaction.on_commit(lambda: queue(queued))
    return written


def _move(escalation: Escalation, **changes: object) -> bool:
    """Move the row on only if it still stands where it was read (another loop may have)."""
    return bool(
        Escalation.objects.filter(
            pk=escalation.pk,
            next_step=escalation.next_step,
            reminders_sent=escalation.reminders_sent,
            next_escalation_at=escalation.next_escalation_at,
        ).update(**changes)
    )


def _advance(escalation: Escalation, batch: _Batch) -> int:
    """Stop, postpone or send one claimed escalation; returns the deliveries written."""
    incident = batch.incidents.get(escalation.incident_id)
    policy = batch.policies.get(escalation.policy_id) if escalation.policy_id else None
    steps: list[StepView] = policy.step_list if policy else []  # type: ignore[attr-defined]
    if incident is None or incident.resolved_at or incident.acknowledged_at or not steps:
        _move(escalation, next_escalation_at=None)
        return 0
    assert policy is not None  # noqa: S101 - steps come from a policy
    ongoing = batch.busy.get(incident.measured_endpoint_id, [])
    if ongoing and ongoing[0][0] <= batch.now:
        _move(escalation, next_escalation_at=ongoing[0][1])  # sent when the window ends
        return 0
    index = min(escalation.next_step, len(steps) - 1)
    reminder = 0 if escalation.next_step < len(steps) else escalation.reminders_sent + 1
    if reminder and not policy.repeat_every_minutes:
        _move(escalation, next_escalation_at=None)
        return 0
    if not _move(escalation, **_next(escalation, steps, index, reminder, policy, batch.now)):
        return 0
    return _send(incident, policy, steps, index, reminder, batch)


def _next(
    escalation: Escalation,
    steps: list[StepView],
    index: int,
    reminder: int,
    policy: EscalationPolicy,
    now: datetime,
) -> dict[str, object]:
    """Where the escalation stands after this send: the next step, its delay counted from
    when this one was due (so a step held by maintenance keeps the gaps after it), or the
    next reminder, or nothing more."""
    due = escalation.next_escalation_at or now
    if not reminder and index + 1 < len(steps):
        gap = timedelta(minutes=steps[index + 1].after_minutes - steps[index].after_minutes)
        return {"next_step": index + 1, "next_escalation_at": due + gap}
    if not policy.repeat_every_minutes:
        return {"next_step": len(steps), "next_escalation_at": None}
    # A loop that fell far behind sends one reminder, not every one it missed.
    following = max(due + timedelta(minutes=policy.repeat_every_minutes), now + HOLD)
    return {
        "next_step": len(steps),
        "reminders_sent": reminder,
        "next_escalation_at": following,
    }


def _send(
    incident: Incident,
    policy: EscalationPolicy,
    steps: list[StepView],
    index: int,
    reminder: int,
    batch: _Batch,
) -> int:
    """Write the step's deliveries and its timeline line; queue them on commit."""
    step = steps[index]
    channels = [batch.channels[pk] for pk in step.channel_ids if pk in batch.channels]
    channels = [c for c in channels if c.enabled]
    if step.after_minutes == 0 and index == 0 and not reminder:
        # Told of the opening already: the first step would page them twice.
        channels = [c for c in channels if (incident.pk, c.pk) not in batch.told]
    key = escalation_key(incident.pk, index, reminder)
    endpoint = incident.measured_endpoint
    document = messages.escalation_document(
        event_id=key,
        occurred_at=batch.now,
        incident=incident,
        endpoint=endpoint,
        project_name=endpoint.project.name,
        policy_id=policy.pk,
        policy_name=policy.name,
        step=index + 1,
        steps=len(steps),
        reminder=reminder,
    )
    rows = [
        Delivery(
            channel=channel,
            event=NotificationEvent.ESCALATED,
            event_id=key,
            incident=incident,
            occurred_at=batch.now,
            payload=document,
            next_attempt_at=batch.now + HOLD,
        )
        for channel in channels
    ]
    stored = Delivery.objects.bulk_create(rows, ignore_conflicts=True)
    batch.queued += [(str(d.pk), 0) for d in stored]
    _timeline(incident, policy, index, len(steps), reminder, channels, batch.now)
    return len(stored)


def _timeline(
    incident: Incident,
    policy: EscalationPolicy,
    index: int,
    total: int,
    reminder: int,
    channels: Sequence[NotificationChannel],
    now: datetime,
) -> None:
    """The incident's timeline line: which step or reminder, to which channels (names only)."""
    names = ", ".join(c.name for c in channels) or "no channel (all told already or disabled)"
    what = f"Reminder {reminder}" if reminder else f"Escalation step {index + 1} of {total}"
    IncidentActivity.objects.create(
        incident=incident,
        kind=ActivityKind.REMINDED if reminder else ActivityKind.ESCALATED,
        at=now,
        text=f"{what} of policy “{policy.name}”: sent to {names}"[:MAX_TEXT],
        detail={
            "policy": {"id": str(policy.pk), "name": policy.name},
            "step": index + 1,
            "steps": total,
            "reminder": reminder,
            "channels": [str(c.pk) for c in channels],
        },
    )
