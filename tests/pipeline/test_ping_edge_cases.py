"""Edge cases of heartbeats found in review: odd input on the ping route, a ping stored a
moment after it was received, schedule edits of a late or running heartbeat, and the loop
meeting a row another transaction holds."""

import threading
import time
from datetime import timedelta

import pytest
import time_machine
from django.db import connections, transaction
from django.test import Client

from monitoring.heartbeats import heartbeats_flip_late
from monitoring.models import Endpoint, EndpointStatus, Incident, Ping
from monitoring.services import EndpointChanges, endpoint_update
from pipeline.heartbeats import heartbeat_deadlines_run
from pipeline.tasks import run_heartbeat_deadlines
from tests.pipeline.test_ping_processing import T0, ping, up_heartbeat


@pytest.fixture
def heartbeat(api, cast):
    """An `up` heartbeat pinged at T0, 60 s period and grace."""
    return up_heartbeat(api, cast)


def edit(endpoint, at, **changes):
    with time_machine.travel(at, tick=False):
        endpoint_update(
            endpoint=Endpoint.objects.get(pk=endpoint.pk), changes=EndpointChanges(**changes)
        )


# --- Odd input on the ping route: never a 500 ------------------------------------------------


def test_a_body_with_nul_bytes_is_stored(heartbeat):
    response = Client().post(f"/ping/{heartbeat.ping_key}/log", b"a\x00b", "text/plain")

    assert response.status_code == 200
    assert Ping.objects.get(kind="log").body == "a\ufffdb"


@pytest.mark.parametrize("action", ["\u00b2", "\u0663", "0" * 5000])
def test_an_exit_status_that_is_no_ascii_number_is_404(heartbeat, action):
    response = Client().get(f"/ping/{heartbeat.ping_key}/{action}")

    assert response.status_code == 404
    assert Ping.objects.count() == 1  # the fixture's


@pytest.mark.parametrize(
    ("forwarded", "stored"),
    [("not-an-ip", None), ("fe80::1%eth0", "fe80::1"), ("203.0.113.9", "203.0.113.9")],
)
def test_a_forwarded_address_is_stored_only_when_it_is_one(heartbeat, settings, forwarded, stored):
    settings.NUM_PROXIES = 1

    response = Client().get(f"/ping/{heartbeat.ping_key}/log", HTTP_X_FORWARDED_FOR=forwarded)

    assert response.status_code == 200
    assert Ping.objects.get(kind="log").client_ip == stored


# --- A ping stored a moment after it was received --------------------------------------------


def test_the_beat_task_waits_for_a_ping_received_just_before_the_grace_ran_out(heartbeat):
    assert heartbeat_deadlines_run(now=T0 + timedelta(seconds=60)) == (1, 0)  # late, due 120
    with time_machine.travel(T0 + timedelta(seconds=120.2), tick=False):
        run_heartbeat_deadlines()  # a ping received at 119.9 s may still be committing
    heartbeat.refresh_from_db()
    assert heartbeat.status == EndpointStatus.LATE

    Ping.objects.create(
        endpoint=heartbeat,
        kind="success",
        method="GET",
        pending=True,
        received_at=T0 + timedelta(seconds=119.9),
    )
    with time_machine.travel(T0 + timedelta(seconds=121.5), tick=False):
        run_heartbeat_deadlines()

    heartbeat.refresh_from_db()
    assert heartbeat.status == EndpointStatus.UP
    assert not Incident.objects.exists()


# --- Schedule edits ----------------------------------------------------------------------------


def test_a_late_heartbeat_whose_grace_is_cut_goes_down_with_an_incident(heartbeat):
    edit(heartbeat, T0 + timedelta(seconds=1), config={"grace_seconds": 3600})
    assert heartbeat_deadlines_run(now=T0 + timedelta(seconds=61)) == (1, 0)

    edit(heartbeat, T0 + timedelta(seconds=200), config={"grace_seconds": 60})  # due at 120
    assert heartbeat_deadlines_run(now=T0 + timedelta(seconds=202)) == (0, 1)

    heartbeat.refresh_from_db()
    assert heartbeat.status == EndpointStatus.DOWN
    assert Incident.objects.get().cause == "no ping since 2030-01-01 12:00:00 UTC"


def test_an_edit_during_a_run_keeps_the_runs_duration(api, heartbeat):
    ping(api, heartbeat, "/start", at=T0 + timedelta(seconds=10))
    heartbeat_deadlines_run(now=T0 + timedelta(seconds=11))
    edit(heartbeat, T0 + timedelta(seconds=20), config={"grace_seconds": 120})

    ping(api, heartbeat, at=T0 + timedelta(seconds=30))
    heartbeat_deadlines_run(now=T0 + timedelta(seconds=31))

    assert Ping.objects.get(received_at=T0 + timedelta(seconds=30)).duration_ms == 20_000.0


def test_saving_the_same_schedule_moves_no_deadline(api, heartbeat):
    heartbeat.refresh_from_db()
    before = (heartbeat.late_after, heartbeat.alert_after, heartbeat.watch_started_at)
    config = dict(heartbeat.config)

    edit(heartbeat, T0 + timedelta(seconds=30), name="Renamed", interval_seconds=60, config=config)

    heartbeat.refresh_from_db()
    assert (heartbeat.late_after, heartbeat.alert_after, heartbeat.watch_started_at) == before


# --- The loop meets a row another transaction holds -------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres("row locks")
def test_the_loop_skips_a_held_heartbeat_and_flips_it_next_run(api, cast):
    body = {"project": str(cast.project.id), "name": "Job", "type": "heartbeat"}
    with time_machine.travel(T0, tick=False):
        created = api.as_user(cast.owner).post("/api/v1/endpoints", body, format="json")
        api.get(f"/ping/{created.json()['id'] and Endpoint.objects.get().ping_key}")
    endpoint = Endpoint.objects.get()
    assert endpoint.status == EndpointStatus.UP
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        try:
            with transaction.atomic():
                list(Endpoint.objects.select_for_update().filter(pk=endpoint.pk))
                holding.set()
                release.wait(10)
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(10)
        started = time.monotonic()
        with transaction.atomic():
            skipped = heartbeats_flip_late(now=T0 + timedelta(days=1))
        waited = time.monotonic() - started
    finally:
        release.set()
        holder.join()
    with transaction.atomic():
        flipped = heartbeats_flip_late(now=T0 + timedelta(days=1))

    assert (skipped, flipped) == ([], [endpoint.pk])
    assert waited < 2, f"the loop waited {waited:.1f} s for a row lock"
