"""A worker killed with SIGKILL in the middle of a batch: once the batch is delivered
again, every scheduled check is stored, and none twice.

Both ways a worker dies: its pool processes alone (the OOM killer picks the big one; the
worker's main process sees it and puts the batch back at once), or the whole worker with
its pool (the machine or container goes away; Redis hands the unacknowledged batch out
again after CELERY_VISIBILITY_TIMEOUT, shortened here from 120 s to 6 s).
"""

import time

import pytest

from monitoring.models import CheckResult
from tests.faults.processes import POSTGRESQL_ONLY, children, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), POSTGRESQL_ONLY]

ENDPOINTS = 12  # three batches of 4: two running on the two pool processes, one queued
PROBE_SECONDS = 2.0  # the target answers this late, so the kill lands mid-batch


@pytest.mark.parametrize("victim", ["pool", "worker"])
def test_a_worker_killed_mid_batch_loses_no_check_and_stores_none_twice(
    victim, cast, processes, counting_target, endpoints_on
):
    counting_target.delay = PROBE_SECONDS
    processes.env.update(CELERY_VISIBILITY_TIMEOUT="6", PROBE_BATCH_SIZE="4")
    endpoints = endpoints_on(cast.project, counting_target, ENDPOINTS, interval_seconds=300)
    slots = {e.pk: e.next_check_at for e in endpoints}  # one slot each in this test
    first = processes.worker("first", "--concurrency=2", "--pool=prefork")
    processes.dispatcher()
    processes.beat()
    processes.wait_ready("first", "dispatcher", "beat")

    wait_for(lambda: counting_target.in_flight == 8, timeout=20)
    assert CheckResult.objects.count() == 0  # both running batches are mid-flight
    if victim == "pool":
        for pid in children(first):
            processes.kill_one(pid)
    else:
        processes.kill(first)
        processes.worker("second", "--concurrency=2", "--pool=prefork")
    killed = time.monotonic()
    wait_for(lambda: CheckResult.objects.count() >= ENDPOINTS, timeout=40)
    recovered = time.monotonic() - killed
    time.sleep(PROBE_SECONDS)  # room for a stray second delivery to show itself

    stored = list(CheckResult.objects.values_list("endpoint_id", "scheduled_for"))
    probes = sum(counting_target.hits.values())
    print(
        f"{victim} killed: all {ENDPOINTS} checks stored {recovered:.1f} s later; "
        f"{probes - ENDPOINTS} probes ran twice"
    )
    assert sorted(stored) == sorted(slots.items())  # each slot exactly once, nothing else
    assert probes >= ENDPOINTS + 8  # the killed batches really ran again
