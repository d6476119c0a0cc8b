"""Two `celery beat` processes by mistake, each ticking the dispatcher every second on a
dispatcher worker of its own: no endpoint is probed twice for one slot.

The target counts the probes it receives per endpoint; a slot claimed twice would show as
two probes for one stored check (the second one's result is refused by the unique slot).
tests/monitoring/test_scheduler.py races the claim itself in threads.

Which dispatcher wins a tick is up to the broker and the beats' phases: when both beats tick
within the same few milliseconds, the first dispatcher to take a message claims everything
due and the other finds nothing, possibly every time. So the test requires both dispatchers
to have competed (each ran ticks over the same due set), not both to have won.
"""

import re
import time
from collections import Counter
from datetime import timedelta

import pytest
from django.utils import timezone

from monitoring.models import CheckResult, Endpoint
from tests.faults.processes import POSTGRESQL_ONLY, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), POSTGRESQL_ONLY]

ENDPOINTS = 100
INTERVAL = 2
RUN_SECONDS = 6
TICK_DONE = re.compile(r"dispatch_due_checks\[[^]]+\] succeeded in \S+: (\d+)")


def test_two_beats_never_probe_an_endpoint_twice_for_one_slot(
    cast, processes, counting_target, endpoints_on
):
    endpoints = endpoints_on(
        cast.project, counting_target, ENDPOINTS, interval_seconds=INTERVAL, timeout_seconds=1
    )
    # Nothing falls due until every process is up; then the slots are spread evenly over an
    # interval, so that every tick of either beat finds endpoints due, and each endpoint keeps
    # its phase from slot to slot.
    Endpoint.objects.update(next_check_at=timezone.now() + timedelta(hours=1))
    processes.worker("batches", "--concurrency=2")
    processes.worker("dispatcher-a", "--concurrency=1", queues="dispatch")
    processes.worker("dispatcher-b", "--concurrency=1", queues="dispatch")
    beats = [processes.beat("beat-a"), processes.beat("beat-b")]
    processes.wait_ready("batches", "dispatcher-a", "dispatcher-b", "beat-a", "beat-b")
    start = timezone.now() + timedelta(seconds=0.5)
    for n, endpoint in enumerate(endpoints):
        Endpoint.objects.filter(pk=endpoint.pk).update(
            next_check_at=start + timedelta(seconds=INTERVAL * n / ENDPOINTS)
        )

    time.sleep(RUN_SECONDS)
    for beat in beats:
        processes.kill(beat)
    # The last batches were handed over up to 1.5 s ahead of their slots.
    wait_for(lambda: _settled(counting_target), timeout=15)

    stored = Counter(CheckResult.objects.values_list("endpoint_id", flat=True))
    probed = {e.pk: counting_target.hits[f"/e/{n}"] for n, e in enumerate(endpoints)}
    dispatchers = [processes.log(name) for name in ("dispatcher-a", "dispatcher-b")]
    claims = [sum(_claims(log)) for log in dispatchers]
    runs = [len(_claims(log)) for log in dispatchers]
    ticks = [
        processes.log(name).count("Sending due task dispatch-due") for name in ("beat-a", "beat-b")
    ]
    # A check that timed out before it reached the target is stored without a probe; a
    # slot claimed twice makes a probe more than there are stored checks.
    doubled = {pk: n - stored[pk] for pk, n in probed.items() if n > stored[pk]}
    print(
        f"two beats: {sum(ticks)} ticks {ticks}, runs per dispatcher {runs}, "
        f"claims per dispatcher {claims}, "
        f"{sum(stored.values())} checks stored, {sum(probed.values())} probes"
    )
    assert min(ticks) >= RUN_SECONDS - 2  # both beats really ticked
    assert min(runs) >= 2  # both dispatchers competed for the same due endpoints
    assert doubled == {}
    assert sum(stored.values()) >= ENDPOINTS * (RUN_SECONDS // INTERVAL - 1)


def _settled(target):
    """No probe under way, and none for half a second."""
    before = sum(target.hits.values())
    time.sleep(0.5)
    return target.in_flight == 0 and sum(target.hits.values()) == before


def _claims(log: str) -> list[int]:
    """The endpoints this dispatcher worker claimed, per tick it ran (each logs its count)."""
    return [int(n) for n in TICK_DONE.findall(log)]
