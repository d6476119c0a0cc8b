"""The check pipeline: what a batch of probe results causes, stage by stage, in order.

A check result is a fact of `monitoring`, the lowest of the apps it concerns, yet it causes
work in the layers above: `analytics` counts it into its rollups, `alerts` tells people when
it opens or resolves an incident. Layers import only downwards, so monitoring cannot call
them (its services once did, and tied the apps in a knot). This module sits above every
stage and calls each in turn, so the order is written down once, here:

    probe ─▶ 1. store the results, once per slot        monitoring.checks.checks_store
                and location
             2. judge the multi-location rounds they    monitoring.rounds.rounds_judge
                complete (the others wait)
             3. add the checks (a round: its verdict)   analytics.services.rollups_add
                to the rollups
             4. record certificates, thresholds crossed monitoring.certificates.certificates_advance
             5. move streaks, statuses and incidents    monitoring.checks.incidents_advance
                by the checks (a round: its verdict)
             6. write and queue the notifications       alerts.services.notifications_queue
                (and those of degraded endpoints and    alerts.services.degradations_queue,
                of certificates nearing their expiry)   certificate_notifications_queue
                and start the escalation policies       alerts.services.escalations_start

Stages 1-6 share one transaction: the store stage locks the batch's endpoints (in id order,
so two batches cannot deadlock) until the commit, so a batch delivered twice stores, counts
and notifies nothing the second time, and the notifications leave only once it committed.
A round whose locations have not all answered is judged later by the sweep
(`rounds_judge_due`), which runs stages 3, 5 and 6 on its verdicts the same way.
"""

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from uuid import UUID

from django.db import transaction

from alerts.services import (
    certificate_notifications_queue,
    degradations_queue,
    escalations_start,
    notifications_queue,
)
from analytics.services import rollups_add
from monitoring.certificates import CertificateWarning, certificates_advance
from monitoring.checks import CheckOutcome, checks_probe, checks_store, incidents_advance
from monitoring.locations import shown_slug
from monitoring.models import Endpoint
from monitoring.rounds import rounds_judge, rounds_sweep


def checks_run(
    *,
    slots: Sequence[tuple[UUID, datetime]],
    location: str | None = None,
    expected: Mapping[UUID, int] | None = None,
) -> int:
    """Probe the endpoints of a batch concurrently from `location` (the default location
    when None) and record the results; `expected` gives, per endpoint, how many locations
    its round was sent to (missing: 1, a round of this location alone).

    Endpoints deleted or paused since they were claimed are skipped. Returns how many
    results were stored (a batch delivered twice stores nothing the second time).
    """
    return checks_record(outcomes=checks_probe(slots=slots, location=location, expected=expected))


@transaction.atomic
def checks_record(*, outcomes: Sequence[CheckOutcome]) -> int:
    """Store check results once per slot and location, judge the rounds they complete,
    add the checks and verdicts to the rollups, move statuses and incidents, then queue
    the notifications; returns how many results were stored."""
    if not outcomes:
        return 0
    stored = checks_store(outcomes=outcomes)
    verdicts = rounds_judge(endpoints=stored.endpoints, outcomes=stored.outcomes)
    # A check of a multi-location round counts through its round's verdict only.
    singles = [_named(o, stored.endpoints) for o in stored.outcomes if not o.in_round]
    judged = singles + verdicts
    rollups_add(checks=judged)
    # Certificates are what each location's handshake saw: every stored result offers its.
    crossed = certificates_advance(endpoints=stored.endpoints, outcomes=stored.outcomes)
    _advance(endpoints=stored.endpoints, outcomes=judged, crossed=crossed)
    return len(stored.outcomes)


def _named(outcome: CheckOutcome, endpoints: Mapping[UUID, Endpoint]) -> CheckOutcome:
    """A failure of an endpoint probed from several places, judged alone (its other
    locations were offline): its error names the location, as a round's cause does."""
    endpoint = endpoints.get(outcome.endpoint_id)
    if outcome.result.ok or endpoint is None or len(endpoint.locations) < 2:
        return outcome
    error = f"{shown_slug(outcome.location)}: {outcome.result.error or 'failed'}"[:500]
    return replace(outcome, result=replace(outcome.result, error=error))


@transaction.atomic
def rounds_judge_due(*, now: datetime) -> tuple[int, int]:
    """Judge a batch of the multi-location rounds whose wait ended by `now` with the
    results that arrived, then run the later stages on the verdicts; returns the rounds
    claimed and the verdicts (a round with no result, or already judged, gives none)."""
    swept = rounds_sweep(now=now)
    rollups_add(checks=swept.verdicts)
    _advance(endpoints=swept.endpoints, outcomes=swept.verdicts, crossed=[])
    return swept.claimed, len(swept.verdicts)


def _advance(
    *,
    endpoints: dict[UUID, Endpoint],
    outcomes: Sequence[CheckOutcome],
    crossed: Sequence[CertificateWarning],
) -> None:
    """Move statuses and incidents by the judged outcomes, then queue what they cause."""
    moved = incidents_advance(endpoints=endpoints, outcomes=outcomes)
    notifications_queue(opened=moved.opened, resolved=moved.resolved, endpoints=endpoints)
    escalations_start(opened=moved.opened, endpoints=endpoints)
    degradations_queue(changes=moved.changes, endpoints=endpoints)
    certificate_notifications_queue(warnings=crossed, endpoints=endpoints)
