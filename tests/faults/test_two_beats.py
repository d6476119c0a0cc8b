"""Two `celery beat` processes by mistake, each ticking the dispatcher every second on a
dispatcher worker of its own: no endpoint is probed twice for one slot.

The target counts the probes it receives per endpoint; a slot claimed twice would show as
two probes for one stored check (the second one's result is refused by the unique slot).
tests/monitoring/test_scheduler.py races the claim itself in threads.
"""

import re
import time
from collections import Counter

import pytest

from monitoring.models import CheckResult
from tests.faults.processes import POSTGRESQL_ONLY, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), POSTGRESQL_ONLY]

ENDPOINTS = 100
INTERVAL = 2
RUN_SECONDS = 6


def test_two_beats_never_probe_an_endpoint_twice_for_one_slot(
    cast, processes, counting_target, endpoints_on
):
    endpoints = endpoints_on(
        cast.project, counting_target, ENDPOINTS, interval_seconds=INTERVAL, timeout_seconds=1
    )
    processes.worker("batches", "--concurrency=2")
    processes.worker("dispatcher-a", "--concurrency=1", queues="dispatch")
    processes.worker("dispatcher-b", "--concurrency=1", queues="dispatch")
    beats = [processes.beat("beat-a"), processes.beat("beat-b")]
    processes.wait_ready("batches", "dispatcher-a", "dispatcher-b", "beat-a", "beat-b")

    time.sleep(RUN_SECONDS)
    for beat in beats:
        processes.kill(beat)
    # The last batches were handed over up to 1.5 s ahead of their slots.
    wait_for(lambda: _settled(counting_target), timeout=15)

    stored = Counter(CheckResult.objects.values_list("endpoint_id", flat=True))
    probed = {e.pk: counting_target.hits[f"/e/{n}"] for n, e in enumerate(endpoints)}
    claims = [_claimed(processes.log(name)) for name in ("dispatcher-a", "dispatcher-b")]
    ticks = [
        processes.log(name).count("Sending due task dispatch-due") for name in ("beat-a", "beat-b")
    ]
    # A check that timed out before it reached the target is stored without a probe; a
    # slot claimed twice makes a probe more than there are stored checks.
    doubled = {pk: n - stored[pk] for pk, n in probed.items() if n > stored[pk]}
    print(
        f"two beats: {sum(ticks)} ticks {ticks}, claims per dispatcher {claims}, "
        f"{sum(stored.values())} checks stored, {sum(probed.values())} probes"
    )
    assert min(ticks) >= RUN_SECONDS - 2  # both beats really ticked
    assert min(claims) > 0  # and both dispatchers claimed endpoints
    assert doubled == {}
    assert sum(stored.values()) >= ENDPOINTS * (RUN_SECONDS // INTERVAL - 1)


def _settled(target):
    """No probe under way, and none for half a second."""
    before = sum(target.hits.values())
    time.sleep(0.5)
    return target.in_flight == 0 and sum(target.hits.values()) == before


def _claimed(log: str) -> int:
    """Endpoints this dispatcher worker claimed (each tick logs its count)."""
    return sum(map(int, re.findall(r"dispatch_due_checks\[[^]]+\] succeeded in \S+: (\d+)", log)))
