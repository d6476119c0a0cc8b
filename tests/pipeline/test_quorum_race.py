"""Two locations' results of one round stored at the same moment, and sweeps racing each
other and the pipeline: each round is judged once (PostgreSQL row locks)."""

from datetime import UTC, datetime, timedelta

import pytest

from accounts.services import organization_create
from analytics.models import FiveMinuteRollup
from monitoring.checks import CheckOutcome
from monitoring.models import CheckResult, Endpoint, EndpointStatus, Incident, PendingRound
from monitoring.probes import ProbeResult
from monitoring.services import endpoint_create
from monitoring.validation import validate_config
from pipeline.checks import checks_record, rounds_judge_due
from tests.concurrency import race

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgres("row locks, SKIP LOCKED"),
]

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
COUNT = 30
ROUNDS = 3


def _endpoints() -> list[Endpoint]:
    _, project = organization_create(name="Acme")
    config = validate_config("http", {})
    made = [
        endpoint_create(
            project=project,
            name=f"Site {n}",
            type="http",
            target=f"https://example.com/{n}",
            config=config,
            interval_seconds=30,
            timeout_seconds=10,
            failure_threshold=1,
        )
        for n in range(COUNT)
    ]
    Endpoint.objects.update(
        locations=["eu-west", "us-east"], config_masked={**config, "quorum": "all"}
    )
    return made


def _batch(endpoints: list[Endpoint], location: str, n: int, ok: bool) -> list[CheckOutcome]:
    slot = T0 + timedelta(seconds=30 * n)
    result = ProbeResult(ok, 15.0, error="" if ok else "connection refused")
    return [
        CheckOutcome(e.pk, slot, slot, result, location=location, expected=2) for e in endpoints
    ]


def _record(outcomes: list[CheckOutcome]):
    def run() -> int:
        return checks_record(outcomes=outcomes)

    return run


def test_two_locations_batches_of_one_round_at_once_make_one_verdict():
    endpoints = _endpoints()

    for n in range(ROUNDS):
        stored = race(
            _record(_batch(endpoints, "eu-west", n, ok=False)),
            _record(_batch(endpoints, "us-east", n, ok=False)),
        )
        assert stored == [COUNT, COUNT]

    assert CheckResult.objects.count() == COUNT * 2 * ROUNDS
    assert not PendingRound.objects.exists()
    for endpoint in Endpoint.objects.all():
        assert (endpoint.streak_ok, endpoint.streak_length) == (False, ROUNDS)
        assert endpoint.status == EndpointStatus.DOWN
        assert endpoint.last_round_at == T0 + timedelta(seconds=30 * (ROUNDS - 1))
    assert Incident.objects.count() == COUNT
    assert sum(FiveMinuteRollup.objects.values_list("count", flat=True)) == COUNT * ROUNDS


def test_sweeps_racing_the_last_location_judge_each_round_once():
    endpoints = _endpoints()
    checks_record(outcomes=_batch(endpoints, "eu-west", 0, ok=True))
    assert PendingRound.objects.count() == COUNT
    due = T0 + timedelta(seconds=40)

    def sweep() -> int:
        return rounds_judge_due(now=due)[1]

    race(sweep, sweep, _record(_batch(endpoints, "us-east", 0, ok=True)))
    while PendingRound.objects.exists():  # rounds a busy pipeline made the sweeps skip
        rounds_judge_due(now=due)

    assert sum(FiveMinuteRollup.objects.values_list("count", flat=True)) == COUNT
    for endpoint in Endpoint.objects.all():
        assert (endpoint.status, endpoint.streak_length) == (EndpointStatus.UP, 1)
        assert endpoint.last_round_at == T0
