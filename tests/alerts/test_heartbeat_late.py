"""`heartbeat.late`: the deadline loop turning a heartbeat late writes one delivery per
covering channel that chose the event, once per lateness (even when loops race), held back in
maintenance, rendered for every kind."""

import json
from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from accounts.services import organization_create, project_create
from alerts import messages, services
from alerts.models import CHANNEL_EVENTS, ChannelKind, Delivery, DeliveryStatus, MaintenanceWindow
from alerts.services.schedule_events import heartbeat_late_key, heartbeat_late_queue
from monitoring.models import Endpoint, EndpointStatus
from monitoring.services import endpoint_create
from monitoring.validation import validate_config
from pipeline.heartbeats import heartbeat_deadlines_run
from tests.alerts.receiver import webhook
from tests.concurrency import race

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
LATE = T0 + timedelta(seconds=60)


def _heartbeat(project, name="Nightly backup"):
    config = validate_config("heartbeat", {"grace_seconds": 60})
    beat = endpoint_create(
        project=project, name=name, type="heartbeat", target="", config=config, failure_threshold=1
    )
    Endpoint.objects.filter(pk=beat.pk).update(
        status=EndpointStatus.UP,
        last_checked_at=T0,
        late_after=LATE,
        alert_after=LATE + timedelta(seconds=60),
    )
    return beat


def run_loop(moment, capture):
    with time_machine.travel(moment, tick=False), capture(execute=True):
        return heartbeat_deadlines_run(now=moment)


@pytest.mark.django_db
@pytest.mark.usefixtures("loopback_allowed")
def test_a_late_heartbeat_is_told_once_with_its_expected_time_and_grace(
    cast, receiver, django_capture_on_commit_callbacks
):
    beat = _heartbeat(cast.project)
    webhook(cast, receiver.url)

    assert run_loop(LATE - timedelta(seconds=1), django_capture_on_commit_callbacks) == (0, 0)
    assert run_loop(LATE, django_capture_on_commit_callbacks) == (1, 0)
    run_loop(LATE + timedelta(seconds=2), django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):  # a loop racing, written again
        heartbeat_late_queue(endpoint_ids=[beat.pk])

    [sent] = [json.loads(request.body) for request in receiver.requests]
    assert sent["event"] == "heartbeat.late"
    assert sent["id"] == str(heartbeat_late_key(beat.pk, LATE))
    assert sent["incident"] is None
    assert sent["endpoint"]["name"] == "Nightly backup"
    assert sent["project"] == {"id": str(cast.project.pk), "name": cast.project.name}
    assert sent["heartbeat"] == {
        "expected_at": LATE.isoformat(),
        "grace_seconds": 60,
        "down_at": (LATE + timedelta(seconds=60)).isoformat(),
    }
    assert Delivery.objects.get().status == DeliveryStatus.DELIVERED


@pytest.mark.django_db
@pytest.mark.usefixtures("loopback_allowed")
def test_a_new_lateness_is_told_again(cast, receiver, django_capture_on_commit_callbacks):
    beat = _heartbeat(cast.project)
    webhook(cast, receiver.url)
    run_loop(LATE, django_capture_on_commit_callbacks)
    later = LATE + timedelta(hours=1)
    Endpoint.objects.filter(pk=beat.pk).update(
        status=EndpointStatus.UP, late_after=later, alert_after=later + timedelta(seconds=60)
    )

    run_loop(later, django_capture_on_commit_callbacks)

    assert Delivery.objects.filter(event="heartbeat.late").count() == 2


@pytest.mark.django_db
@pytest.mark.usefixtures("loopback_allowed")
def test_only_channels_that_chose_it_and_cover_the_heartbeat_hear_it(
    cast, receiver, django_capture_on_commit_callbacks
):
    _heartbeat(cast.project)
    hearing = webhook(cast, receiver.url, name="Hearing")
    webhook(
        cast,
        receiver.url,
        name="Deaf",
        events=[e for e in CHANNEL_EVENTS if e != "heartbeat.late"],
    )
    webhook(cast, receiver.url, name="Elsewhere", projects=[_other_project(cast)])

    run_loop(LATE, django_capture_on_commit_callbacks)

    assert list(Delivery.objects.values_list("channel_id", flat=True)) == [hearing.pk]


def _other_project(cast):
    return project_create(organization=cast.org, name="Other")


@pytest.mark.django_db
@pytest.mark.usefixtures("loopback_allowed")
def test_a_lateness_in_maintenance_is_suppressed(
    cast, receiver, django_capture_on_commit_callbacks
):
    beat = _heartbeat(cast.project)
    webhook(cast, receiver.url)
    services.maintenance_window_save(
        window=MaintenanceWindow(organization=cast.org),
        starts_at=LATE - timedelta(minutes=5),
        ends_at=LATE + timedelta(minutes=5),
        endpoints=[beat],
    )

    run_loop(LATE, django_capture_on_commit_callbacks)

    assert Delivery.objects.get().status == DeliveryStatus.SUPPRESSED
    assert receiver.requests == []


@pytest.mark.django_db
def test_the_event_renders_for_every_kind(cast):
    beat = _heartbeat(cast.project)
    beat.refresh_from_db()
    document = messages.heartbeat_late_document(
        event_id="x",
        occurred_at=LATE,
        endpoint=beat,
        project_name="Default",
        expected_at=LATE,
        grace_seconds=3600,
        down_at=LATE + timedelta(hours=1),
    )

    assert messages.headline(document) == (
        "LATE: Nightly backup (Default) missed its expected ping"
    )
    assert "Grace: 1 h" in messages.mail_body(document)
    assert "Expected: 2030-01-01T12:01:00+00:00" in messages.mail_body(document)
    for kind in (ChannelKind.SLACK, ChannelKind.TEAMS, ChannelKind.DISCORD):
        assert "Nightly backup" in json.dumps(messages.chat_body(kind, document))
    assert messages.mail_subject(document).startswith("[healthmon] LATE: Nightly backup")


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres("row locks")
def test_two_loops_racing_write_each_lateness_once():
    org, project = organization_create(name="Acme")
    beats = [_heartbeat(project, name=f"Job {n}") for n in range(10)]
    services.channel_create(
        organization=org,
        name="Mail",
        kind="email",
        config={"addresses": ["ops@example.com"], "to_members": False},
    )
    moment = LATE + timedelta(seconds=1)

    def loop() -> int:
        with time_machine.travel(moment, tick=False):
            heartbeat_deadlines_run(now=moment)
        return 0

    race(loop, loop)

    assert Delivery.objects.filter(event="heartbeat.late").count() == len(beats)
