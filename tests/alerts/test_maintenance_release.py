"""An outage that outlasts its maintenance window is told of when the window ends: the
opening held back is sent then (and its resolution after it), while one over before the
window ends is never told."""

import json
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import connections, transaction
from django.utils import timezone

from alerts import services
from alerts.delivery import HELD_HORIZON, openings_release
from alerts.models import Delivery, DeliveryStatus, MaintenanceWindow
from alerts.services import event_key
from alerts.tasks import dispatch_deliveries
from monitoring.models import Incident
from tests.alerts.receiver import webhook

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("loopback_allowed")]


def window(cast: Any, start: Any, end: Any, **fields: Any) -> MaintenanceWindow:
    return services.maintenance_window_save(
        window=MaintenanceWindow(organization=cast.org), starts_at=start, ends_at=end, **fields
    )


@pytest.fixture
def release(django_capture_on_commit_callbacks: Any) -> Callable[[Any], int]:
    """Run the release at a moment, sending what it queues."""

    def run(at: Any) -> int:
        with django_capture_on_commit_callbacks(execute=True):
            return openings_release(now=at)

    return run


def events(receiver: Any) -> list[str]:
    return [json.loads(request.body)["event"] for request in receiver.requests]


def test_an_outage_that_outlasts_its_window_is_told_of_when_the_window_ends(
    cast, endpoint, receiver, go_down, release
):
    webhook(cast, receiver.url)
    now = timezone.now()
    window(cast, now - timedelta(minutes=5), now + timedelta(minutes=30))
    go_down(endpoint, at=now)
    held = Delivery.objects.get()
    assert held.status == DeliveryStatus.SUPPRESSED

    assert release(now + timedelta(minutes=10)) == 0  # still in maintenance
    held.refresh_from_db()
    assert held.status == DeliveryStatus.SUPPRESSED
    assert held.next_attempt_at == now + timedelta(minutes=30)  # looked at again at its end
    assert receiver.requests == []

    assert release(now + timedelta(minutes=30, seconds=3)) == 1
    assert events(receiver) == ["incident.opened"]
    opened = json.loads(receiver.requests[0].body)
    assert opened["id"] == str(event_key(endpoint.incidents.get().pk, "incident.opened"))
    held.refresh_from_db()
    assert (held.status, held.attempts) == (DeliveryStatus.DELIVERED, 1)

    # Its opening was told, so its resolution is too.
    go_down(endpoint, ok=True, at=now + timedelta(minutes=40))
    assert events(receiver) == ["incident.opened", "incident.resolved"]
    assert release(now + timedelta(minutes=50)) == 0  # nothing is sent twice


def test_the_release_decrypts_no_endpoints_target(cast, endpoint, receiver, go_down, request):
    webhook(cast, receiver.url)
    now = timezone.now()
    window(cast, now - timedelta(minutes=5), now + timedelta(minutes=30))
    go_down(endpoint, at=now)
    request.getfixturevalue("endpoint_secrets_unread")  # from here on
    assert openings_release(now=now + timedelta(minutes=30, seconds=3)) == 1


def test_an_outage_over_before_its_window_ends_is_never_told(
    cast, endpoint, receiver, go_down, release
):
    webhook(cast, receiver.url)
    now = timezone.now()
    window(cast, now - timedelta(minutes=5), now + timedelta(minutes=30))
    go_down(endpoint, at=now)
    go_down(endpoint, ok=True, at=now + timedelta(minutes=10))

    assert release(now + timedelta(minutes=31)) == 0
    assert receiver.requests == []
    rows = Delivery.objects.order_by("event")
    assert [(d.event, d.status) for d in rows] == [
        ("incident.opened", DeliveryStatus.SUPPRESSED),
        ("incident.resolved", DeliveryStatus.SUPPRESSED),
    ]
    assert [d.next_attempt_at for d in rows] == [None, None]  # never looked at again


def test_a_window_that_follows_on_holds_the_opening_until_the_last_one_ends(
    cast, endpoint, receiver, go_down, release
):
    webhook(cast, receiver.url)
    now = timezone.now()
    window(cast, now - timedelta(minutes=5), now + timedelta(minutes=30))
    window(cast, now + timedelta(minutes=30), now + timedelta(minutes=60), endpoints=[endpoint])
    go_down(endpoint, at=now)

    assert release(now + timedelta(minutes=1)) == 0
    assert Delivery.objects.get().next_attempt_at == now + timedelta(minutes=60)
    assert release(now + timedelta(minutes=59)) == 0
    assert release(now + timedelta(minutes=60)) == 1
    assert events(receiver) == ["incident.opened"]


def test_a_window_longer_than_the_horizon_is_looked_at_again_after_it(
    cast, endpoint, receiver, go_down, release
):
    webhook(cast, receiver.url)
    now = timezone.now()
    window(cast, now - timedelta(minutes=5), now + timedelta(days=3))
    go_down(endpoint, at=now)

    later = now + timedelta(minutes=1)
    assert release(later) == 0
    assert Delivery.objects.get().next_attempt_at == later + HELD_HORIZON
    assert receiver.requests == []


def test_only_the_ended_windows_openings_are_sent(
    cast, endpoint, receiver, go_down, release, make_endpoint
):
    other = make_endpoint(cast.project, name="Billing", failure_threshold=1)
    webhook(cast, receiver.url)
    now = timezone.now()
    window(cast, now - timedelta(minutes=5), now + timedelta(minutes=10), endpoints=[endpoint])
    window(cast, now - timedelta(minutes=5), now + timedelta(hours=2), endpoints=[other])
    go_down(endpoint, at=now)
    go_down(other, at=now)

    assert release(now + timedelta(minutes=11)) == 1
    assert [json.loads(r.body)["endpoint"]["id"] for r in receiver.requests] == [str(endpoint.pk)]
    still = Delivery.objects.get(incident__endpoint=other)
    assert (still.status, still.next_attempt_at) == (
        DeliveryStatus.SUPPRESSED,
        now + timedelta(hours=2),
    )


def test_a_resolution_goes_only_to_the_channels_told_of_the_opening(
    cast, endpoint, receiver, go_down, django_capture_on_commit_callbacks
):
    first, second = webhook(cast, receiver.url), webhook(cast, receiver.url, name="Other")
    now = timezone.now()
    window(cast, now - timedelta(minutes=5), now + timedelta(minutes=10))
    go_down(endpoint, at=now)
    with django_capture_on_commit_callbacks(execute=True):  # one opening this sweep
        assert openings_release(now=now + timedelta(minutes=11), limit=1) == 1
    told = Delivery.objects.get(status=DeliveryStatus.DELIVERED).channel_id
    untold = ({first.pk, second.pk} - {told}).pop()

    go_down(endpoint, ok=True, at=now + timedelta(minutes=12))

    assert events(receiver) == ["incident.opened", "incident.resolved"]
    resolutions = Delivery.objects.filter(event="incident.resolved")
    assert {(d.channel_id, d.status) for d in resolutions} == {
        (told, DeliveryStatus.DELIVERED),
        (untold, DeliveryStatus.SUPPRESSED),
    }
    with django_capture_on_commit_callbacks(execute=True):  # the other one, too late
        assert openings_release(now=now + timedelta(minutes=13)) == 0
    assert len(receiver.requests) == 2


def test_an_outage_over_across_the_end_of_its_window_in_one_batch_is_never_told(
    cast, endpoint, receiver, record, django_capture_on_commit_callbacks, release
):
    webhook(cast, receiver.url)
    now = timezone.now()
    window(cast, now - timedelta(minutes=5), now + timedelta(minutes=1))
    checks = [(now, False, 20.0, "timeout"), (now + timedelta(minutes=2), True, 20.0)]
    with django_capture_on_commit_callbacks(execute=True):
        record(endpoint, checks)  # opened inside the window, resolved after it

    assert receiver.requests == []
    assert release(now + timedelta(minutes=3)) == 0
    assert set(Delivery.objects.values_list("event", "status")) == {
        ("incident.opened", DeliveryStatus.SUPPRESSED),
        ("incident.resolved", DeliveryStatus.SUPPRESSED),
    }


def test_the_beat_sweep_releases_openings_whose_window_has_ended(
    cast, endpoint, receiver, go_down, django_capture_on_commit_callbacks
):
    webhook(cast, receiver.url)
    now = timezone.now()
    ends = now + timedelta(seconds=1)
    window(cast, now - timedelta(minutes=30), ends)
    go_down(endpoint, at=now)
    with django_capture_on_commit_callbacks(execute=True):
        assert dispatch_deliveries() == 0  # the beat task, in the window
    assert receiver.requests == []

    time.sleep(max(0.0, (ends - timezone.now()).total_seconds()) + 0.05)
    with django_capture_on_commit_callbacks(execute=True):
        assert dispatch_deliveries() == 1  # the first sweep after it

    assert events(receiver) == ["incident.opened"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres("needs row locks")
def test_an_opening_whose_incident_is_being_resolved_is_not_sent(
    cast, endpoint, receiver, go_down, release
):
    """Ingest resolving the incident holds its row: the release leaves the opening to the
    next sweep, which finds the incident resolved and keeps the opening held back."""
    webhook(cast, receiver.url)
    now = timezone.now()
    window(cast, now - timedelta(minutes=5), now + timedelta(minutes=10))
    go_down(endpoint, at=now)
    incident = Incident.objects.get()
    first_look = Delivery.objects.get().next_attempt_at
    resolving, finish = threading.Event(), threading.Event()

    def resolve() -> None:
        try:
            with transaction.atomic():
                Incident.objects.filter(pk=incident.pk).update(resolved_at=timezone.now())
                resolving.set()
                finish.wait(10)
        finally:
            connections.close_all()

    thread = threading.Thread(target=resolve)
    thread.start()
    try:
        assert resolving.wait(10)
        assert release(now + timedelta(minutes=11)) == 0  # locked: left for the next sweep
        assert Delivery.objects.get().next_attempt_at == first_look  # untouched
    finally:
        finish.set()
        thread.join()

    assert release(now + timedelta(minutes=11)) == 0
    assert receiver.requests == []
    held = Delivery.objects.get()
    assert (held.status, held.next_attempt_at) == (DeliveryStatus.SUPPRESSED, None)
