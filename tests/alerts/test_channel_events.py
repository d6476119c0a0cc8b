"""Each channel chooses its events: the API field and its checks, the page form, and every
queue writing deliveries only for the channels that chose the event (a test per queue)."""

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from alerts import services
from alerts.delivery import channel_test
from alerts.models import CHANNEL_EVENTS, Delivery, NotificationChannel
from monitoring.certificates import CertificateWarning
from monitoring.models import Endpoint
from monitoring.probes.certificates import PeerCertificate
from tests.alerts.receiver import webhook

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("loopback_allowed")]
URL = "/api/v1/notification-channels"
BODY = {"name": "Pager", "kind": "webhook", "config": {"url": "https://hooks.example.com/x"}}


def events_sent(receiver):
    return [json.loads(request.body)["event"] for request in receiver.requests]


# --- API --------------------------------------------------------------------------------------


def test_a_new_channel_hears_every_event_by_default(api, cast):
    response = api.as_user(cast.owner).post(URL, BODY)

    assert response.status_code == 201, response.content
    assert response.json()["events"] == CHANNEL_EVENTS
    assert "incident.escalated" not in CHANNEL_EVENTS
    assert "test" not in CHANNEL_EVENTS


def test_events_are_chosen_deduplicated_and_kept_in_order(api, cast):
    chosen = ["incident.resolved", "incident.opened", "incident.opened", "heartbeat.late"]
    response = api.as_user(cast.owner).post(URL, {**BODY, "events": chosen})

    assert response.status_code == 201, response.content
    assert response.json()["events"] == ["incident.opened", "incident.resolved", "heartbeat.late"]
    channel = NotificationChannel.objects.get()
    assert channel.events == ["incident.opened", "incident.resolved", "heartbeat.late"]
    shown = api.as_user(cast.member).get(f"{URL}/{channel.pk}").json()
    assert shown["events"] == channel.events


def test_an_empty_list_is_allowed_escalation_and_tests_only(api, cast):
    response = api.as_user(cast.owner).post(URL, {**BODY, "events": []})

    assert response.status_code == 201, response.content
    assert response.json()["events"] == []


@pytest.mark.parametrize(
    "value",
    [["incident.opened", "incident.exploded"], ["test"], ["incident.escalated"], "all", None, [3]],
)
def test_an_unknown_event_is_a_400_naming_events_with_the_other_errors(api, cast, value):
    response = api.as_user(cast.owner).post(URL, {**BODY, "name": "", "events": value})

    assert response.status_code == 400
    errors = response.json()["errors"]
    assert set(errors) == {"name", "events"}
    assert not NotificationChannel.objects.exists()


def test_patch_changes_the_events_alone(api, cast):
    channel = webhook(cast, "https://hooks.example.com/x")

    response = api.as_user(cast.admin).patch(
        f"{URL}/{channel.pk}", {"events": ["maintenance.started"]}
    )

    assert response.status_code == 200, response.content
    channel.refresh_from_db()
    assert channel.events == ["maintenance.started"]
    assert channel.config["url"] == "https://hooks.example.com/x"


def test_a_member_cannot_change_the_events(api, cast):
    channel = webhook(cast, "https://hooks.example.com/x")

    response = api.as_user(cast.member).patch(f"{URL}/{channel.pk}", {"events": []})

    assert response.status_code == 403
    channel.refresh_from_db()
    assert channel.events == CHANNEL_EVENTS


def test_a_bad_events_patch_changes_nothing(api, cast):
    channel = webhook(cast, "https://hooks.example.com/x", events=["incident.opened"])

    response = api.as_user(cast.owner).patch(f"{URL}/{channel.pk}", {"events": ["nope"]})

    assert response.status_code == 400
    assert "events" in response.json()["errors"]
    channel.refresh_from_db()
    assert channel.events == ["incident.opened"]


# --- Page -------------------------------------------------------------------------------------


def test_the_page_form_shows_checkboxes_and_saves_the_events_ticked(client, cast):
    client.force_login(cast.owner)
    page = client.get("/alerts").content.decode()
    assert page.count('name="events"') == len(CHANNEL_EVENTS)

    response = client.post(
        "/alerts/channels/new",
        {
            "name": "Ops",
            "kind": "slack",
            "url": "https://hooks.slack.com/services/T/B/x",
            "events_shown": "on",
            "events": ["incident.opened", "maintenance.ended"],
        },
    )

    assert response.status_code in (200, 302), response.content
    channel = NotificationChannel.objects.get()
    assert channel.events == ["incident.opened", "maintenance.ended"]
    assert "incident.opened, maintenance.ended" in client.get("/alerts").content.decode()


def test_a_form_without_the_events_keeps_every_event(client, cast):
    client.force_login(cast.owner)

    client.post(
        "/alerts/channels/new",
        {"name": "Ops", "kind": "slack", "url": "https://hooks.slack.com/services/T/B/x"},
    )

    assert NotificationChannel.objects.get().events == CHANNEL_EVENTS


# --- Each queue -------------------------------------------------------------------------------


@pytest.fixture
def deaf_and_hearing(cast, receiver):
    """Two webhooks to one receiver: one hearing every event but `event`, one all."""

    def make(event):
        others = [e for e in CHANNEL_EVENTS if e != event]
        deaf = webhook(cast, receiver.url, name="Deaf", events=others)
        hearing = webhook(cast, receiver.url, name="Hearing")
        return deaf, hearing

    return make


def test_incident_opened_and_resolved_reach_only_the_channels_that_chose_them(
    cast, endpoint, receiver, go_down
):
    opened_only = webhook(cast, receiver.url, name="Opened only", events=["incident.opened"])
    resolved_only = webhook(cast, receiver.url, name="Resolved only", events=["incident.resolved"])
    now = timezone.now()

    go_down(endpoint, at=now)
    go_down(endpoint, ok=True, at=now + timedelta(minutes=1))

    rows = set(Delivery.objects.values_list("channel_id", "event"))
    assert rows == {(opened_only.pk, "incident.opened"), (resolved_only.pk, "incident.resolved")}
    assert sorted(events_sent(receiver)) == ["incident.opened", "incident.resolved"]


def test_degraded_and_recovered_reach_only_the_channels_that_chose_them(
    cast, make_endpoint, receiver, record, django_capture_on_commit_callbacks
):
    slow = make_endpoint(cast.project, config={"degraded_above_ms": 500})
    degraded_only = webhook(cast, receiver.url, name="D", events=["endpoint.degraded"])
    recovered_only = webhook(cast, receiver.url, name="R", events=["endpoint.recovered"])
    now = timezone.now()
    with django_capture_on_commit_callbacks(execute=True):
        record(slow, [(now, True, 100.0)])
        record(slow, [(now + timedelta(minutes=1), True, 900.0)])
        record(slow, [(now + timedelta(minutes=2), True, 100.0)])

    rows = set(Delivery.objects.values_list("channel_id", "event"))
    assert rows == {
        (degraded_only.pk, "endpoint.degraded"),
        (recovered_only.pk, "endpoint.recovered"),
    }


def test_a_certificate_warning_reaches_only_the_channels_that_chose_it(
    cast, endpoint, deaf_and_hearing, django_capture_on_commit_callbacks
):
    _deaf, hearing = deaf_and_hearing("certificate.expiring")
    now = datetime.now(UTC)
    certificate = PeerCertificate(
        not_before=now - timedelta(days=80),
        expires_at=now + timedelta(days=10),
        issuer="CN=Test CA",
        subject="CN=example.test",
        fingerprint="ab" * 32,
    )
    warning = CertificateWarning(endpoint.pk, certificate, 14, now)

    with django_capture_on_commit_callbacks(execute=True):
        written = services.certificate_notifications_queue(
            warnings=[warning], endpoints={endpoint.pk: Endpoint.objects.get(pk=endpoint.pk)}
        )

    assert written == 1
    assert list(Delivery.objects.values_list("channel_id", flat=True)) == [hearing.pk]


def test_a_disabled_event_does_not_stop_the_test_send(cast, receiver):
    channel = webhook(cast, receiver.url, events=[])

    delivery = channel_test(channel=channel)

    assert delivery.status == "delivered"
    assert events_sent(receiver) == ["test"]
