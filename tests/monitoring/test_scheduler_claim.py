"""The dispatcher's claim over many ticks: every slot handed over once, none missed, even
with dispatchers racing; its queries per tick do not grow with the endpoints due."""

import threading
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from monitoring import scheduler
from monitoring.models import Endpoint

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
TICK = timedelta(seconds=1)


def staggered(template: Endpoint, count: int, interval: int) -> dict[str, datetime]:
    """`count` copies of an endpoint, first slots spread over one interval; their first slots."""
    step = timedelta(seconds=interval) / count
    copies = [
        Endpoint(
            project_id=template.project_id,
            name=f"E{n}",
            type=template.type,
            target=template.target,
            target_masked=template.target_masked,
            interval_seconds=interval,
            timeout_seconds=2,
            next_check_at=NOW + step * n,
        )
        for n in range(count)
    ]
    Endpoint.objects.bulk_create(copies, batch_size=500)
    return {str(e.pk): e.next_check_at for e in copies}


def expected_slots(first: dict[str, datetime], interval: int, upto: datetime) -> set:
    """Every slot of every endpoint from its first up to `upto`, as sent: (id, ISO time)."""
    every = timedelta(seconds=interval)
    slots = set()
    for pk, slot in first.items():
        while slot <= upto:
            slots.add((pk, slot.isoformat()))
            slot += every
    return slots


def collect_sent(monkeypatch: pytest.MonkeyPatch) -> Counter:
    """Replace the broker with a counter of the (endpoint id, slot) items handed over."""
    sent: Counter = Counter()
    lock = threading.Lock()

    def send_batch(items, slow=False, location=None):
        with lock:
            sent.update((pk, slot) for pk, slot, *_ in items)

    monkeypatch.setattr(scheduler, "send_batch", send_batch)
    return sent


@pytest.mark.django_db(transaction=True)
def test_ticks_hand_over_every_slot_once(cast, make_endpoint, monkeypatch):
    sent = collect_sent(monkeypatch)
    template = make_endpoint(cast.project)
    Endpoint.objects.filter(pk=template.pk).update(next_check_at=None)
    first = staggered(template, 600, interval=5)
    ticks = [NOW + TICK * k for k in range(12)]

    for now in ticks:
        scheduler.dispatch(now=now, batch_size=50)

    expected = expected_slots(first, 5, ticks[-1] + scheduler.LOOKAHEAD)
    assert set(sent) == expected  # none missed, none off its phase
    assert set(sent.values()) == {1}  # none twice


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres("dispatchers in threads race under SKIP LOCKED")
def test_dispatchers_racing_tick_after_tick_hand_over_every_slot_once(
    cast, make_endpoint, monkeypatch
):
    sent = collect_sent(monkeypatch)
    monkeypatch.setattr(scheduler, "CLAIM_LIMIT", 40)  # several claims a tick: more interleaving
    template = make_endpoint(cast.project)
    Endpoint.objects.filter(pk=template.pk).update(next_check_at=None)
    first = staggered(template, 1500, interval=3)
    ticks = [NOW + TICK * k for k in range(8)]
    claimed = [0, 0, 0]

    def run(index: int, barriers: list[threading.Barrier]) -> None:
        try:
            for now, barrier in zip(ticks, barriers, strict=True):
                barrier.wait()
                claimed[index] += scheduler.dispatch(now=now, batch_size=25)
        finally:
            connections.close_all()

    barriers = [threading.Barrier(3) for _ in ticks]
    threads = [threading.Thread(target=run, args=(i, barriers)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    expected = expected_slots(first, 3, ticks[-1] + scheduler.LOOKAHEAD)
    assert set(sent) == expected
    assert set(sent.values()) == {1}
    assert sum(claimed) == len(expected)
    assert sum(1 for n in claimed if n) >= 2  # they really shared the work


@pytest.mark.parametrize("due", [10, 400])
@pytest.mark.postgres("the claim is one statement there; SQLite's writes a row per statement")
def test_a_tick_costs_the_same_queries_however_many_endpoints_are_due(
    due, cast, make_endpoint, monkeypatch
):
    collect_sent(monkeypatch)
    template = make_endpoint(cast.project)
    Endpoint.objects.filter(pk=template.pk).update(next_check_at=None)
    copies = staggered(template, due, interval=60)
    Endpoint.objects.filter(pk__in=list(copies)).update(next_check_at=NOW)
    scheduler.dispatch(now=NOW - timedelta(days=1), batch_size=50)  # the heartbeat row exists

    with CaptureQueriesContext(connection) as queries:
        assert scheduler.dispatch(now=NOW, batch_size=50) == due

    # The claim and the heartbeat row (the savepoints are the test's own transaction's).
    statements = [q["sql"] for q in queries.captured_queries if "SAVEPOINT" not in q["sql"]]
    assert len(statements) == 2


def test_an_endpoint_far_behind_restarts_within_its_next_interval(cast, make_endpoint):
    endpoint = make_endpoint(cast.project, interval_seconds=60)
    Endpoint.objects.filter(pk=endpoint.pk).update(next_check_at=NOW - timedelta(hours=1))

    assert scheduler.claim_due(now=NOW) == [(endpoint.pk, NOW - timedelta(hours=1))]

    endpoint.refresh_from_db()
    assert NOW + timedelta(seconds=30) <= endpoint.next_check_at <= NOW + timedelta(seconds=60)


def test_heartbeats_and_paused_endpoints_are_never_claimed(cast, make_endpoint):
    probed = make_endpoint(cast.project, name="probed")
    paused = make_endpoint(cast.project, name="paused", enabled=False)
    beat = make_endpoint(cast.project, name="job", type="heartbeat", target="")
    Endpoint.objects.update(next_check_at=NOW, enabled=True)
    Endpoint.objects.filter(pk=paused.pk).update(enabled=False)

    assert scheduler.claim_due(now=NOW) == [(probed.pk, NOW)]
    assert Endpoint.objects.get(pk=beat.pk).next_check_at == NOW
