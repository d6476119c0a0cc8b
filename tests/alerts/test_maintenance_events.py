"""`maintenance.started` and `maintenance.ended`: the beat loop writes one delivery per
channel covering the window's scope that chose the event, once per occurrence (even when
loops race), and none for an occurrence long past."""

import json
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.conf import settings

from accounts.services import organization_create, project_create
from alerts import messages, services
from alerts.models import CHANNEL_EVENTS, ChannelKind, Delivery, MaintenanceWindow
from alerts.services.schedule_events import (
    MAINTENANCE_LOOKBACK,
    maintenance_events_queue,
    maintenance_key,
)
from alerts.tasks import queue_maintenance_events
from tests.alerts.receiver import webhook
from tests.concurrency import race

T0 = datetime(2030, 1, 6, 1, 0, tzinfo=UTC)


def plan(org, starts_at=T0, hours=2, **fields):
    return services.maintenance_window_save(
        window=MaintenanceWindow(organization=org),
        name=fields.pop("name", "Upgrade"),
        starts_at=starts_at,
        ends_at=starts_at + timedelta(hours=hours),
        **fields,
    )


def run(moment, capture):
    with time_machine.travel(moment, tick=False), capture(execute=True):
        return maintenance_events_queue(now=moment)


def sent(receiver):
    return [json.loads(request.body) for request in receiver.requests]


@pytest.mark.django_db
@pytest.mark.usefixtures("loopback_allowed")
def test_start_and_end_are_told_once_each_with_the_occurrence(
    cast, receiver, django_capture_on_commit_callbacks
):
    webhook(cast, receiver.url)
    window = plan(cast.org, projects=[cast.project])

    run(T0 - timedelta(seconds=10), django_capture_on_commit_callbacks)
    for seconds in (0, 20, 40):
        run(T0 + timedelta(seconds=seconds), django_capture_on_commit_callbacks)
    for seconds in (0, 20):
        run(T0 + timedelta(hours=2, seconds=seconds), django_capture_on_commit_callbacks)

    started, ended = sent(receiver)
    assert (started["event"], ended["event"]) == ("maintenance.started", "maintenance.ended")
    assert started["id"] == str(maintenance_key(window.pk, T0, "maintenance.started"))
    assert started["maintenance"] == {
        "id": str(window.pk),
        "name": "Upgrade",
        "starts_at": T0.isoformat(),
        "ends_at": (T0 + timedelta(hours=2)).isoformat(),
        "rrule": None,
        "timezone": "UTC",
        "scope": {"projects": [cast.project.name], "endpoints": []},
    }
    assert started["incident"] is None
    assert started["endpoint"] is None


@pytest.mark.django_db
@pytest.mark.usefixtures("loopback_allowed")
def test_each_occurrence_of_a_rule_window_is_told(
    cast, receiver, django_capture_on_commit_callbacks
):
    webhook(cast, receiver.url)
    plan(cast.org, rrule="FREQ=MONTHLY;BYDAY=1SU", timezone="Europe/Berlin")

    run(T0, django_capture_on_commit_callbacks)
    april = datetime(2030, 4, 7, 0, 0, tzinfo=UTC)  # 02:00 Berlin in summer
    run(april + timedelta(seconds=15), django_capture_on_commit_callbacks)

    starts = [s["maintenance"]["starts_at"] for s in sent(receiver)]
    assert starts == [T0.isoformat(), april.isoformat()]


@pytest.mark.django_db
@pytest.mark.usefixtures("loopback_allowed")
def test_nothing_is_told_of_an_occurrence_long_past(
    cast, receiver, django_capture_on_commit_callbacks
):
    webhook(cast, receiver.url)
    plan(cast.org)

    # Beat was down: back an hour into the window, then after it ended long ago.
    run(T0 + MAINTENANCE_LOOKBACK + timedelta(seconds=1), django_capture_on_commit_callbacks)
    run(T0 + timedelta(hours=3), django_capture_on_commit_callbacks)

    assert receiver.requests == []
    assert not Delivery.objects.exists()


@pytest.mark.django_db
@pytest.mark.usefixtures("loopback_allowed")
def test_the_audience_is_the_scope_and_the_events_chosen(
    cast, receiver, django_capture_on_commit_callbacks, make_endpoint
):
    other = project_create(organization=cast.org, name="Other")
    site = make_endpoint(other, name="Site")
    everywhere = webhook(cast, receiver.url, name="Org-wide")
    on_project = webhook(cast, receiver.url, name="Other project", projects=[other])
    on_site = webhook(cast, receiver.url, name="Site only", endpoints=[site])
    webhook(cast, receiver.url, name="Default only", projects=[cast.project])
    webhook(
        cast,
        receiver.url,
        name="Deaf",
        events=[e for e in CHANNEL_EVENTS if e != "maintenance.started"],
    )
    webhook(cast, receiver.url, name="Disabled", enabled=False)
    plan(cast.org, projects=[other])

    run(T0, django_capture_on_commit_callbacks)

    heard = set(Delivery.objects.values_list("channel_id", flat=True))
    assert heard == {everywhere.pk, on_project.pk, on_site.pk}


@pytest.mark.django_db
@pytest.mark.usefixtures("loopback_allowed")
def test_an_organization_wide_window_reaches_every_channel_of_its_organization(
    cast, receiver, django_capture_on_commit_callbacks
):
    scoped = webhook(cast, receiver.url, name="Scoped", projects=[cast.project])
    whole = webhook(cast, receiver.url, name="Whole")
    services.channel_create(
        organization=cast.other_org,
        name="Elsewhere",
        kind="webhook",
        config={"url": receiver.url},
    )
    plan(cast.org)

    run(T0, django_capture_on_commit_callbacks)

    heard = set(Delivery.objects.values_list("channel_id", flat=True))
    assert heard == {scoped.pk, whole.pk}
    assert sent(receiver)[0]["maintenance"]["scope"] == {"projects": [], "endpoints": []}


@pytest.mark.django_db
def test_the_events_render_for_every_kind(cast):
    window = plan(cast.org, name="")
    document = messages.maintenance_document(
        event="maintenance.ended",
        event_id="x",
        occurred_at=T0,
        window=window,
        starts_at=T0,
        ends_at=T0 + timedelta(hours=2),
        scope={"projects": ["Default"], "endpoints": ["Site"]},
    )

    assert messages.headline(document) == "MAINTENANCE ENDED: Scheduled maintenance"
    assert "Covers: Default, Site" in messages.mail_body(document)
    for kind in (ChannelKind.SLACK, ChannelKind.TEAMS, ChannelKind.DISCORD):
        assert "MAINTENANCE ENDED" in json.dumps(messages.chat_body(kind, document))


def test_beat_runs_the_loop_every_20_seconds():
    entry = settings.CELERY_BEAT_SCHEDULE["queue-maintenance-events"]
    assert entry["task"] == queue_maintenance_events.name
    assert 15 <= entry["schedule"] <= 30


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres("two loops on two connections")
def test_two_loops_racing_write_each_event_once():
    org, _ = organization_create(name="Acme")
    services.channel_create(
        organization=org,
        name="Mail",
        kind="email",
        config={"addresses": ["ops@example.com"], "to_members": False},
    )
    for n in range(5):
        plan(org, name=f"w{n}")
    moment = T0 + timedelta(seconds=5)

    def loop() -> int:
        maintenance_events_queue(now=moment)
        return 0

    race(loop, loop, loop)

    assert Delivery.objects.filter(event="maintenance.started").count() == 5
