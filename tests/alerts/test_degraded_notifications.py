"""`endpoint.degraded` and `endpoint.recovered`: a success slower than `degraded_above_ms`
makes the endpoint degraded, which every covering channel hears of once, as it hears when it
is fast again; maintenance mutes both; members see them only in their projects."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import Role
from accounts.services import project_create
from alerts import services
from alerts.models import Delivery, DeliveryStatus, MaintenanceWindow
from alerts.services import event_key
from monitoring.models import EndpointStatus, StatusChange
from tests.alerts.receiver import webhook

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("loopback_allowed")]


@pytest.fixture
def slow_endpoint(cast, make_endpoint):
    return make_endpoint(cast.project, name="Checkout API", config={"degraded_above_ms": 500})


@pytest.fixture
def check(record, django_capture_on_commit_callbacks):
    """Store one successful check taking `ms`, running on-commit work (the sends)."""

    def run(endpoint, ms, at):
        with django_capture_on_commit_callbacks(execute=True):
            return record(endpoint, [(at, True, ms)])

    return run


def test_a_webhook_hears_once_when_an_endpoint_degrades_and_recovers(
    cast, slow_endpoint, receiver, check
):
    webhook(cast, receiver.url)
    now = timezone.now()
    check(slow_endpoint, 120.0, now)
    check(slow_endpoint, 900.0, now + timedelta(minutes=1))
    check(slow_endpoint, 950.0, now + timedelta(minutes=2))  # still degraded: nothing new
    check(slow_endpoint, 100.0, now + timedelta(minutes=3))

    sent = [json.loads(r.body) for r in receiver.requests]
    assert [s["event"] for s in sent] == ["endpoint.degraded", "endpoint.recovered"]
    degraded, recovered = sent
    into = StatusChange.objects.get(to_status=EndpointStatus.DEGRADED)
    assert degraded["id"] == str(event_key(into.pk, "endpoint.degraded"))
    assert degraded["incident"] is None
    assert degraded["endpoint"]["name"] == "Checkout API"
    assert degraded["project"] == {"id": str(cast.project.pk), "name": cast.project.name}
    assert degraded["change"] == {
        "from_status": "up",
        "to_status": "degraded",
        "changed_at": (now + timedelta(minutes=1)).isoformat(),
        "reason": "900 ms (above 500 ms)",
    }
    assert recovered["change"]["from_status"] == "degraded"
    assert recovered["change"]["to_status"] == "up"
    assert Delivery.objects.filter(status=DeliveryStatus.DELIVERED).count() == 2


def test_a_batch_delivered_twice_notifies_once(cast, slow_endpoint, receiver, record, check):
    webhook(cast, receiver.url)
    at = timezone.now()
    check(slow_endpoint, 900.0, at)
    check(slow_endpoint, 900.0, at)  # the same slot again: stored and told once

    assert [json.loads(r.body)["event"] for r in receiver.requests] == ["endpoint.degraded"]
    assert Delivery.objects.count() == 1


def test_going_down_from_degraded_is_the_incidents_to_tell(
    cast, make_endpoint, receiver, record, django_capture_on_commit_callbacks
):
    endpoint = make_endpoint(cast.project, failure_threshold=1, config={"degraded_above_ms": 500})
    webhook(cast, receiver.url)
    now = timezone.now()
    with django_capture_on_commit_callbacks(execute=True):
        record(endpoint, [(now, True, 900.0)])
        record(endpoint, [(now + timedelta(minutes=1), False, 20.0)])
        record(endpoint, [(now + timedelta(minutes=2), True, 900.0)])

    events = [json.loads(r.body)["event"] for r in receiver.requests]
    assert events == [
        "endpoint.degraded",
        "incident.opened",
        "incident.resolved",
        "endpoint.degraded",
    ]


def test_maintenance_mutes_them_for_good(cast, slow_endpoint, receiver, check):
    webhook(cast, receiver.url)
    now = timezone.now()
    services.maintenance_window_save(
        window=MaintenanceWindow(organization=cast.org),
        starts_at=now - timedelta(minutes=5),
        ends_at=now + timedelta(minutes=30),
        endpoints=[slow_endpoint],
    )
    check(slow_endpoint, 900.0, now)
    check(slow_endpoint, 100.0, now + timedelta(minutes=40))  # after the window: told

    assert [json.loads(r.body)["event"] for r in receiver.requests] == ["endpoint.recovered"]
    muted = Delivery.objects.get(status=DeliveryStatus.SUPPRESSED)
    assert (muted.event, muted.next_attempt_at) == ("endpoint.degraded", None)


def test_channels_not_covering_the_endpoint_hear_nothing(
    cast, slow_endpoint, receiver, check, make_endpoint
):
    elsewhere = project_create(organization=cast.org, name="Elsewhere")
    services.channel_create(
        organization=cast.org,
        name="Elsewhere only",
        kind="webhook",
        config={"url": receiver.url},
        projects=[elsewhere],
    )
    check(slow_endpoint, 900.0, timezone.now())

    assert receiver.requests == []
    assert Delivery.objects.count() == 0


def test_members_see_the_deliveries_of_their_projects_only(cast, slow_endpoint, receiver, check):
    webhook(cast, receiver.url)
    check(slow_endpoint, 900.0, timezone.now())
    stranger = project_create(organization=cast.org, name="Secret")
    hidden = slow_endpoint.__class__.objects.create(
        project=stranger, name="Hidden", type="http", target="https://h.test/"
    )
    Delivery.objects.create(
        channel=Delivery.objects.get().channel,
        event="endpoint.degraded",
        event_id=event_key(hidden.pk, "x"),
        endpoint=hidden,
        occurred_at=timezone.now(),
    )

    assert cast.member.role == Role.MEMBER
    seen = Delivery.objects.visible_to(cast.member)
    assert [d.endpoint_id for d in seen] == [slow_endpoint.pk]
    assert Delivery.objects.visible_to(cast.owner).count() == 2
