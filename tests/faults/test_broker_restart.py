"""Redis killed with batches queued, and started again (empty: no persistence) on the same
port: beat, the dispatcher and the workers reconnect by themselves, and every endpoint,
overdue by then, is checked again within one interval of Redis coming back.

The batches queued at the kill are lost with Redis's memory; their endpoints are simply
checked at the next claim. The test runs its own redis-server: the machine's is shared.
"""

import math
import socket
import time
from datetime import timedelta

import pytest
import redis
from celery import Celery
from django.db.models import Max
from django.utils import timezone

from monitoring.models import CheckResult, Endpoint
from monitoring.scheduler import LOOKAHEAD
from tests.faults.processes import POSTGRESQL_ONLY, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), POSTGRESQL_ONLY]

ENDPOINTS = 20
INTERVAL = 6
# Long enough for every endpoint to fall due: a slot claimed just before the kill lies up to
# the dispatcher's lookahead ahead, and its next one an interval after that.
DOWN_SECONDS = INTERVAL + math.ceil(LOOKAHEAD.total_seconds()) + 1


def test_beat_and_workers_recover_by_themselves_when_redis_restarts(
    cast, processes, redis_server, counting_target, endpoints_on, monkeypatch
):
    # Five batches a round, of probes that take 0.3 s, for two pool processes.
    counting_target.delay = 0.3
    processes.env.update(PROBE_BATCH_SIZE="4")
    endpoints = endpoints_on(
        cast.project, counting_target, ENDPOINTS, interval_seconds=INTERVAL, timeout_seconds=2
    )
    processes.worker("batches", "--concurrency=2")
    processes.dispatcher()
    processes.beat()
    processes.wait_ready("batches", "dispatcher", "beat")
    wait_for(lambda: _checked_since(endpoints, timezone.now() - timedelta(hours=1)), timeout=30)

    # A worker that keeps up lets no batch wait: hold its consumer until a backlog forms
    # (five batches a round), give it back, and kill Redis while batches still wait there.
    # (Celery reads its broker from this variable before any argument; the tests' is memory.)
    monkeypatch.setenv("CELERY_BROKER_URL", redis_server.url())
    control = Celery(set_as_current=False).control
    batches = {"destination": [f"batches@{socket.gethostname()}"], "reply": True, "timeout": 10}
    with redis.Redis(port=redis_server.port) as queue:
        assert control.cancel_consumer("celery", **batches)
        wait_for(lambda: queue.llen("celery") >= 4, timeout=2 * INTERVAL)
        assert control.add_consumer("celery", **batches)
        queued = queue.llen("celery")
    redis_server.kill()
    killed = timezone.now()
    time.sleep(DOWN_SECONDS)
    # Batches handed over before the kill may start up to 1.5 s ahead, then nothing runs.
    stalled = CheckResult.objects.filter(checked_at__gt=killed + timedelta(seconds=2)).count()
    overdue = list(Endpoint.objects.filter(next_check_at__lte=timezone.now()))
    redis_server.start()
    back = timezone.now()
    caught_up = wait_for(lambda: _checked_since(overdue, back), timeout=INTERVAL + 20)

    print(
        f"redis restart: {queued} batches queued at the kill, Redis down {DOWN_SECONDS} s; "
        f"the {len(overdue)} overdue endpoints all checked {caught_up:.1f} s after it was back"
    )
    assert queued >= 2  # the worker takes back two at most (a prefetch of one a process)
    assert stalled == 0  # nothing ran while the broker was down
    assert len(overdue) >= ENDPOINTS // 2
    assert caught_up < INTERVAL


def _checked_since(endpoints, moment) -> bool:
    """Every endpoint has a check that started after the moment."""
    latest = dict(
        CheckResult.objects.values("endpoint_id")
        .annotate(at=Max("checked_at"))
        .values_list("endpoint_id", "at")
    )
    return all(latest.get(e.pk) and latest[e.pk] > moment for e in endpoints)
