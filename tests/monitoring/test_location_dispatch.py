"""The dispatcher and probe locations: one claim per endpoint per round, its batch sent to
every online location the endpoint lists, read back from the real queues on Redis."""

from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from queue import Empty
from typing import Any

import pytest
import redis
from celery import current_app
from django.utils import timezone
from kombu import Connection

from healthmon import queue
from monitoring import scheduler
from monitoring.locations_live import location_heartbeat
from monitoring.models import CheckResult, Endpoint, Location
from pipeline.tasks import run_checks

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
# The broker of these tests: a Redis database of their own.
BROKER_REDIS_URL = "redis://127.0.0.1:6379/8"
ONLINE = ("eu-west", "us-east", "ap-south")
QUEUES = ("celery", "slow", *(f"probes.{slug}" for slug in (*ONLINE, "sa-east")))

needs_broker = [
    pytest.mark.services,
    pytest.mark.postgres("the claim under SKIP LOCKED, as production dispatches"),
]


@pytest.fixture
def broker(monkeypatch: pytest.MonkeyPatch) -> Iterator[Connection]:
    """The dispatcher publishing for real to Redis (tests otherwise run tasks eagerly)."""
    client = redis.Redis.from_url(BROKER_REDIS_URL)
    client.flushdb()
    app = current_app._get_current_object()
    eager, app.conf.task_always_eager = app.conf.task_always_eager, False
    try:
        with app.connection_for_write(BROKER_REDIS_URL) as connection:
            publish = queue.enqueue

            def enqueue(name: str, *args: Any, **options: Any) -> None:
                publish(name, *args, connection=connection, **options)

            monkeypatch.setattr(queue, "enqueue", enqueue)
            yield connection
    finally:
        app.conf.task_always_eager = eager
    client.flushdb()
    client.close()


def drain(connection: Connection, name: str) -> list[tuple[list[Any], dict[str, Any]]]:
    """Every message waiting in a queue, as (items, kwargs) of `run_checks`."""
    found = []
    waiting = connection.SimpleQueue(name)
    try:
        while True:
            try:
                message = waiting.get_nowait()
            except Empty:
                return found
            assert message.headers["task"] == scheduler.RUN_CHECKS
            (items,), kwargs, _ = message.payload
            # What monitoring tools show of the arguments: the batch's size, not its ids.
            assert message.headers["argsrepr"] == f"[{len(items)} items]"
            found.append((items, kwargs))
            message.ack()
    finally:
        waiting.close()


def endpoints(template: Endpoint, count: int, locations: list[str]) -> list[Endpoint]:
    """`count` copies of an endpoint made by the service, listing `locations`, due NOW."""
    copies = [
        Endpoint(
            project_id=template.project_id,
            name=f"E{n}",
            type=template.type,
            target=template.target,
            target_masked=template.target_masked,
            config=template.config,
            config_masked=template.config_masked,
            interval_seconds=60,
            timeout_seconds=10,
            locations=locations,
            next_check_at=NOW,
        )
        for n in range(count)
    ]
    return Endpoint.objects.bulk_create(copies, batch_size=500)


def listing(endpoint: Endpoint, *slugs: str) -> Endpoint:
    """The endpoint, probed from these locations."""
    Endpoint.objects.filter(pk=endpoint.pk).update(locations=list(slugs))
    endpoint.locations = list(slugs)
    return endpoint


def heard(*slugs: str, at: datetime = NOW) -> None:
    for slug in slugs:
        location_heartbeat(slug=slug, hostname=f"worker@{slug}", now=at)


@pytest.mark.parametrize("_", [None], ids=["3 locations x 1,000 endpoints"])
@needs_broker[0]
@needs_broker[1]
def test_each_round_sends_one_item_per_endpoint_per_online_location(
    _, cast, make_endpoint, broker, django_capture_on_commit_callbacks
):
    assert BROKER_REDIS_URL  # this test reaches Redis
    heard(*ONLINE)
    Location.objects.create(slug="sa-east", name="Sao Paulo")  # defined, never heard: offline
    template = make_endpoint(cast.project)
    Endpoint.objects.filter(pk=template.pk).update(next_check_at=None)
    listed = endpoints(template, 1000, [*ONLINE, "sa-east"])
    rounds = [NOW + timedelta(minutes=k) for k in range(3)]

    for slot in rounds:
        Endpoint.objects.exclude(pk=template.pk).update(next_check_at=slot)
        heard(*ONLINE, at=slot)
        with django_capture_on_commit_callbacks(execute=True):
            assert scheduler.dispatch(now=slot, batch_size=200) == 1000

    sent = {name: drain(broker, name) for name in QUEUES}
    assert sent["celery"] == sent["slow"] == sent["probes.sa-east"] == []  # offline: nothing
    expected_pairs = {(str(e.pk), slot.isoformat()) for e in listed for slot in rounds}
    for slug in ONLINE:
        messages = sent[f"probes.{slug}"]
        assert {kwargs["location"] for _, kwargs in messages} == {slug}
        assert max(len(items) for items, _ in messages) == 200
        items = [item for batch, _ in messages for item in batch]
        pairs = Counter((pk, slot) for pk, slot, _ in items)
        assert set(pairs) == expected_pairs  # every endpoint, every round, once each
        assert set(pairs.values()) == {1}
        assert {expected for _, _, expected in items} == {3}  # three locations answer


@needs_broker[0]
@needs_broker[1]
def test_the_slow_lane_of_a_named_location_goes_to_its_own_queue(
    cast, make_endpoint, broker, django_capture_on_commit_callbacks
):
    assert BROKER_REDIS_URL  # this test reaches Redis
    heard("eu-west")
    failing_there = listing(make_endpoint(cast.project, name="failing in eu-west"), "eu-west")
    failing_here = make_endpoint(cast.project, name="failing here")
    healthy_here = make_endpoint(cast.project, name="healthy here")
    both = listing(make_endpoint(cast.project, name="both"), "default", "eu-west")
    Endpoint.objects.update(next_check_at=NOW, streak_ok=False)
    Endpoint.objects.filter(pk=healthy_here.pk).update(streak_ok=True)

    with django_capture_on_commit_callbacks(execute=True):
        scheduler.dispatch(now=NOW, batch_size=10)

    slot = NOW.isoformat()
    assert drain(broker, "celery") == [([[str(healthy_here.pk), slot]], {})]
    # The default location's batches carry no location: the task's default is that one.
    by_size = {2: "one location", 3: "two"}
    slow = {
        by_size[len(items[0])]: message
        for message in drain(broker, "slow")
        for items, _ in [message]
    }
    assert slow == {
        "one location": ([[str(failing_here.pk), slot]], {}),
        "two": ([[str(both.pk), slot, 2]], {}),
    }
    there = {
        by_size[len(items[0])]: message
        for message in drain(broker, "probes.eu-west")
        for items, _ in [message]
    }
    assert there == {
        "one location": ([[str(failing_there.pk), slot]], {"location": "eu-west"}),
        "two": ([[str(both.pk), slot, 2]], {"location": "eu-west"}),
    }


def test_an_endpoint_whose_locations_are_all_offline_gets_nothing_and_moves_on(
    cast, make_endpoint, monkeypatch, django_capture_on_commit_callbacks
):
    sent = []
    monkeypatch.setattr(scheduler, "send_batch", lambda *args: sent.append(args))
    heard("eu-west", at=NOW - timedelta(seconds=61))  # silent for a minute: offline
    stranded = listing(make_endpoint(cast.project, interval_seconds=30), "eu-west", "us-east")
    Endpoint.objects.filter(pk=stranded.pk).update(next_check_at=NOW)

    with django_capture_on_commit_callbacks(execute=True):
        assert scheduler.dispatch(now=NOW, batch_size=10) == 1

    assert sent == []
    stranded.refresh_from_db()
    assert stranded.next_check_at == NOW + timedelta(seconds=30)


def test_a_location_heard_within_the_minute_is_still_sent_to(
    cast, make_endpoint, monkeypatch, django_capture_on_commit_callbacks
):
    sent = []
    monkeypatch.setattr(scheduler, "send_batch", lambda *args: sent.append(args))
    heard("eu-west", at=NOW - timedelta(seconds=59))
    endpoint = listing(make_endpoint(cast.project), "eu-west")
    Endpoint.objects.filter(pk=endpoint.pk).update(next_check_at=NOW)

    with django_capture_on_commit_callbacks(execute=True):
        scheduler.dispatch(now=NOW, batch_size=10)

    assert sent == [([[str(endpoint.pk), NOW.isoformat()]], False, "eu-west")]


def test_a_batch_no_location_took_stays_due_and_one_some_took_does_not(
    cast, make_endpoint, monkeypatch, django_capture_on_commit_callbacks
):
    down = {"eu-west", "us-east"}

    def send(items, slow, location=None):
        if location in down:
            raise ConnectionError("Error 111 connecting to redis")

    monkeypatch.setattr(scheduler, "send_batch", send)
    heard("eu-west", "us-east")
    refused = listing(make_endpoint(cast.project, name="refused"), "eu-west", "us-east")
    partly = listing(make_endpoint(cast.project, name="partly"), "default", "eu-west")
    Endpoint.objects.update(next_check_at=NOW)

    with django_capture_on_commit_callbacks(execute=True):
        assert scheduler.dispatch(now=NOW, batch_size=10) == 2

    # Given back: claimed again next tick. Taken by the default location: its round goes on.
    assert scheduler.claim_due(now=NOW + timedelta(seconds=1)) == [(refused.pk, NOW)]
    partly.refresh_from_db()
    assert partly.next_check_at > NOW + timedelta(seconds=1)


def test_the_check_task_takes_items_of_three_and_a_location(
    cast, make_endpoint, http_peer, settings
):
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = True
    endpoint = listing(make_endpoint(cast.project, target=http_peer.url("/health")), "eu-west")

    slot = timezone.now().replace(microsecond=0)  # a probe waits for its slot

    stored = run_checks.apply(
        args=[[[str(endpoint.pk), slot.isoformat(), 2]]], kwargs={"location": "eu-west"}
    ).get()

    assert stored == 1
    assert CheckResult.objects.filter(endpoint=endpoint, scheduled_for=slot).count() == 1
