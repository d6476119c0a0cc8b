"""A healthy job's success ping is stored at once and processed by the deadline loop:
what the ping view writes, what the loop makes of it, and the rule that a pending ping
keeps its heartbeat from going late."""

import threading
import time
from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest
import time_machine
from django.db import connections, transaction

from monitoring.heartbeats import heartbeats_claim_overdue, heartbeats_flip_late
from monitoring.models import CheckResult, Endpoint, EndpointStatus, Incident, Ping
from monitoring.services import EndpointChanges, endpoint_update, endpoints_set_enabled
from pipeline.heartbeats import heartbeat_deadlines_run, pings_process

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def heartbeat(api, cast):
    return up_heartbeat(api, cast)


def up_heartbeat(api, cast):
    """A heartbeat made through the API at T0 (60 s period, 60 s grace), pinged once at T0:
    `up`, late at T0 + 60 s."""
    body = {
        "project": str(cast.project.id),
        "name": "Nightly backup",
        "type": "heartbeat",
        "interval_seconds": 60,
        "config": {"grace_seconds": 60},
    }
    with time_machine.travel(T0, tick=False):
        response = api.as_user(cast.owner).post("/api/v1/endpoints", body, format="json")
    assert response.status_code == 201, response.content
    endpoint = Endpoint.objects.get(pk=response.json()["id"])
    assert ping(api, endpoint, at=T0).status_code == 200
    endpoint.refresh_from_db()
    assert (endpoint.status, endpoint.late_after) == (EndpointStatus.UP, T0 + timedelta(seconds=60))
    return endpoint


def ping(client, endpoint, suffix="", *, at):
    with time_machine.travel(at, tick=False):
        return client.get(f"/ping/{endpoint.ping_key}{suffix}")


def test_an_up_heartbeats_success_ping_is_one_statement(api, heartbeat, django_assert_num_queries):
    with django_assert_num_queries(1):
        response = ping(api, heartbeat, at=T0 + timedelta(seconds=10))

    assert (response.status_code, response.content) == (200, b"OK")
    stored = Ping.objects.get(received_at=T0 + timedelta(seconds=10))
    assert stored.pending
    assert CheckResult.objects.count() == 1  # the first ping's: this one is not processed yet


def test_the_loop_turns_pending_pings_into_checks_and_deadlines(api, heartbeat):
    for seconds in (10, 20, 30):
        ping(api, heartbeat, at=T0 + timedelta(seconds=seconds))

    assert heartbeat_deadlines_run(now=T0 + timedelta(seconds=31)) == (0, 0)

    assert not Ping.objects.filter(pending=True).exists()
    times = CheckResult.objects.order_by("checked_at").values_list("checked_at", "ok")
    assert list(times) == [(T0 + timedelta(seconds=s), True) for s in (0, 10, 20, 30)]
    heartbeat.refresh_from_db()
    assert heartbeat.last_checked_at == T0 + timedelta(seconds=30)
    assert heartbeat.late_after == T0 + timedelta(seconds=90)
    assert heartbeat.alert_after == T0 + timedelta(seconds=150)
    assert pings_process() == 0  # processed once


def test_a_pending_ping_keeps_its_heartbeat_from_going_late(api, heartbeat):
    ping(api, heartbeat, at=T0 + timedelta(seconds=59))  # stored, not processed

    with transaction.atomic():
        assert heartbeats_flip_late(now=T0 + timedelta(seconds=60)) == []
    heartbeat.refresh_from_db()
    assert heartbeat.status == EndpointStatus.UP

    assert heartbeat_deadlines_run(now=T0 + timedelta(seconds=60)) == (0, 0)
    heartbeat.refresh_from_db()
    assert (heartbeat.status, heartbeat.late_after) == ("up", T0 + timedelta(seconds=119))


def test_a_pending_ping_keeps_a_late_heartbeat_from_going_down(api, heartbeat):
    assert heartbeat_deadlines_run(now=T0 + timedelta(seconds=60)) == (1, 0)
    # A ping that read the heartbeat `up` just before the loop flipped it, stored after.
    Ping.objects.create(
        endpoint=heartbeat,
        kind="success",
        received_at=T0 + timedelta(seconds=60),
        method="GET",
        pending=True,
    )

    with transaction.atomic():
        assert heartbeats_claim_overdue(now=T0 + timedelta(seconds=120)) == []

    # The loop processes the ping (late -> up, due again at T0 + 120 s), then flips it late.
    assert heartbeat_deadlines_run(now=T0 + timedelta(seconds=120)) == (1, 0)
    heartbeat.refresh_from_db()
    assert (heartbeat.status, heartbeat.alert_after) == ("late", T0 + timedelta(seconds=180))
    assert not Incident.objects.exists()


def test_a_run_timed_by_two_pending_pings_has_its_duration(api, heartbeat):
    rid = uuid4()
    ping(api, heartbeat, f"/start?rid={rid}", at=T0 + timedelta(seconds=10))
    ping(api, heartbeat, "/start", at=T0 + timedelta(seconds=20))
    ping(api, heartbeat, f"?rid={rid}", at=T0 + timedelta(seconds=52.5))
    assert Ping.objects.filter(pending=True).count() == 3

    heartbeat_deadlines_run(now=T0 + timedelta(seconds=53))

    end = Ping.objects.get(kind="success", rid=rid)
    assert end.duration_ms == 42_500.0
    assert CheckResult.objects.get(checked_at=end.received_at).response_time_ms == 42_500.0


def test_a_run_started_before_an_earlier_loop_is_paired_after_it(api, heartbeat):
    ping(api, heartbeat, "/start", at=T0 + timedelta(seconds=10))
    heartbeat_deadlines_run(now=T0 + timedelta(seconds=11))
    ping(api, heartbeat, at=T0 + timedelta(seconds=15))
    ping(api, heartbeat, at=T0 + timedelta(seconds=16))

    heartbeat_deadlines_run(now=T0 + timedelta(seconds=17))

    durations = Ping.objects.filter(kind="success").order_by("received_at")
    assert list(durations.values_list("duration_ms", flat=True)) == [None, 5000.0, None]


def test_a_failure_ping_processes_the_pending_pings_before_it_in_order(api, heartbeat):
    ping(api, heartbeat, at=T0 + timedelta(seconds=10))  # pending

    ping(api, heartbeat, "/3", at=T0 + timedelta(seconds=20))  # processed in the request

    assert not Ping.objects.filter(pending=True).exists()
    checks = CheckResult.objects.order_by("checked_at").values_list("checked_at", "ok")
    assert list(checks)[1:] == [
        (T0 + timedelta(seconds=10), True),
        (T0 + timedelta(seconds=20), False),
    ]
    heartbeat.refresh_from_db()
    assert heartbeat.status == EndpointStatus.DOWN
    incident = Incident.objects.get()
    assert (incident.cause, incident.started_at) == ("exit status 3", T0 + timedelta(seconds=20))
    assert heartbeat.late_after == T0 + timedelta(seconds=80)


def test_a_ping_processed_after_a_later_one_moves_no_deadline_back(api, heartbeat):
    ping(api, heartbeat, at=T0 + timedelta(seconds=30))
    heartbeat_deadlines_run(now=T0 + timedelta(seconds=31))
    # A ping received earlier whose INSERT committed late.
    Ping.objects.create(
        endpoint=heartbeat,
        kind="success",
        received_at=T0 + timedelta(seconds=20),
        method="GET",
        pending=True,
    )

    heartbeat_deadlines_run(now=T0 + timedelta(seconds=32))

    heartbeat.refresh_from_db()
    assert heartbeat.late_after == T0 + timedelta(seconds=90)
    assert heartbeat.last_checked_at == T0 + timedelta(seconds=30)
    assert CheckResult.objects.count() == 3


def test_a_paused_heartbeats_ping_is_stored_and_never_processed(api, cast, heartbeat):
    owner = api.as_user(cast.owner)
    assert owner.patch(f"/api/v1/endpoints/{heartbeat.pk}", {"enabled": False}).status_code == 200

    ping(api, heartbeat, at=T0 + timedelta(seconds=10))

    assert not Ping.objects.get(received_at=T0 + timedelta(seconds=10)).pending
    assert CheckResult.objects.count() == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres("row locks")
def test_a_ping_is_stored_while_the_pipeline_holds_its_heartbeat(api, cast):
    """The pipeline locks endpoints FOR NO KEY UPDATE: a ping's INSERT (whose foreign key
    takes a KEY SHARE lock on the endpoint) does not wait for a batch to commit."""
    body = {"project": str(cast.project.id), "name": "Job", "type": "heartbeat"}
    created = api.as_user(cast.owner).post("/api/v1/endpoints", body, format="json")
    endpoint = Endpoint.objects.get(pk=created.json()["id"])
    assert api.get(f"/ping/{endpoint.ping_key}").status_code == 200  # up now
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        try:
            with transaction.atomic():
                from monitoring.checks import CheckOutcome, checks_store
                from monitoring.probes import ProbeResult

                now = datetime.now(UTC)
                outcome = CheckOutcome(endpoint.pk, now, now, ProbeResult(True, 1.0))
                checks_store(outcomes=[outcome])
                holding.set()
                release.wait(10)
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(10)
        started = time.monotonic()
        response = api.get(f"/ping/{endpoint.ping_key}")
        waited = time.monotonic() - started
    finally:
        release.set()
        holder.join()
    assert response.status_code == 200
    assert waited < 2, f"the ping waited {waited:.1f} s for the pipeline's lock"


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres("row locks")
def test_two_loops_racing_process_each_pending_ping_once(api, cast):
    body = {"project": str(cast.project.id), "name": "Job", "type": "heartbeat"}
    created = api.as_user(cast.owner).post("/api/v1/endpoints", body, format="json")
    endpoint = Endpoint.objects.get(pk=created.json()["id"])
    api.get(f"/ping/{endpoint.ping_key}")
    for n in range(50):
        Ping.objects.create(
            endpoint=endpoint,
            kind="success",
            received_at=datetime.now(UTC) + timedelta(milliseconds=n + 1),
            method="GET",
            pending=True,
        )
    from tests.concurrency import race

    race(pings_process, pings_process)

    assert not Ping.objects.filter(pending=True).exists()
    assert CheckResult.objects.count() == 51


def test_a_too_short_run_of_an_up_heartbeat_fails_when_the_loop_processes_it(api, cast):
    body = {
        "project": str(cast.project.id),
        "name": "Import",
        "type": "heartbeat",
        "config": {"min_run_seconds": 60},
    }
    with time_machine.travel(T0, tick=False):
        created = api.as_user(cast.owner).post("/api/v1/endpoints", body, format="json")
    endpoint = Endpoint.objects.get(pk=created.json()["id"])
    ping(api, endpoint, at=T0)  # up
    ping(api, endpoint, "/start", at=T0 + timedelta(seconds=10))
    ping(api, endpoint, at=T0 + timedelta(seconds=12))

    heartbeat_deadlines_run(now=T0 + timedelta(seconds=13))

    endpoint.refresh_from_db()
    assert endpoint.status == EndpointStatus.DOWN
    incident = Incident.objects.get()
    assert (incident.cause, incident.started_at) == (
        "finished too fast",
        T0 + timedelta(seconds=12),
    )


def test_a_first_run_that_never_ends_goes_late_then_down(api, cast):
    body = {
        "project": str(cast.project.id),
        "name": "First import",
        "type": "heartbeat",
        "interval_seconds": 3600,
        "config": {"grace_seconds": 60},
    }
    with time_machine.travel(T0, tick=False):
        created = api.as_user(cast.owner).post("/api/v1/endpoints", body, format="json")
    endpoint = Endpoint.objects.get(pk=created.json()["id"])
    ping(api, endpoint, "/start", at=T0)  # pending: its first ping is a start

    assert heartbeat_deadlines_run(now=T0 + timedelta(seconds=59)) == (0, 0)
    assert heartbeat_deadlines_run(now=T0 + timedelta(seconds=60)) == (1, 1)

    endpoint.refresh_from_db()
    assert endpoint.status == EndpointStatus.DOWN
    assert Incident.objects.get().cause == "started at 2030-01-01 12:00:00 UTC, never finished"
    moves = endpoint.status_changes.order_by("changed_at", "id")
    assert list(moves.values_list("from_status", "to_status"))[-2:] == [
        ("pending", "late"),
        ("late", "down"),
    ]


def test_a_start_before_a_pause_times_no_run_after_the_resume(api, heartbeat):
    ping(api, heartbeat, "/start", at=T0 + timedelta(seconds=10))
    heartbeat_deadlines_run(now=T0 + timedelta(seconds=11))
    this = Endpoint.objects.filter(pk=heartbeat.pk)
    for seconds, enabled in ((20, False), (30, True)):
        with time_machine.travel(T0 + timedelta(seconds=seconds), tick=False):
            endpoints_set_enabled(endpoints=this, enabled=enabled)
    ping(api, heartbeat, at=T0 + timedelta(seconds=35))  # its first ping since: processed now

    ping(api, heartbeat, at=T0 + timedelta(seconds=40))
    heartbeat_deadlines_run(now=T0 + timedelta(seconds=41))

    end = Ping.objects.get(received_at=T0 + timedelta(seconds=35))
    assert end.duration_ms is None
    assert CheckResult.objects.get(checked_at=end.received_at).response_time_ms is None


def test_a_shorter_period_reschedules_from_the_latest_ping(api, cast, heartbeat):
    ping(api, heartbeat, "/0", at=T0 + timedelta(seconds=30))  # processed: not quiet ("/0")
    heartbeat_deadlines_run(now=T0 + timedelta(seconds=31))
    heartbeat.refresh_from_db()
    assert heartbeat.late_after == T0 + timedelta(seconds=90)

    with time_machine.travel(T0 + timedelta(seconds=40), tick=False):
        endpoint_update(
            endpoint=Endpoint.objects.get(pk=heartbeat.pk),
            changes=EndpointChanges(interval_seconds=3600, config={"grace_seconds": 600}),
        )

    heartbeat.refresh_from_db()
    assert heartbeat.late_after == T0 + timedelta(seconds=3630)
    assert heartbeat.alert_after == T0 + timedelta(seconds=4230)


def test_a_late_heartbeat_given_more_time_is_up_again(api, heartbeat):
    assert heartbeat_deadlines_run(now=T0 + timedelta(seconds=60)) == (1, 0)

    with time_machine.travel(T0 + timedelta(seconds=70), tick=False):
        endpoint_update(
            endpoint=Endpoint.objects.get(pk=heartbeat.pk),
            changes=EndpointChanges(interval_seconds=600),
        )

    heartbeat.refresh_from_db()
    assert (heartbeat.status, heartbeat.late_after) == ("up", T0 + timedelta(seconds=600))
    moves = heartbeat.status_changes.order_by("changed_at", "id")
    assert list(moves.values_list("to_status", "reason"))[-1] == ("up", "schedule changed")
    assert heartbeat_deadlines_run(now=T0 + timedelta(seconds=71)) == (0, 0)
