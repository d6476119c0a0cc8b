"""Escalation loops racing each other send each step and reminder once (PostgreSQL row
locks and the conditional UPDATE; the outbox's unique key behind them)."""

import json
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from accounts.services import project_create
from alerts import services
from alerts.escalation_validation import StepInput
from alerts.models import Delivery, NotificationEvent
from alerts.services import escalations_run
from monitoring.models import ActivityKind, IncidentActivity
from tests.alerts.receiver import webhook
from tests.concurrency import race

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgres("row locks, SKIP LOCKED, threads on separate connections"),
    pytest.mark.usefixtures("loopback_allowed"),
]

T0 = datetime(2030, 3, 4, 10, 0, tzinfo=UTC)
COUNT = 12


def _loop(now: datetime, counts: list[int]):
    def run() -> int:
        counts.append(escalations_run(now=now))
        return 0

    return run


def test_two_loops_racing_send_each_step_once(cast, make_endpoint, record, receiver):
    elsewhere = project_create(organization=cast.org, name="Elsewhere")
    pager = webhook(cast, receiver.url, name="Pager", projects=[elsewhere])
    services.escalation_policy_create(
        organization=cast.org,
        name="Everyone",
        steps=[StepInput(0, (pager,)), StepInput(5, (pager,)), StepInput(15, (pager,))],
        repeat_every_minutes=30,
    )
    for n in range(COUNT):
        endpoint = make_endpoint(cast.project, name=f"Service {n}", failure_threshold=1)
        record(endpoint, [(T0, False, 20.0)])

    counts: list[int] = []
    for minutes in (0.1, 5, 15, 45):
        race(*[_loop(T0 + timedelta(minutes=minutes), counts) for _ in range(3)])

    assert sum(counts) == COUNT * 4
    sent = Counter(
        (body["incident"]["id"], body["escalation"]["step"], body["escalation"]["reminder"])
        for body in (json.loads(r.body) for r in receiver.requests)
    )
    assert len(sent) == COUNT * 4
    assert set(sent.values()) == {1}
    assert Delivery.objects.filter(event=NotificationEvent.ESCALATED).count() == COUNT * 4
    # The loop's own lines (each delivery adds its outcome line too).
    steps = IncidentActivity.objects.filter(
        kind__in=[ActivityKind.ESCALATED, ActivityKind.REMINDED]
    )
    assert steps.count() == COUNT * 4
