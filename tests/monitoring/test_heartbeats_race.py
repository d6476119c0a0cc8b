"""Deadline loops racing each other flip each heartbeat once (PostgreSQL row locks)."""

from datetime import UTC, datetime, timedelta

import pytest

from accounts.services import organization_create
from monitoring.models import Endpoint, EndpointStatus, Incident, StatusChange
from monitoring.services import endpoint_create
from monitoring.validation import validate_config
from pipeline.heartbeats import heartbeat_deadlines_run
from tests.concurrency import race

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgres("row locks"),
]

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
COUNT = 40


def _up_heartbeats() -> list[Endpoint]:
    _, project = organization_create(name="Acme")
    config = validate_config("heartbeat", {"grace_seconds": 60})
    beats = [
        endpoint_create(
            project=project,
            name=f"Job {n}",
            type="heartbeat",
            target="",
            config=config,
            failure_threshold=1,
        )
        for n in range(COUNT)
    ]
    Endpoint.objects.filter(pk__in=[b.pk for b in beats]).update(
        status=EndpointStatus.UP,
        last_checked_at=T0,
        late_after=T0 + timedelta(seconds=60),
        alert_after=T0 + timedelta(seconds=120),
    )
    return beats


def _loop(now: datetime, counts: list[tuple[int, int]]):
    def run() -> int:
        counts.append(heartbeat_deadlines_run(now=now))
        return 0

    return run


def test_two_loops_racing_flip_each_heartbeat_once():
    _up_heartbeats()
    late: list[tuple[int, int]] = []
    down: list[tuple[int, int]] = []

    race(*[_loop(T0 + timedelta(seconds=61), late) for _ in range(2)])
    race(*[_loop(T0 + timedelta(seconds=121), down) for _ in range(2)])

    assert sum(n for n, _ in late) == COUNT
    assert sum(n for _, n in down) == COUNT
    assert Incident.objects.count() == COUNT
    assert Endpoint.objects.filter(status=EndpointStatus.DOWN).count() == COUNT
    for to_status in (EndpointStatus.LATE, EndpointStatus.DOWN):
        assert StatusChange.objects.filter(to_status=to_status).count() == COUNT
