"""The dispatcher: what it claims, how it moves the schedule on, and that it never claims
one endpoint twice for one slot."""

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connections

from monitoring import scheduler
from monitoring.models import Endpoint
from monitoring.scheduler import claim_due, dispatch, next_slot

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


def due_at(endpoint, when):
    Endpoint.objects.filter(pk=endpoint.pk).update(next_check_at=when)


def test_claims_due_enabled_endpoints_oldest_first(cast, make_endpoint):
    late = make_endpoint(cast.project, name="late")
    on_time = make_endpoint(cast.project, name="on time")
    future = make_endpoint(cast.project, name="future")
    paused = make_endpoint(cast.project, name="paused", enabled=False)
    due_at(late, NOW - timedelta(seconds=5))
    due_at(on_time, NOW)
    due_at(future, NOW + timedelta(seconds=1))
    due_at(paused, NOW - timedelta(seconds=5))

    claimed = claim_due(now=NOW)

    assert claimed == [
        (late.pk, NOW - timedelta(seconds=5)),
        (on_time.pk, NOW),
    ]
    assert claim_due(now=NOW) == []


def test_an_on_time_endpoint_keeps_its_phase(cast, make_endpoint):
    endpoint = make_endpoint(cast.project, interval_seconds=30)
    due_at(endpoint, NOW - timedelta(seconds=2))

    claim_due(now=NOW)

    endpoint.refresh_from_db()
    assert endpoint.next_check_at == NOW + timedelta(seconds=28)


def test_an_endpoint_behind_restarts_at_a_random_point_of_its_next_interval():
    slots = {next_slot(NOW - timedelta(hours=1), 60, NOW) for _ in range(200)}

    assert all(NOW + timedelta(seconds=30) <= slot <= NOW + timedelta(seconds=60) for slot in slots)
    assert len({slot.second for slot in slots}) > 10  # spread, not piled on one second


def test_dispatch_sends_batches_of_the_configured_size_after_commit(
    cast, make_endpoint, monkeypatch, django_capture_on_commit_callbacks
):
    sent = []
    monkeypatch.setattr(scheduler, "send_batch", lambda items, slow: sent.append(items))
    endpoints = [make_endpoint(cast.project, name=f"E{n}") for n in range(5)]
    for endpoint in endpoints:
        due_at(endpoint, NOW)

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        assert dispatch(now=NOW, batch_size=2) == 5
    assert sent == []  # nothing leaves before the claim is committed
    for callback in callbacks:
        callback()

    assert [len(batch) for batch in sent] == [2, 2, 1]
    assert {pk for batch in sent for pk, _ in batch} == {str(e.pk) for e in endpoints}
    assert {slot for batch in sent for _, slot in batch} == {NOW.isoformat()}


def test_the_compare_and_set_claim_takes_each_slot_once(cast, make_endpoint):
    endpoint = make_endpoint(cast.project)
    due_at(endpoint, NOW)
    rows = Endpoint.objects.due(NOW).values_list(
        "id", "next_check_at", "interval_seconds", "streak_ok"
    )

    first = scheduler._claim_compare_and_set(rows, NOW, 10)
    # A second dispatcher that read the row before the first one wrote it: its
    # compare-and-set finds next_check_at moved on and claims nothing.
    stale = [(endpoint.pk, NOW, 60, None)]
    second = scheduler._claim_compare_and_set(stale, NOW, 10)

    assert first == [(endpoint.pk, NOW, False)]
    assert second == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres("needs SKIP LOCKED")
def test_two_dispatchers_racing_never_claim_the_same_endpoint_twice(cast, make_endpoint):
    endpoints = [make_endpoint(cast.project, name=f"E{n}") for n in range(300)]
    for round_ in range(5):
        now = NOW + timedelta(minutes=round_)
        Endpoint.objects.update(next_check_at=now)
        barrier = threading.Barrier(3)
        claims: list[list] = [[], [], []]

        def run(index, claims=claims, now=now, barrier=barrier):
            try:
                barrier.wait()
                while batch := claim_due(now=now, limit=25):
                    claims[index] += batch
            finally:
                connections.close_all()

        threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        ids = [pk for claim in claims for pk, _ in claim]
        assert len(ids) == len(set(ids)) == len(endpoints)
        assert sum(1 for claim in claims if claim) >= 2  # they really ran side by side


def test_slots_the_broker_refused_are_claimed_again_on_the_next_tick(
    cast, make_endpoint, monkeypatch, django_capture_on_commit_callbacks
):
    def broker_down(items, slow):
        raise ConnectionError("Error 111 connecting to redis")

    monkeypatch.setattr(scheduler, "send_batch", broker_down)
    endpoint = make_endpoint(cast.project)
    due_at(endpoint, NOW)

    with django_capture_on_commit_callbacks(execute=True):
        assert dispatch(now=NOW, batch_size=10) == 1

    assert claim_due(now=NOW + timedelta(seconds=1)) == [(endpoint.pk, NOW)]


def test_dispatch_hands_over_what_falls_due_before_the_next_tick(
    cast, make_endpoint, monkeypatch, django_capture_on_commit_callbacks
):
    sent = []
    monkeypatch.setattr(scheduler, "send_batch", lambda items, slow: sent.append(items))
    soon = make_endpoint(cast.project, name="soon")
    later = make_endpoint(cast.project, name="later")
    due_at(soon, NOW + timedelta(milliseconds=600))
    due_at(later, NOW + timedelta(milliseconds=1600))

    with django_capture_on_commit_callbacks(execute=True):
        dispatch(now=NOW, batch_size=10)

    assert sent == [[[str(soon.pk), (NOW + timedelta(milliseconds=600)).isoformat()]]]


def test_endpoints_whose_last_check_failed_go_to_the_slow_lane(
    cast, make_endpoint, monkeypatch, django_capture_on_commit_callbacks
):
    lanes = {}
    monkeypatch.setattr(scheduler, "send_batch", lambda items, slow: lanes.setdefault(slow, items))
    healthy = make_endpoint(cast.project, name="healthy")
    failing = make_endpoint(cast.project, name="failing")
    Endpoint.objects.filter(pk=healthy.pk).update(streak_ok=True)
    Endpoint.objects.filter(pk=failing.pk).update(streak_ok=False)
    for endpoint in (healthy, failing):
        due_at(endpoint, NOW)

    with django_capture_on_commit_callbacks(execute=True):
        dispatch(now=NOW, batch_size=10)

    assert [pk for pk, _ in lanes[False]] == [str(healthy.pk)]
    assert [pk for pk, _ in lanes[True]] == [str(failing.pk)]
