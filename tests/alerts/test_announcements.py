"""Announcing what people do on incidents: an acknowledgement is sent as
`incident.acknowledged`, an update as `incident.updated`, once each, to the channels that
chose the event and cover the incident, by the beat sweep reading monitoring's outboxes;
every message of an open incident carries its acknowledge link; each delivery's outcome
joins the incident's timeline without its URL."""

import json
import threading
from datetime import timedelta
from typing import Any

import pytest
from django.core import mail
from django.db import connections
from django.utils import timezone

from accounts.models import Project
from alerts import services
from alerts.models import Delivery, DeliveryStatus, MaintenanceWindow, NotificationChannel
from alerts.services import announcements_queue, event_key
from alerts.tasks import dispatch_deliveries
from monitoring.acknowledgement import ack_token, incident_acknowledge
from monitoring.incidents import incident_declare, incident_update_post
from monitoring.models import ActivityKind, IncidentActivity, IncidentUpdate
from tests.alerts.receiver import Receiver, webhook

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("loopback_allowed")]


@pytest.fixture
def announce(django_capture_on_commit_callbacks: Any):
    """Run the announcing pass, sending what it queues."""

    def run() -> int:
        with django_capture_on_commit_callbacks(execute=True):
            return announcements_queue()

    return run


def events(receiver: Receiver) -> list[str]:
    return [json.loads(r.body)["event"] for r in receiver.requests]


def bodies(receiver: Receiver, event: str) -> list[dict]:
    return [b for r in receiver.requests if (b := json.loads(r.body))["event"] == event]


def only(channel: NotificationChannel, *chosen: str) -> NotificationChannel:
    NotificationChannel.objects.filter(pk=channel.pk).update(events=list(chosen))
    return channel


def test_an_opening_carries_the_acknowledge_link(cast, endpoint, receiver, go_down):
    webhook(cast, receiver.url)
    go_down(endpoint)
    go_down(endpoint, ok=True)

    opened, resolved = (json.loads(r.body) for r in receiver.requests)
    incident = endpoint.incidents.get()
    link = f"https://healthmon.test/ack/{ack_token(incident.pk)}"
    assert opened["incident"]["ack_url"] == link
    assert resolved["incident"]["ack_url"] is None  # expired with the incident


def test_mail_and_chat_carry_the_link_too(cast, endpoint, receiver, go_down):
    services.channel_create(
        organization=cast.org, name="On call", kind="email", config={"addresses": ["a@x.test"]}
    )
    services.channel_create(
        organization=cast.org, name="ops", kind="slack", config={"url": receiver.url}
    )
    go_down(endpoint)

    incident = endpoint.incidents.get()
    line = f"Acknowledge: https://healthmon.test/ack/{ack_token(incident.pk)}"
    assert line in mail.outbox[0].body
    assert line in json.loads(receiver.requests[0].body)["text"]


def test_an_acknowledgement_is_announced_once(cast, endpoint, receiver, go_down, announce):
    webhook(cast, receiver.url)
    go_down(endpoint)
    incident = endpoint.incidents.get()
    incident_acknowledge(incident=incident, by=cast.member, via="api")

    assert announce() == 1
    assert announce() == 0

    assert events(receiver) == ["incident.opened", "incident.acknowledged"]
    (told,) = bodies(receiver, "incident.acknowledged")
    assert told["id"] == str(event_key(incident.pk, "incident.acknowledged"))
    assert told["incident"]["id"] == str(incident.pk)
    assert told["incident"]["ack_url"] is None
    assert told["acknowledgement"]["by"] == "member@acme.test"
    assert told["acknowledgement"]["via"] == "api"
    assert told["endpoint"]["name"] == "Checkout API"
    assert told["incident_url"] == f"https://healthmon.test/incidents/{incident.pk}"
    line = IncidentActivity.objects.get(kind=ActivityKind.ACKNOWLEDGED)
    assert line.announced_at is not None


def test_a_link_acknowledgement_names_nobody(cast, endpoint, receiver, go_down, announce):
    services.channel_create(
        organization=cast.org, name="ops", kind="slack", config={"url": receiver.url}
    )
    go_down(endpoint)
    incident_acknowledge(incident=endpoint.incidents.get(), by=None, via="link")
    announce()

    text = json.loads(receiver.requests[-1].body)["text"]
    assert text.startswith("*ACKNOWLEDGED: Checkout API is down (Default)*")
    assert "from a notification link" in text
    assert "Acknowledge:" not in text


def test_an_update_is_announced_once_with_its_link(cast, endpoint, receiver, go_down, announce):
    webhook(cast, receiver.url)
    go_down(endpoint)
    incident = endpoint.incidents.get()
    update = incident_update_post(
        incident=incident, author=cast.owner, status="identified", message="Disk full."
    )

    assert announce() == 1
    assert announce() == 0

    (told,) = bodies(receiver, "incident.updated")
    assert told["id"] == str(event_key(update.pk, "incident.updated"))
    assert told["update"]["status"] == "identified"
    assert told["update"]["message"] == "Disk full."
    assert told["incident"]["ack_url"].startswith("https://healthmon.test/ack/")
    update.refresh_from_db()
    assert update.channels_notified_at is not None


def test_a_declared_incidents_update_reaches_the_channels_covering_it(cast, endpoint, announce):
    other = Project.objects.create(organization=cast.org, name="Other")
    wide, near, far = Receiver(), Receiver(), Receiver()
    try:
        webhook(cast, wide.url, name="everything")
        webhook(cast, near.url, name="checkout", projects=[cast.project])
        webhook(cast, far.url, name="other", projects=[other])
        webhook(cast, far.url, name="elsewhere", enabled=False)
        incident_declare(
            organization=cast.org,
            author=cast.owner,
            title="Payments fail",
            endpoints=[endpoint],
            impact="major_outage",
            message="Card processor timing out.",
        )

        assert announce() == 2
    finally:
        for peer in (wide, near, far):
            peer.stop()

    assert events(wide) == events(near) == ["incident.updated"]
    assert far.requests == []
    told = json.loads(near.requests[0].body)
    assert told["title"] == "Payments fail"
    assert told["endpoint"] is None
    assert told["incident"]["endpoint"] is None
    assert [e["name"] for e in told["endpoints"]] == ["Checkout API"]


def test_channels_hear_only_the_events_they_chose(cast, endpoint, receiver, go_down, announce):
    only(webhook(cast, receiver.url), "incident.opened", "incident.resolved")
    go_down(endpoint)
    incident = endpoint.incidents.get()
    incident_update_post(incident=incident, author=cast.owner, status="identified", message="x")
    incident_acknowledge(incident=incident, by=cast.owner, via="page")

    assert announce() == 0

    assert events(receiver) == ["incident.opened"]
    assert IncidentUpdate.objects.get().channels_notified_at is not None  # told: nobody


def test_the_beat_task_announces(
    cast, endpoint, receiver, go_down, django_capture_on_commit_callbacks
):
    webhook(cast, receiver.url)
    go_down(endpoint)
    incident_acknowledge(incident=endpoint.incidents.get(), by=cast.owner, via="api")

    with django_capture_on_commit_callbacks(execute=True):
        dispatch_deliveries()

    assert events(receiver) == ["incident.opened", "incident.acknowledged"]


def test_an_incident_maintenance_hid_is_not_announced_there(
    cast, endpoint, receiver, go_down, announce
):
    webhook(cast, receiver.url)
    now = timezone.now()
    services.maintenance_window_save(
        window=MaintenanceWindow(organization=cast.org),
        starts_at=now - timedelta(minutes=5),
        ends_at=now + timedelta(minutes=30),
    )
    go_down(endpoint, at=now)
    incident_acknowledge(incident=endpoint.incidents.get(), by=cast.owner, via="api")

    assert announce() == 1

    assert receiver.requests == []
    told = Delivery.objects.get(event="incident.acknowledged")
    assert (told.status, told.next_attempt_at) == (DeliveryStatus.SUPPRESSED, None)


# --- Delivery outcome lines ---------------------------------------------------------------------


def test_a_delivered_notification_joins_the_timeline(cast, endpoint, receiver, go_down):
    webhook(cast, receiver.url, name="pager")
    go_down(endpoint)

    line = IncidentActivity.objects.get(kind=ActivityKind.DELIVERED)
    assert line.incident == endpoint.incidents.get()
    assert line.text == "Webhook “pager”: incident.opened delivered"
    assert line.detail["channel_kind"] == "webhook"
    assert line.actor is None


def test_a_notification_given_up_joins_the_timeline_without_its_url(
    cast, endpoint, go_down, settings
):
    settings.NOTIFY_MAX_ATTEMPTS = 1
    failing = Receiver(statuses=(503,))
    try:
        services.channel_create(
            organization=cast.org, name="ops", kind="slack", config={"url": failing.url}
        )
        go_down(endpoint)
    finally:
        failing.stop()

    line = IncidentActivity.objects.get(kind=ActivityKind.DELIVERY_FAILED)
    assert line.text == "Slack “ops”: incident.opened failed after 1 attempt (HTTP 503)"
    stored = json.dumps([line.text, line.detail])
    assert "SECRET-PATH" not in stored
    assert "127.0.0.1" not in stored


def test_a_retry_writes_no_line(cast, endpoint, go_down):
    failing = Receiver(statuses=(503,))
    try:
        webhook(cast, failing.url)
        go_down(endpoint)
    finally:
        failing.stop()

    assert Delivery.objects.get().status == DeliveryStatus.PENDING
    assert not IncidentActivity.objects.filter(
        kind__in=[ActivityKind.DELIVERED, ActivityKind.DELIVERY_FAILED]
    ).exists()


# --- Racing sweeps -------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres("two sweeps on two connections at the same moment need row locks")
def test_two_racing_sweeps_announce_each_once(cast, endpoint, receiver, go_down):
    webhook(cast, receiver.url)
    webhook(cast, receiver.url, name="second hook")
    go_down(endpoint)
    incident = endpoint.incidents.get()
    for n in range(3):
        incident_update_post(
            incident=incident, author=cast.owner, status="identified", message=f"Step {n}."
        )
    incident_acknowledge(incident=incident, by=cast.member, via="api")
    start = threading.Barrier(2)
    written: list[int] = []

    def sweep() -> None:
        try:
            start.wait(10)
            written.append(announcements_queue())
        finally:
            connections.close_all()

    threads = [threading.Thread(target=sweep) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert sum(written) == 8  # (3 updates + 1 acknowledgement) x 2 channels
    told = [json.loads(r.body) for r in receiver.requests]
    news = [b["id"] for b in told if b["event"] != "incident.opened"]
    assert events(receiver).count("incident.updated") == 6
    assert events(receiver).count("incident.acknowledged") == 2
    assert len(news) == 8  # each announcement once per channel, no more
    assert len(set(news)) == 4  # one key per announcement, shared by its two channels
    assert Delivery.objects.count() == 10
