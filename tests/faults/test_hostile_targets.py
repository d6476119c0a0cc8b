"""Hostile probe targets checked by a real worker: a server that accepts and never
answers, one that answers a byte a second, a 1 GiB body (plain and gzipped), endless
headers. Every check ends within its timeout, and the pool process that ran them all at
once in one batch (with 30 more checks reading the 1 GiB body at once) grows by well under
100 MB (VmHWM: its peak, not only what is left).

tests/monitoring/test_probes.py and test_batch.py hold the in-process cases (a stalled
peer per kind, a Redis reply announcing 300 MB, a MySQL greeting dripped, hanging DNS).
"""

import pytest

from monitoring.models import CheckResult
from tests.faults import targets
from tests.faults.processes import POSTGRESQL_ONLY, children, memory_kb, wait_for
from tests.monitoring.peers import StallPeer

pytestmark = [pytest.mark.django_db(transaction=True), POSTGRESQL_ONLY]

TIMEOUT = 3
MIB = 1024  # KiB
READERS = 30  # checks reading the first MiB of a 1 GiB body, all at once

# name: (behaviour, type, config, path)
HOSTILE = {
    "never answers": (None, "http", {}, "/"),
    "a byte a second": (targets.drip, "http", {}, "/"),
    "body a byte a second": (targets.drip_body, "http", {"body_contains": "ok"}, "/"),
    "1 GiB body": (targets.huge_body, "http", {}, "/"),
    "1 GiB body, read": (targets.huge_body, "http", {"body_contains": "needle"}, "/"),
    "1 GiB graphql": (targets.huge_body, "graphql", {}, "/graphql"),
    "1 GiB elasticsearch": (targets.huge_body, "elasticsearch", {}, "/"),
    "1 GiB custom": (targets.huge_body, "custom", {}, ""),
    "1 GiB gzipped": (targets.gzip_bomb, "http", {"body_contains": "needle"}, "/"),
    "endless headers": (targets.endless_headers, "http", {}, "/"),
    "endless header line": (targets.endless_header_line, "http", {}, "/"),
}


@pytest.fixture
def hostile():
    peers = {
        name: StallPeer() if behaviour is None else targets.Hostile(behaviour)
        for name, (behaviour, *_) in HOSTILE.items()
    }
    try:
        yield peers
    finally:
        for peer in peers.values():
            peer.stop()


def test_hostile_targets_end_within_their_timeout_and_the_worker_memory_stays_bounded(
    cast, processes, counting_target, make_endpoint, hostile
):
    worker = processes.worker("batches", "--concurrency=1")
    processes.dispatcher()
    processes.beat()
    processes.wait_ready("batches", "dispatcher", "beat")
    [pool] = children(worker)
    make_endpoint(
        cast.project, name="warm-up", target=counting_target.url("/"), interval_seconds=300
    )
    wait_for(lambda: CheckResult.objects.count() == 1, timeout=20)  # the probes are loaded
    before = memory_kb(pool)

    for name, (_, kind, config, path) in HOSTILE.items():
        peer = hostile[name]
        target = f"127.0.0.1:{peer.port}" if kind == "custom" else peer.url(path)
        make_endpoint(
            cast.project,
            name=name,
            type=kind,
            target=target,
            config=config,
            interval_seconds=300,
            timeout_seconds=TIMEOUT,
        )
    for n in range(READERS):
        make_endpoint(
            cast.project,
            name=f"reader {n}",
            target=hostile["1 GiB body, read"].url(),
            config={"body_contains": "needle"},
            interval_seconds=300,
            timeout_seconds=TIMEOUT,
        )
    expected = 1 + len(HOSTILE) + READERS
    wait_for(lambda: CheckResult.objects.count() == expected, timeout=3 * TIMEOUT + 20)
    after = memory_kb(pool)

    checks = {c.endpoint.name: c for c in CheckResult.objects.select_related("endpoint")}
    del checks["warm-up"]
    readers = [checks.pop(f"reader {n}") for n in range(READERS)]
    for name, check in sorted(checks.items(), key=lambda item: item[1].response_time_ms):
        sent = getattr(hostile[name], "bytes_sent", 0)
        print(
            f"{name:22} {check.response_time_ms:7.0f} ms  {sent / 2**20:6.1f} MiB sent  "
            f"ok={check.ok} {check.error or check.status_detail}"
        )
    print(
        f"pool process: VmRSS {before['VmRSS'] // MIB} -> {after['VmRSS'] // MIB} MiB, "
        f"VmHWM {before['VmHWM'] // MIB} -> {after['VmHWM'] // MIB} MiB"
    )
    assert {(r.error, r.error_detail) for r in readers} == {
        ("unexpected body", "expected text not found in the body")
    }
    assert all(c.response_time_ms < TIMEOUT * 1000 + 500 for c in [*checks.values(), *readers])
    assert {name for name, c in checks.items() if c.ok} == {"1 GiB body", "1 GiB custom"}
    assert all(getattr(p, "bytes_sent", 0) < (READERS + 1) * 16 * 2**20 for p in hostile.values())
    assert after["VmHWM"] - before["VmHWM"] < 100 * MIB
    assert after["VmRSS"] - before["VmRSS"] < 100 * MIB
