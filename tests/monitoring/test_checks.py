"""Recording checks: stored once per slot, statuses, confirmation and incidents."""

from datetime import UTC, datetime, timedelta

import pytest

from monitoring.checks import CheckOutcome
from monitoring.models import CheckResult, EndpointStatus, Incident, StatusChange
from monitoring.probes import ProbeResult
from monitoring.services import endpoint_set_enabled
from pipeline.checks import checks_record

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def endpoint(cast, make_endpoint):
    return make_endpoint(cast.project, interval_seconds=30)


def outcome(endpoint, n, ok=True, ms=12.5, error=None):
    """The n-th check of an endpoint, 30 s apart."""
    at = T0 + timedelta(seconds=30 * n)
    result = ProbeResult(
        ok=ok,
        response_time_ms=ms,
        status_detail="HTTP 200" if ok else "HTTP 503",
        error="" if ok else (error or f"unexpected status 503 (#{n})"),
    )
    return CheckOutcome(endpoint.pk, at, at, result)


def record(*outcomes):
    return checks_record(outcomes=list(outcomes))


def test_a_check_is_stored_with_its_result_and_moves_a_pending_endpoint_up(endpoint):
    assert record(outcome(endpoint, 0, ms=42.0)) == 1

    check = CheckResult.objects.get()
    assert (check.ok, check.response_time_ms, check.status_detail) == (True, 42.0, "HTTP 200")
    assert check.checked_at == T0
    endpoint.refresh_from_db()
    assert endpoint.status == EndpointStatus.UP
    assert endpoint.last_checked_at == T0
    change = StatusChange.objects.get()
    assert (change.from_status, change.to_status, change.changed_at) == ("pending", "up", T0)


def test_a_batch_delivered_twice_stores_each_slot_once(endpoint, cast, make_endpoint):
    other = make_endpoint(cast.project, name="Other")
    batch = [outcome(endpoint, 0), outcome(other, 0, ok=False), outcome(endpoint, 1)]

    assert record(*batch) == 3
    assert record(*batch) == 0
    assert record(*batch, outcome(endpoint, 2)) == 1

    assert CheckResult.objects.count() == 4
    endpoint.refresh_from_db()
    assert endpoint.streak_length == 3  # a redelivery moved no counter


def test_one_failure_below_the_threshold_opens_nothing(endpoint):
    record(outcome(endpoint, 0))
    record(outcome(endpoint, 1, ok=False))

    endpoint.refresh_from_db()
    assert endpoint.status == EndpointStatus.UP
    assert not Incident.objects.exists()


def test_consecutive_failures_open_one_incident_from_the_first_failure(endpoint):
    record(outcome(endpoint, 0))
    record(outcome(endpoint, 1, ok=False, error="connection refused"))
    record(outcome(endpoint, 2, ok=False, error="timed out after 10 s"))
    record(outcome(endpoint, 3, ok=False))

    incident = Incident.objects.get()
    assert incident.started_at == T0 + timedelta(seconds=30)
    assert incident.cause == "connection refused"
    assert incident.resolved_at is None
    endpoint.refresh_from_db()
    assert endpoint.status == EndpointStatus.DOWN
    assert list(
        StatusChange.objects.order_by("changed_at").values_list("to_status", flat=True)
    ) == [
        "up",
        "down",
    ]


def test_a_success_resolves_the_incident_at_the_first_success(endpoint):
    record(outcome(endpoint, 0, ok=False), outcome(endpoint, 1, ok=False))
    record(outcome(endpoint, 2))

    incident = Incident.objects.get()
    assert incident.resolved_at == T0 + timedelta(seconds=60)
    assert incident.duration_seconds == 60
    endpoint.refresh_from_db()
    assert endpoint.status == EndpointStatus.UP


def test_thresholds_are_per_endpoint(cast, make_endpoint):
    strict = make_endpoint(cast.project, failure_threshold=1, recovery_threshold=3)

    record(outcome(strict, 0, ok=False))
    assert Incident.objects.open().count() == 1
    record(outcome(strict, 1), outcome(strict, 2))
    strict.refresh_from_db()
    assert strict.status == EndpointStatus.DOWN  # two successes of three
    record(outcome(strict, 3, ok=False), outcome(strict, 4), outcome(strict, 5))
    assert Incident.objects.open().count() == 1  # the failure restarted the recovery count
    record(outcome(strict, 6))

    incident = Incident.objects.get()
    assert incident.resolved_at == T0 + timedelta(seconds=30 * 4)
    strict.refresh_from_db()
    assert strict.status == EndpointStatus.UP


def test_a_slow_success_is_degraded_when_a_threshold_is_set(cast, make_endpoint):
    endpoint = make_endpoint(cast.project, config={"degraded_above_ms": 100})

    record(outcome(endpoint, 0, ms=250.0))
    endpoint.refresh_from_db()
    assert endpoint.status == EndpointStatus.DEGRADED
    record(outcome(endpoint, 1, ms=80.0))
    endpoint.refresh_from_db()
    assert endpoint.status == EndpointStatus.UP


def test_a_result_arriving_after_a_pause_is_stored_but_moves_nothing(endpoint):
    record(outcome(endpoint, 0, ok=False), outcome(endpoint, 1, ok=False))
    endpoint_set_enabled(endpoint=endpoint, enabled=False)

    record(outcome(endpoint, 2))

    endpoint.refresh_from_db()
    assert endpoint.status == EndpointStatus.PAUSED
    assert CheckResult.objects.count() == 3
    incident = Incident.objects.get()
    assert incident.resolved_at is not None  # pausing ended the watched downtime


def test_a_late_result_older_than_the_last_applied_moves_nothing(endpoint):
    record(outcome(endpoint, 5))
    record(outcome(endpoint, 3, ok=False), outcome(endpoint, 4, ok=False))

    endpoint.refresh_from_db()
    assert endpoint.status == EndpointStatus.UP
    assert endpoint.last_checked_at == T0 + timedelta(seconds=150)
    assert not Incident.objects.exists()
    assert CheckResult.objects.count() == 3


def test_results_of_a_deleted_endpoint_are_dropped(endpoint):
    pending = outcome(endpoint, 0)
    endpoint.delete()

    assert record(pending) == 0
    assert not CheckResult.objects.exists()


def test_retargeting_resets_the_status_and_closes_the_incident(api, cast, endpoint):
    record(outcome(endpoint, 0, ok=False), outcome(endpoint, 1, ok=False))

    response = api.as_user(cast.owner).patch(
        f"/api/v1/endpoints/{endpoint.id}", {"target": "https://example.org/health"}, format="json"
    )

    assert response.status_code == 200
    assert response.json()["status"] == "pending"
    assert Incident.objects.get().resolved_at is not None
    endpoint.refresh_from_db()
    assert (endpoint.streak_length, endpoint.streak_ok) == (0, None)
    assert StatusChange.objects.filter(from_status="down", to_status="pending").count() == 1


def test_pause_and_resume_are_status_changes(api, cast, endpoint):
    api.as_user(cast.owner).post(f"/api/v1/endpoints/{endpoint.id}/pause")
    api.post(f"/api/v1/endpoints/{endpoint.id}/resume")

    moves = list(
        StatusChange.objects.order_by("changed_at").values_list("from_status", "to_status")
    )
    assert moves == [("pending", "paused"), ("paused", "pending")]


def test_status_detail_and_error_of_a_check_are_what_the_probe_said(endpoint):
    record(outcome(endpoint, 0, ok=False, error="TLS certificate verification failed: expired"))

    check = CheckResult.objects.get()
    assert (check.ok, check.error) == (False, "TLS certificate verification failed: expired")


def test_a_check_begun_before_a_retarget_moves_nothing(api, cast, make_endpoint):
    endpoint = make_endpoint(cast.project, failure_threshold=1)
    record(outcome(endpoint, 0))
    in_flight = CheckOutcome(
        endpoint.pk,
        datetime.now(UTC) - timedelta(seconds=5),  # claimed before the change below
        T0 + timedelta(minutes=5),
        ProbeResult(ok=False, response_time_ms=3.0, error="connection refused"),
    )

    api.as_user(cast.owner).patch(
        f"/api/v1/endpoints/{endpoint.id}", {"target": "https://example.org/"}, format="json"
    )
    record(in_flight)

    endpoint.refresh_from_db()
    assert endpoint.status == EndpointStatus.PENDING
    assert not Incident.objects.exists()
    assert CheckResult.objects.count() == 2  # stored all the same


def test_a_check_begun_before_a_pause_and_resume_does_not_count_as_the_first_new_one(
    api, cast, endpoint
):
    in_flight = CheckOutcome(
        endpoint.pk,
        datetime.now(UTC) - timedelta(seconds=5),
        T0,
        ProbeResult(ok=True, response_time_ms=3.0, status_detail="HTTP 200"),
    )
    api.as_user(cast.owner).post(f"/api/v1/endpoints/{endpoint.id}/pause")
    api.post(f"/api/v1/endpoints/{endpoint.id}/resume")

    record(in_flight)

    endpoint.refresh_from_db()
    assert endpoint.status == EndpointStatus.PENDING


def test_a_batch_of_endpoints_going_down_writes_in_a_bounded_number_of_queries(
    cast, make_endpoint, django_assert_max_num_queries
):
    endpoints = [make_endpoint(cast.project, name=f"E{n}", failure_threshold=1) for n in range(40)]
    record(*(outcome(e, 0) for e in endpoints))

    # 12, two for notifications (the projects' organizations, their channels: none), one
    # for escalation policies (none), and one for the fold (its watermark; on PostgreSQL the
    # share of its lock).
    with django_assert_max_num_queries(16):
        record(*(outcome(e, 1, ok=False) for e in endpoints))

    assert Incident.objects.open().count() == 40
    assert StatusChange.objects.filter(to_status="down").count() == 40
