"""Heartbeats notify through the existing channels as probes do: a missed deadline tells
"no ping since <time>", an exit status tells "exit status 3", each once; a maintenance
window holds back what happens inside it."""

import json
from datetime import timedelta

import pytest
import time_machine
from django.core import mail

from alerts import services
from alerts.delivery import openings_release
from alerts.models import Delivery, DeliveryStatus
from monitoring.models import EndpointStatus, Incident
from tests.alerts.receiver import webhook
from tests.pipeline.conftest import T0

pytestmark = pytest.mark.django_db

WINDOWS = "/api/v1/maintenance-windows"


def events(receiver):
    return [json.loads(request.body) for request in receiver.requests]


def plan_window(api, cast, endpoint, start, end):
    """A maintenance window on the heartbeat alone, planned through the API."""
    body = {
        "name": "Backup server moved",
        "starts_at": start.isoformat(),
        "ends_at": end.isoformat(),
        "endpoints": [str(endpoint.id)],
    }
    with time_machine.travel(T0 - timedelta(hours=1), tick=False):
        response = api.as_user(cast.owner).post(WINDOWS, body, format="json")
    assert response.status_code == 201, response.content


def miss_deadline(settle, at=T0):
    """Run beat's deadline task past the period, then past the grace of a ping at `at`."""
    settle(at + timedelta(seconds=61))
    settle(at + timedelta(seconds=121))


# --- Causes -------------------------------------------------------------------------------------


def test_a_missed_deadline_is_told_once_as_no_ping_since_the_last_ping(
    cast, make_heartbeat, send_ping, settle, receiver
):
    webhook(cast, receiver.url)
    heartbeat = make_heartbeat()
    send_ping(heartbeat, at=T0 + timedelta(seconds=5))

    miss_deadline(settle, at=T0 + timedelta(seconds=5))
    settle(T0 + timedelta(seconds=300))  # beat keeps running: nothing more is told

    # Late first (`heartbeat.late`, once), then down.
    late, told = events(receiver)
    assert late["event"] == "heartbeat.late"
    assert late["endpoint"]["id"] == str(heartbeat.id)
    assert told["event"] == "incident.opened"
    assert told["incident"]["cause"] == "no ping since 2030-01-01 12:00:05 UTC"
    assert told["incident"]["started_at"] == "2030-01-01T12:02:05+00:00"
    assert told["endpoint"]["id"] == str(heartbeat.id)


def test_an_exit_status_is_told_as_exit_status_3_and_its_recovery_once(
    cast, make_heartbeat, send_ping, receiver
):
    webhook(cast, receiver.url)
    heartbeat = make_heartbeat()
    send_ping(heartbeat, at=T0)

    send_ping(heartbeat, "/3", at=T0 + timedelta(seconds=10))
    send_ping(heartbeat, "/3", at=T0 + timedelta(seconds=20))  # still down: no second one
    send_ping(heartbeat, "/0", at=T0 + timedelta(seconds=30))

    told = events(receiver)
    assert [t["event"] for t in told] == ["incident.opened", "incident.resolved"]
    assert told[0]["incident"]["cause"] == "exit status 3"
    assert told[1]["incident"]["duration_seconds"] == 20.0


def test_a_mail_channel_names_the_missed_deadline(cast, make_heartbeat, send_ping, settle):
    services.channel_create(
        organization=cast.org, name="Ops", kind="email", config={"addresses": ["ops@acme.test"]}
    )
    heartbeat = make_heartbeat()
    send_ping(heartbeat, at=T0)

    miss_deadline(settle)

    late, message = mail.outbox
    assert late.subject.startswith("[healthmon] LATE: Nightly backup")
    assert message.subject == f"[healthmon] DOWN: Nightly backup ({cast.project.name})"
    assert "Cause: no ping since 2030-01-01 12:00:00 UTC" in message.body


# --- Maintenance windows ------------------------------------------------------------------------


def test_a_deadline_missed_inside_a_window_is_not_told(
    api, cast, make_heartbeat, send_ping, settle, receiver
):
    webhook(cast, receiver.url)
    heartbeat = make_heartbeat()
    plan_window(api, cast, heartbeat, T0 + timedelta(seconds=30), T0 + timedelta(hours=1))
    send_ping(heartbeat, at=T0)

    miss_deadline(settle)

    heartbeat.refresh_from_db()
    assert heartbeat.status == EndpointStatus.DOWN  # the outage is real, only muted
    assert Incident.objects.get(endpoint=heartbeat).cause.startswith("no ping since")
    assert receiver.requests == []
    assert sorted(Delivery.objects.values_list("event", "status")) == [
        ("heartbeat.late", DeliveryStatus.SUPPRESSED),
        ("incident.opened", DeliveryStatus.SUPPRESSED),
    ]


def test_a_failure_inside_a_window_that_recovers_in_it_is_never_told(
    api, cast, make_heartbeat, send_ping, receiver, django_capture_on_commit_callbacks
):
    webhook(cast, receiver.url)
    heartbeat = make_heartbeat()
    plan_window(api, cast, heartbeat, T0, T0 + timedelta(hours=1))
    send_ping(heartbeat, at=T0)

    send_ping(heartbeat, "/fail", at=T0 + timedelta(minutes=1))
    send_ping(heartbeat, "/3", at=T0 + timedelta(minutes=2))
    send_ping(heartbeat, at=T0 + timedelta(minutes=3))
    with django_capture_on_commit_callbacks(execute=True):
        released = openings_release(now=T0 + timedelta(hours=1, seconds=5))

    assert released == 0
    assert receiver.requests == []
    assert Incident.objects.get(endpoint=heartbeat).resolved_at == T0 + timedelta(minutes=3)
    held = Delivery.objects.order_by("event").values_list("event", "status")
    assert list(held) == [
        ("incident.opened", DeliveryStatus.SUPPRESSED),
        ("incident.resolved", DeliveryStatus.SUPPRESSED),
    ]


def test_a_heartbeat_still_down_when_its_window_ends_is_told_then_once(
    api, cast, make_heartbeat, send_ping, settle, receiver, django_capture_on_commit_callbacks
):
    webhook(cast, receiver.url)
    heartbeat = make_heartbeat()
    plan_window(api, cast, heartbeat, T0, T0 + timedelta(minutes=10))
    send_ping(heartbeat, at=T0)
    send_ping(heartbeat, "/fail", at=T0 + timedelta(minutes=1))

    told_by = {}
    for minutes in (5, 10, 11, 20):  # beat's release sweep and deadline task, now and then
        at = T0 + timedelta(minutes=minutes, seconds=1)
        with django_capture_on_commit_callbacks(execute=True):
            openings_release(now=at)
        settle(at)
        told_by[minutes] = [(t["event"], t["incident"]["cause"]) for t in events(receiver)]

    assert told_by[5] == []
    assert told_by[10] == told_by[20] == [("incident.opened", "failure ping")]


def test_outside_its_window_a_heartbeat_going_down_is_told_exactly_once(
    api, cast, make_heartbeat, send_ping, settle, receiver
):
    webhook(cast, receiver.url)
    heartbeat = make_heartbeat()
    plan_window(api, cast, heartbeat, T0, T0 + timedelta(seconds=30))  # over before it goes down
    send_ping(heartbeat, at=T0 + timedelta(seconds=40))

    miss_deadline(settle, at=T0 + timedelta(seconds=40))
    send_ping(heartbeat, "/fail", at=T0 + timedelta(seconds=200))  # down already
    settle(T0 + timedelta(seconds=400))

    late, *told = events(receiver)
    assert late["event"] == "heartbeat.late"
    assert [(t["event"], t["incident"]["cause"]) for t in told] == [
        ("incident.opened", "no ping since 2030-01-01 12:00:40 UTC")
    ]
    assert sorted(Delivery.objects.values_list("event", "status")) == [
        ("heartbeat.late", DeliveryStatus.DELIVERED),
        ("incident.opened", DeliveryStatus.DELIVERED),
    ]
