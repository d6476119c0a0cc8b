"""The check pipeline: what a batch of probe results causes, stage by stage, in order.

A check result is a fact of `monitoring`, the lowest of the apps it concerns, yet it causes
work in the layers above: `analytics` counts it into its rollups, `alerts` tells people when
it opens or resolves an incident. Layers import only downwards, so monitoring cannot call
them (its services once did, and tied the apps in a knot). This module sits above every
stage and calls each in turn, so the order is written down once, here:

    probe ─▶ 1. store the results, once per slot        monitoring.checks.checks_store
             2. add them to the rollups                 analytics.services.rollups_add
             3. record certificates, thresholds crossed monitoring.certificates.certificates_advance
             4. move streaks, statuses and incidents    monitoring.checks.incidents_advance
             5. write and queue the notifications       alerts.services.notifications_queue
                (and those of degraded endpoints and    alerts.services.degradations_queue,
                of certificates nearing their expiry)   certificate_notifications_queue
                and start the escalation policies       alerts.services.escalations_start

Stages 1-5 share one transaction: the store stage locks the batch's endpoints (in id order,
so two batches cannot deadlock) until the commit, so a batch delivered twice stores, counts
and notifies nothing the second time, and the notifications leave only once it committed.
"""

from collections.abc import Sequence
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
from monitoring.certificates import certificates_advance
from monitoring.checks import CheckOutcome, checks_probe, checks_store, incidents_advance


def checks_run(*, slots: Sequence[tuple[UUID, datetime]]) -> int:
    """Probe the endpoints of a batch concurrently and record the results.

    Endpoints deleted or paused since they were claimed are skipped. Returns how many
    results were stored (a batch delivered twice stores nothing the second time).
    """
    return checks_record(outcomes=checks_probe(slots=slots))


@transaction.atomic
def checks_record(*, outcomes: Sequence[CheckOutcome]) -> int:
    """Store check results once per slot, add them to the rollups, move statuses and
    incidents, then queue the notifications; returns how many results were stored."""
    if not outcomes:
        return 0
    stored = checks_store(outcomes=outcomes)
    rollups_add(checks=stored.checks)
    crossed = certificates_advance(endpoints=stored.endpoints, outcomes=stored.outcomes)
    moved = incidents_advance(endpoints=stored.endpoints, outcomes=stored.outcomes)
    notifications_queue(opened=moved.opened, resolved=moved.resolved, endpoints=stored.endpoints)
    escalations_start(opened=moved.opened, endpoints=stored.endpoints)
    degradations_queue(changes=moved.changes, endpoints=stored.endpoints)
    certificate_notifications_queue(warnings=crossed, endpoints=stored.endpoints)
    return len(stored.outcomes)
