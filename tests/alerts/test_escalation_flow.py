"""Escalation end to end: a policy of three steps (0, 5 and 15 min) with reminders every 30
min, driven by a moved clock, sends exactly the expected messages to real local receivers,
in order; acknowledging, resolving, maintenance and a loop that dies change that as told."""

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from django.conf import settings
from django.test import Client

from accounts.services import project_create
from alerts import services
from alerts.delivery import OVERTAKEN, deliveries_dispatch
from alerts.escalation_validation import StepInput
from alerts.models import Delivery, Escalation, MaintenanceWindow, NotificationEvent
from alerts.services import escalation as escalation_module
from alerts.services import escalation_key, escalations_run
from alerts.tasks import dispatch_deliveries, run_escalations
from monitoring.models import ActivityKind, Incident, IncidentActivity
from tests.alerts.receiver import Receiver, webhook

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("loopback_allowed")]

T0 = datetime(2030, 3, 4, 10, 0, tzinfo=UTC)

# The escalation loop's own timeline lines (each delivery adds its outcome line too).
STEP_LINES = [ActivityKind.ESCALATED, ActivityKind.REMINDED]


@pytest.fixture
def peers():
    found = {name: Receiver() for name in "ABC"}
    try:
        yield found
    finally:
        for peer in found.values():
            peer.stop()


@pytest.fixture
def channels(cast, peers):
    """A: told of the opening (covers the endpoint); B and C: escalation only (narrowed to
    another project, so they hear of this incident through the policy alone)."""
    elsewhere = project_create(organization=cast.org, name="Elsewhere")
    return {
        "A": webhook(cast, peers["A"].url, name="Ops room"),
        "B": webhook(cast, peers["B"].url, name="Primary on-call", projects=[elsewhere]),
        "C": webhook(cast, peers["C"].url, name="Engineering manager", projects=[elsewhere]),
    }


@pytest.fixture
def policy(cast, channels):
    return services.escalation_policy_create(
        organization=cast.org,
        name="Checkout on-call",
        steps=[
            StepInput(0, (channels["A"], channels["B"])),
            StepInput(5, (channels["B"],)),
            StepInput(15, (channels["C"],)),
        ],
        repeat_every_minutes=30,
    )


def at(moment: datetime, capture: Any, run: Any = escalations_run) -> int:
    """Run the loop (and the delivery tasks it queues) with the clock at `moment`."""
    with time_machine.travel(moment, tick=False), capture(execute=True):
        return run()


def received(peer: Receiver) -> list[tuple[str, int, int]]:
    """(event, step, reminder) of each message a receiver got, in order."""
    found = []
    for request in peer.requests:
        body = json.loads(request.body)
        escalation = body.get("escalation") or {"step": 0, "reminder": 0}
        found.append((body["event"], escalation["step"], escalation["reminder"]))
    return found


def open_incident(endpoint, go_down) -> Incident:
    with time_machine.travel(T0, tick=False):
        go_down(endpoint, at=T0)
    return endpoint.incidents.get()


def by_api(cast: Any, api: Any, incident: Incident, peer: Receiver) -> None:
    """`POST /api/v1/incidents/{id}/acknowledge`, as a member."""
    response = api.as_user(cast.member).post(f"/api/v1/incidents/{incident.pk}/acknowledge")
    assert response.status_code == 200, response.content


def by_page(cast: Any, api: Any, incident: Incident, peer: Receiver) -> None:
    """The incident page's button: the form the page shows, posted as a browser posts it
    (CSRF checked, its token from the form), signed in as a member."""
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(cast.member)
    page = browser.get(f"/incidents/{incident.pk}").content.decode()
    form = re.search(
        r'<form method="post" action="(/incidents/[^"]+/acknowledge)">\s*'
        r'<input type="hidden" name="csrfmiddlewaretoken" value="([^"]+)">',
        page,
    )
    assert form is not None, "no acknowledge button on the page"
    response = browser.post(form[1], {"csrfmiddlewaretoken": form[2]})
    assert response.status_code == 302
    assert response["Location"] == f"/incidents/{incident.pk}"


def by_link(cast: Any, api: Any, incident: Incident, peer: Receiver) -> None:
    """The one-click link of the last message the peer got, posted with no login."""
    link = json.loads(peer.requests[-1].body)["incident"]["ack_url"]
    assert link.startswith(settings.WEB_BASE_URL + "/ack/")
    response = Client().post(link.removeprefix(settings.WEB_BASE_URL))
    assert response.status_code == 200


ACKNOWLEDGE = {"api": by_api, "page": by_page, "link": by_link}
Acknowledge = Callable[[Any, Any, Incident, Receiver], None]


def test_three_steps_then_reminders_reach_each_receiver_once_in_order(
    cast, endpoint, policy, peers, go_down, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    incident = open_incident(endpoint, go_down)
    assert Escalation.objects.get(incident=incident).next_escalation_at == T0

    minutes = [0.1, 1, 4.9, 5, 5.1, 14, 15, 16, 44, 45, 46, 74, 75, 76]
    written = [at(T0 + timedelta(minutes=m), capture) for m in minutes]

    assert written == [1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0]
    # A was told of the opening: the first step does not page it twice.
    assert received(peers["A"]) == [("incident.opened", 0, 0)]
    assert received(peers["B"]) == [("incident.escalated", 1, 0), ("incident.escalated", 2, 0)]
    assert received(peers["C"]) == [
        ("incident.escalated", 3, 0),
        ("incident.escalated", 3, 1),
        ("incident.escalated", 3, 2),
    ]
    first = json.loads(peers["B"].requests[0].body)
    assert first["id"] == str(escalation_key(incident.pk, 0, 0))
    assert first["incident"]["id"] == str(incident.pk)
    assert first["endpoint"]["name"] == "Checkout API"
    assert first["escalation"] == {
        "policy": {"id": str(policy.pk), "name": "Checkout on-call"},
        "step": 1,
        "steps": 3,
        "reminder": 0,
    }
    lines = list(
        IncidentActivity.objects.filter(incident=incident, kind__in=STEP_LINES).values_list(
            "kind", "text"
        )
    )
    assert [kind for kind, _ in lines] == [ActivityKind.ESCALATED] * 3 + [ActivityKind.REMINDED] * 2
    assert (
        lines[0][1]
        == "Escalation step 1 of 3 of policy “Checkout on-call”: sent to Primary on-call"
    )
    assert lines[3][1] == "Reminder 1 of policy “Checkout on-call”: sent to Engineering manager"
    assert all("http" not in text and "SECRET" not in text for _, text in lines)
    # The sweep finds nothing left to send: every delivery went out once.
    assert at(T0 + timedelta(minutes=80), capture, deliveries_dispatch) == 0


def test_acknowledged_after_step_two_nothing_more_is_sent(
    cast, endpoint, policy, peers, go_down, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    incident = open_incident(endpoint, go_down)
    at(T0 + timedelta(seconds=5), capture)
    at(T0 + timedelta(minutes=5), capture)
    Incident.objects.filter(pk=incident.pk).update(
        acknowledged_at=T0 + timedelta(minutes=6), acknowledged_by=cast.admin
    )

    for minutes in (15, 45, 75, 200):
        assert at(T0 + timedelta(minutes=minutes), capture) == 0

    assert received(peers["B"]) == [("incident.escalated", 1, 0), ("incident.escalated", 2, 0)]
    assert peers["C"].requests == []
    assert Escalation.objects.get(incident=incident).next_escalation_at is None


@pytest.mark.parametrize("via", ACKNOWLEDGE)
def test_acknowledged_after_step_two_by_a_real_path_nothing_more_is_sent(
    cast, api, endpoint, policy, peers, go_down, django_capture_on_commit_callbacks, via
):
    # As above, acknowledged the ways people do: the API, the page's button, the link in
    # the step's own message. The beat's delivery sweep runs too (announcing it).
    capture = django_capture_on_commit_callbacks
    acknowledge: Acknowledge = ACKNOWLEDGE[via]
    incident = open_incident(endpoint, go_down)
    at(T0 + timedelta(seconds=5), capture)
    at(T0 + timedelta(minutes=5), capture)
    with time_machine.travel(T0 + timedelta(minutes=6), tick=False):
        acknowledge(cast, api, incident, peers["B"])
    incident.refresh_from_db()
    assert incident.acknowledged_via == via

    for minutes in (15, 45, 75, 200):
        assert at(T0 + timedelta(minutes=minutes), capture) == 0
        at(T0 + timedelta(minutes=minutes, seconds=1), capture, dispatch_deliveries)

    assert received(peers["B"]) == [("incident.escalated", 1, 0), ("incident.escalated", 2, 0)]
    assert peers["C"].requests == []
    assert received(peers["A"]) == [("incident.opened", 0, 0), ("incident.acknowledged", 0, 0)]
    assert Escalation.objects.get(incident=incident).next_escalation_at is None
    assert IncidentActivity.objects.filter(incident=incident, kind__in=STEP_LINES).count() == 2


def test_resolved_nothing_more_is_sent(
    cast, endpoint, policy, peers, go_down, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    incident = open_incident(endpoint, go_down)
    at(T0 + timedelta(seconds=5), capture)
    with time_machine.travel(T0 + timedelta(minutes=3), tick=False):
        go_down(endpoint, ok=True, at=T0 + timedelta(minutes=3))

    for minutes in (5, 15, 45, 200):
        assert at(T0 + timedelta(minutes=minutes), capture) == 0

    assert received(peers["B"]) == [("incident.escalated", 1, 0)]
    assert peers["C"].requests == []
    assert Escalation.objects.get(incident=incident).next_escalation_at is None


def test_maintenance_holds_a_step_until_the_window_ends_and_keeps_the_gaps_after_it(
    cast, endpoint, policy, peers, go_down, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    incident = open_incident(endpoint, go_down)
    at(T0 + timedelta(seconds=5), capture)
    window_end = T0 + timedelta(minutes=20)
    MaintenanceWindow.objects.create(
        organization=cast.org, starts_at=T0 + timedelta(minutes=4), ends_at=window_end
    )

    assert at(T0 + timedelta(minutes=5), capture) == 0
    escalation = Escalation.objects.get(incident=incident)
    assert (escalation.next_step, escalation.next_escalation_at) == (1, window_end)
    assert at(window_end, capture) == 1  # step 2, when the window ends
    assert at(window_end + timedelta(minutes=9), capture) == 0
    assert at(window_end + timedelta(minutes=10), capture) == 1  # step 3, 10 min after step 2

    assert received(peers["B"]) == [("incident.escalated", 1, 0), ("incident.escalated", 2, 0)]
    assert received(peers["C"]) == [("incident.escalated", 3, 0)]


def test_a_loop_that_dies_after_writing_sends_the_step_on_the_next_run_once(
    cast, endpoint, policy, peers, go_down, django_capture_on_commit_callbacks, monkeypatch
):
    capture = django_capture_on_commit_callbacks
    incident = open_incident(endpoint, go_down)
    real = escalation_module._timeline

    def dies(*args: Any, **kwargs: Any) -> None:
        real(*args, **kwargs)
        raise RuntimeError("worker lost")

    monkeypatch.setattr(escalation_module, "_timeline", dies)
    with pytest.raises(RuntimeError):
        at(T0 + timedelta(seconds=5), capture)
    assert not Delivery.objects.filter(event=NotificationEvent.ESCALATED).exists()
    assert Escalation.objects.get(incident=incident).next_step == 0
    monkeypatch.setattr(escalation_module, "_timeline", real)

    assert at(T0 + timedelta(seconds=10), capture) == 1
    assert at(T0 + timedelta(seconds=15), capture) == 0
    assert received(peers["B"]) == [("incident.escalated", 1, 0)]
    assert IncidentActivity.objects.filter(incident=incident, kind__in=STEP_LINES).count() == 1


def test_a_disabled_channel_is_skipped_and_a_declared_incident_does_not_escalate(
    cast, endpoint, policy, channels, peers, go_down, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    services.channel_update(channel=channels["B"], enabled=False)
    incident = open_incident(endpoint, go_down)
    Incident.objects.create(
        organization=cast.org, kind="manual", title="Payments slow", started_at=T0
    )

    assert at(T0 + timedelta(seconds=5), capture) == 0
    assert peers["B"].requests == []
    assert Escalation.objects.count() == 1  # the measured one only
    line = IncidentActivity.objects.get(incident=incident, kind__in=STEP_LINES)
    assert "no channel" in line.text


def test_a_step_reaches_a_channel_whatever_events_it_chose(
    cast, endpoint, policy, channels, peers, go_down, django_capture_on_commit_callbacks
):
    channels["B"].events = []
    channels["B"].save(update_fields=["events"])
    open_incident(endpoint, go_down)

    assert at(T0 + timedelta(seconds=5), django_capture_on_commit_callbacks) == 1
    assert received(peers["B"]) == [("incident.escalated", 1, 0)]


def test_a_step_waiting_out_a_retry_is_not_sent_once_acknowledged(
    cast, endpoint, policy, peers, go_down, django_capture_on_commit_callbacks
):
    # B's receiver fails the first step: its delivery waits out a back-off. Someone
    # acknowledges meanwhile: the retry must not page B any more.
    capture = django_capture_on_commit_callbacks
    peers["B"].statuses = [500, 200]
    incident = open_incident(endpoint, go_down)
    at(T0 + timedelta(minutes=0.1), capture)
    assert received(peers["B"]) == [("incident.escalated", 1, 0)]
    Incident.objects.filter(pk=incident.pk).update(acknowledged_at=T0 + timedelta(minutes=1))

    at(T0 + timedelta(minutes=3), capture, run=deliveries_dispatch)

    assert received(peers["B"]) == [("incident.escalated", 1, 0)]  # the failed try only
    step = Delivery.objects.get(
        channel=policy.steps.get(position=0).channels.get(name="Primary on-call"),
        event=NotificationEvent.ESCALATED,
    )
    assert (step.status, step.last_error) == ("suppressed", OVERTAKEN)


@pytest.mark.parametrize("via", ACKNOWLEDGE)
def test_a_step_waiting_out_a_retry_is_not_sent_once_acknowledged_by_a_real_path(
    cast, api, endpoint, policy, peers, go_down, django_capture_on_commit_callbacks, via
):
    capture = django_capture_on_commit_callbacks
    acknowledge: Acknowledge = ACKNOWLEDGE[via]
    peers["B"].statuses = [500, 200]
    incident = open_incident(endpoint, go_down)
    at(T0 + timedelta(minutes=0.1), capture)
    assert received(peers["B"]) == [("incident.escalated", 1, 0)]
    with time_machine.travel(T0 + timedelta(minutes=1), tick=False):
        acknowledge(cast, api, incident, peers["B"])

    for minutes in (3, 10, 30):
        at(T0 + timedelta(minutes=minutes), capture, run=deliveries_dispatch)
        at(T0 + timedelta(minutes=minutes, seconds=1), capture)

    assert received(peers["B"]) == [("incident.escalated", 1, 0)]  # the failed try only
    assert peers["C"].requests == []
    step = Delivery.objects.get(
        channel=policy.steps.get(position=0).channels.get(name="Primary on-call"),
        event=NotificationEvent.ESCALATED,
    )
    assert (step.status, step.last_error) == ("suppressed", OVERTAKEN)


def test_beat_runs_the_escalation_loop_every_30_seconds_or_less():
    entry = settings.CELERY_BEAT_SCHEDULE["run-escalations"]

    assert entry["task"] == run_escalations.name
    assert 0 < entry["schedule"] <= 30


def test_each_step_and_reminder_is_sent_by_the_first_beat_run_after_it_is_due(
    cast, endpoint, policy, peers, go_down, django_capture_on_commit_callbacks
):
    # The worst phase of beat: a run lands just before each send is due, so the next one,
    # a beat interval later, sends it; it must be within 30 s of due.
    capture = django_capture_on_commit_callbacks
    interval = timedelta(seconds=settings.CELERY_BEAT_SCHEDULE["run-escalations"]["schedule"])
    incident = open_incident(endpoint, go_down)
    sends = [  # (due, step index, reminder)
        (T0, 0, 0),
        (T0 + timedelta(minutes=5), 1, 0),
        (T0 + timedelta(minutes=15), 2, 0),
        (T0 + timedelta(minutes=45), 2, 1),
    ]

    for due, index, reminder in sends:
        assert at(due - timedelta(seconds=1), capture) == 0  # not early
        assert at(due - timedelta(seconds=1) + interval, capture) == 1
        delivery = Delivery.objects.get(event_id=escalation_key(incident.pk, index, reminder))
        assert delivery.status == "delivered"
        assert delivery.delivered_at is not None
        assert timedelta(0) <= delivery.delivered_at - due <= timedelta(seconds=30)

    assert received(peers["B"]) == [("incident.escalated", 1, 0), ("incident.escalated", 2, 0)]
    assert received(peers["C"]) == [("incident.escalated", 3, 0), ("incident.escalated", 3, 1)]
