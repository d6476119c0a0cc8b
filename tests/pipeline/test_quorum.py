"""Multi-location rounds: each location's result stored, one verdict per round against the
endpoint's quorum, waiting rounds judged by the sweep, and a verdict applied once."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.utils import timezone

from alerts.messages.documents import event_document
from alerts.messages.text import headline, mail_body
from alerts.models import NotificationEvent
from analytics.models import DayRollup, FiveMinuteRollup
from analytics.services import rollups_rebuild
from monitoring.checks import CheckOutcome
from monitoring.locations import stored_slug
from monitoring.models import CheckResult, Endpoint, EndpointStatus, Incident, PendingRound
from monitoring.probes import ProbeResult
from pipeline.checks import checks_record, rounds_judge_due
from pipeline.tasks import judge_pending_rounds, run_checks

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
INTERVAL = 30
TIMEOUT = 10


def located(endpoint, *slugs, quorum="majority", **fields):
    """The endpoint probed from these locations with this quorum. The API's validation of
    both is another part of the work (loc_api): the pipeline reads only `config_masked`."""
    config = {**endpoint.config_masked, "quorum": quorum}
    Endpoint.objects.filter(pk=endpoint.pk).update(
        locations=list(slugs), config_masked=config, **fields
    )
    endpoint.refresh_from_db()
    return endpoint


@pytest.fixture
def endpoint(cast, make_endpoint):
    made = make_endpoint(cast.project, interval_seconds=INTERVAL, timeout_seconds=TIMEOUT)
    return located(made, "eu-west", "us-east")


def slot(n):
    return T0 + timedelta(seconds=INTERVAL * n)


def result(endpoint, n, location, ok=True, *, ms=20.0, error="connection refused", expected=2):
    """The n-th round's result of one location, checked a moment after its slot."""
    probe = ProbeResult(
        ok=ok,
        response_time_ms=ms,
        status_detail="HTTP 200" if ok else "",
        error="" if ok else error,
    )
    at = slot(n) + timedelta(milliseconds=len(location) * 10)
    return CheckOutcome(
        endpoint.pk, slot(n), at, probe, location=stored_slug(location), expected=expected
    )


def record(*outcomes):
    return checks_record(outcomes=list(outcomes))


def fresh(endpoint):
    endpoint.refresh_from_db()
    return endpoint


def test_majority_of_two_with_one_failing_is_degraded_naming_the_location(cast, make_endpoint):
    endpoint = located(
        make_endpoint(cast.project, failure_threshold=1), "eu-west", "us-east", quorum="majority"
    )

    assert record(result(endpoint, 0, "eu-west", ok=False)) == 1
    assert fresh(endpoint).status == EndpointStatus.PENDING  # one location of two: waits
    assert PendingRound.objects.filter(endpoint=endpoint).count() == 1
    assert record(result(endpoint, 0, "us-east")) == 1

    endpoint = fresh(endpoint)
    assert endpoint.status == EndpointStatus.DEGRADED
    assert not Incident.objects.exists()
    change = endpoint.status_changes.get()
    assert change.reason == "Failing in eu-west: connection refused"
    assert endpoint.last_round_at == slot(0)
    assert not PendingRound.objects.exists()
    stored = CheckResult.objects.order_by("location").values_list("location", "ok")
    assert list(stored) == [("eu-west", False), ("us-east", True)]
    # The degraded notification says why: some locations fail, not the response time.
    document = event_document(
        event=NotificationEvent.DEGRADED,
        event_id=change.pk,
        occurred_at=change.changed_at,
        incident=None,
        endpoint=endpoint,
        project_name=cast.project.name,
        change=change,
    )
    assert headline(document).endswith("is failing in some of its locations")
    assert "Last check: Failing in eu-west: connection refused" in mail_body(document)


def test_both_failing_over_the_threshold_open_one_incident_naming_both(endpoint, cast):
    assert endpoint.failure_threshold == 2
    for n in range(3):
        record(
            result(endpoint, n, "eu-west", ok=False, error="connection refused"),
            result(endpoint, n, "us-east", ok=False, error="timed out after 10 s"),
        )
        if n == 0:
            assert not Incident.objects.exists()  # one failed round of two

    incident = Incident.objects.get()
    assert incident.cause == "eu-west: connection refused; us-east: timed out after 10 s"
    assert incident.started_at == slot(0) + timedelta(milliseconds=70)  # the round's latest
    endpoint = fresh(endpoint)
    assert endpoint.status == EndpointStatus.DOWN
    assert endpoint.streak_length == 3  # rounds, not location checks
    # The notification names the failing locations through the incident's cause.
    document = event_document(
        event=NotificationEvent.OPENED,
        event_id=incident.pk,
        occurred_at=incident.started_at,
        incident=incident,
        endpoint=endpoint,
        project_name=cast.project.name,
    )
    assert "Cause: eu-west: connection refused; us-east: timed out after 10 s" in mail_body(
        document
    )


def test_a_round_of_failures_then_a_recovery_resolves_the_incident(endpoint):
    for n in range(2):
        record(result(endpoint, n, "eu-west", ok=False), result(endpoint, n, "us-east", ok=False))
    record(result(endpoint, 2, "eu-west"), result(endpoint, 2, "us-east"))

    incident = Incident.objects.get()
    assert incident.resolved_at is not None
    assert fresh(endpoint).status == EndpointStatus.UP


THREE = ("eu-west", "us-east", "ap-south")


@pytest.mark.parametrize(
    ("quorum", "failing", "down"),
    [
        ("any", 1, True),
        ("majority", 1, False),
        ("majority", 2, True),
        ("all", 2, False),
        ("all", 3, True),
        (2, 1, False),
        (2, 2, True),
        (1, 1, True),
    ],
)
def test_quorums_of_three_locations(cast, make_endpoint, quorum, failing, down):
    endpoint = located(make_endpoint(cast.project, failure_threshold=1), *THREE, quorum=quorum)

    record(
        *(result(endpoint, 0, slug, ok=i >= failing, expected=3) for i, slug in enumerate(THREE))
    )

    endpoint = fresh(endpoint)
    assert Incident.objects.exists() is down
    assert endpoint.status == (EndpointStatus.DOWN if down else EndpointStatus.DEGRADED)
    if down:
        names = THREE[:failing]
        assert Incident.objects.get().cause == "; ".join(
            f"{name}: connection refused" for name in sorted(names)
        )


def test_every_location_up_is_up_with_the_mean_response_time(endpoint):
    record(result(endpoint, 0, "eu-west", ms=10.0), result(endpoint, 0, "us-east", ms=30.0))

    assert fresh(endpoint).status == EndpointStatus.UP
    rollup = FiveMinuteRollup.objects.get()
    assert (rollup.count, rollup.failures, rollup.sum_ms) == (1, 0, 20.0)


def test_a_silent_location_is_left_out_by_the_sweep_at_judge_at(endpoint):
    record(result(endpoint, 0, "eu-west"))
    pending = PendingRound.objects.get()
    judge_at = slot(0) + timedelta(seconds=TIMEOUT + 30)
    assert (pending.scheduled_for, pending.expected, pending.judge_at) == (slot(0), 2, judge_at)

    assert rounds_judge_due(now=judge_at - timedelta(seconds=1)) == (0, 0)
    assert fresh(endpoint).status == EndpointStatus.PENDING
    with time_machine.travel(judge_at, tick=False):
        assert judge_pending_rounds() == 1  # the beat task

    endpoint = fresh(endpoint)
    assert endpoint.status == EndpointStatus.UP
    assert endpoint.last_round_at == slot(0)
    assert not PendingRound.objects.exists()
    assert not Incident.objects.exists()
    assert FiveMinuteRollup.objects.get().count == 1


def test_a_round_whose_batches_ran_late_still_waits_for_its_other_locations(cast, make_endpoint):
    endpoint = located(
        make_endpoint(cast.project, failure_threshold=1, timeout_seconds=TIMEOUT),
        "eu-west",
        "us-east",
    )
    late = slot(0) + timedelta(seconds=90)  # a queue backlog: both batches run 90 s late

    with time_machine.travel(late, tick=False):
        record(result(endpoint, 0, "eu-west", ok=False))
    assert PendingRound.objects.get().judge_at == late + timedelta(seconds=TIMEOUT + 30)
    assert rounds_judge_due(now=late + timedelta(seconds=5)) == (0, 0)  # not judged alone
    with time_machine.travel(late + timedelta(seconds=2), tick=False):
        record(result(endpoint, 0, "us-east"))

    assert fresh(endpoint).status == EndpointStatus.DEGRADED  # majority of 2: not down
    assert not Incident.objects.exists()


def test_the_one_location_that_answered_can_call_an_outage_alone(cast, make_endpoint):
    endpoint = located(
        make_endpoint(cast.project, failure_threshold=1), "eu-west", "us-east", quorum="all"
    )
    record(result(endpoint, 0, "eu-west", ok=False))

    rounds_judge_due(now=slot(0) + timedelta(seconds=TIMEOUT + 30))

    assert Incident.objects.get().cause == "eu-west: connection refused"


def test_a_round_sent_to_one_location_of_several_names_it_in_the_cause(cast, make_endpoint):
    # us-east offline: the dispatcher sent this round to eu-west alone (expected 1).
    endpoint = located(make_endpoint(cast.project, failure_threshold=1), "eu-west", "us-east")

    record(result(endpoint, 0, "eu-west", ok=False, expected=1))

    assert Incident.objects.get().cause == "eu-west: connection refused"
    assert CheckResult.objects.get().error == "connection refused"  # the check keeps its phrase


def test_a_late_result_of_a_judged_round_is_stored_and_judges_nothing(endpoint):
    record(result(endpoint, 0, "eu-west"))
    rounds_judge_due(now=slot(0) + timedelta(seconds=TIMEOUT + 30))
    before = fresh(endpoint)

    assert record(result(endpoint, 0, "us-east", ok=False)) == 1

    endpoint = fresh(endpoint)
    assert CheckResult.objects.filter(endpoint=endpoint).count() == 2
    assert (endpoint.status, endpoint.streak_ok, endpoint.streak_length) == (
        EndpointStatus.UP,
        True,
        1,
    )
    assert endpoint.last_checked_at == before.last_checked_at
    assert not PendingRound.objects.exists()  # a judged round waits for nothing
    rollup = FiveMinuteRollup.objects.get()
    assert (rollup.count, rollup.failures) == (1, 0)


def test_an_older_round_still_waiting_judges_nothing_once_a_newer_one_is_judged(endpoint):
    record(result(endpoint, 0, "eu-west", ok=False))
    record(result(endpoint, 1, "eu-west"), result(endpoint, 1, "us-east"))

    assert rounds_judge_due(now=slot(0) + timedelta(seconds=TIMEOUT + 30)) == (1, 0)
    endpoint = fresh(endpoint)
    assert (endpoint.status, endpoint.streak_length, endpoint.last_round_at) == (
        EndpointStatus.UP,
        1,
        slot(1),
    )


def test_a_duplicate_delivery_of_one_locations_batch_stores_once(endpoint, cast, make_endpoint):
    other = located(make_endpoint(cast.project, name="Other"), "eu-west", "us-east")
    batch = [result(endpoint, 0, "eu-west"), result(other, 0, "eu-west", ok=False)]

    assert record(*batch) == 2
    assert record(*batch) == 0
    assert CheckResult.objects.count() == 2
    assert PendingRound.objects.count() == 2

    second = [result(endpoint, 0, "us-east"), result(other, 0, "us-east")]
    assert record(*second) == 2
    assert record(*second) == 0

    assert CheckResult.objects.count() == 4
    assert not PendingRound.objects.exists()
    assert list(FiveMinuteRollup.objects.values_list("count", flat=True)) == [1, 1]
    assert (fresh(endpoint).streak_length, fresh(other).streak_length) == (1, 1)


def test_rollups_count_one_check_per_round_and_its_verdict(endpoint):
    for n in range(4):
        # round 2: both fail (a failed round); the others one location fails (degraded, ok)
        record(
            result(endpoint, n, "eu-west", ok=n == 0),
            result(endpoint, n, "us-east", ok=n != 2, ms=40.0),
        )

    assert CheckResult.objects.count() == 8
    day = DayRollup.objects.get()
    assert (day.count, day.failures) == (4, 1)
    assert day.sum_ms == (20.0 + 40.0) / 2 + 40.0 + 40.0  # means of the successful locations

    # Rebuilt from the raw checks, the rounds are judged again: the same figures.
    assert rollups_rebuild(endpoint_ids=[endpoint.pk], start=T0, end=T0 + timedelta(days=1)) == 4
    day = DayRollup.objects.get()
    assert (day.count, day.failures, day.sum_ms) == (4, 1, 110.0)


def test_a_single_location_round_is_its_own_verdict(cast, make_endpoint):
    endpoint = make_endpoint(cast.project, failure_threshold=1)

    record(result(endpoint, 0, "eu-west", ok=False, expected=1))

    assert Incident.objects.get().cause == "connection refused"
    assert fresh(endpoint).last_round_at is None
    assert not PendingRound.objects.exists()
    assert CheckResult.objects.get().location == "eu-west"


def test_a_degraded_round_says_which_locations_fail_and_how_slow_it_is(cast, make_endpoint):
    made = make_endpoint(cast.project, config={"degraded_above_ms": 100})
    endpoint = located(made, *THREE)

    record(
        result(endpoint, 0, "eu-west", ms=300.0, expected=3),
        result(endpoint, 0, "us-east", ms=200.0, expected=3),
        result(endpoint, 0, "ap-south", ok=False, error="timed out after 10 s", expected=3),
    )

    change = fresh(endpoint).status_changes.get()
    assert change.to_status == EndpointStatus.DEGRADED
    assert change.reason == "Failing in ap-south: timed out after 10 s; 250 ms (above 100 ms)"


def test_the_task_probes_from_its_location_and_reads_each_items_count(
    cast, make_endpoint, http_peer, settings
):
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = True
    endpoint = located(
        make_endpoint(cast.project, target=http_peer.url("/health")), "eu-west", "us-east"
    )
    now = timezone.now()  # after the endpoint was made: its checks are watched
    item = [str(endpoint.pk), now.isoformat(), 2]

    assert run_checks([item], location="eu-west") == 1
    assert PendingRound.objects.filter(endpoint=endpoint).exists()
    assert run_checks([item], location="us-east") == 1
    assert run_checks([item], location="us-east") == 0  # delivered twice

    endpoint = fresh(endpoint)
    assert (endpoint.status, endpoint.last_round_at) == (EndpointStatus.UP, now)
    assert set(CheckResult.objects.values_list("location", flat=True)) == {"eu-west", "us-east"}
    # an item of before locations (no count) is a round of the default location alone
    other = now - timedelta(seconds=1)  # past: probed at once
    assert run_checks([[str(endpoint.pk), other.isoformat()]]) == 1
    assert CheckResult.objects.get(scheduled_for=other).location == ""
    assert fresh(endpoint).last_round_at == now
