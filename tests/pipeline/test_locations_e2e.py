"""End to end: probe locations as users run them. Two real Celery workers of two locations
(`PROBE_LOCATION=loc-a` on `probes.loc-a`, `PROBE_LOCATION=loc-b` on `probes.loc-b`), each in
a network namespace of its own that reaches the broker and the database over its link
(`tests/pipeline/sites.py`), probe an HTTP server on this host that can fail for one site
only, told apart by the address each site's requests come from. Beat and a central worker
(dispatcher, sweeps, watch loop) run on this host, on the test's own Redis.

Issue 25's acceptance: majority of two with one location failing is `degraded`, no incident;
down for both is one incident naming both; a worker killed with SIGKILL takes its location
offline within 60 s (plus the watch loop's period), and the survivor goes on judging the
endpoint alone, with no false incident.
"""

import base64
import json
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.db.models import Count
from django.utils import timezone

from accounts.models import Project
from monitoring.locations import online_slugs
from monitoring.models import (
    OFFLINE_AFTER,
    CheckResult,
    Endpoint,
    EndpointStatus,
    Incident,
    Location,
    LocationOutage,
)
from monitoring.scheduler import LOOKAHEAD
from monitoring.services import endpoint_set_enabled
from tests.faults.processes import Processes, RedisServer, database_url, wait_for
from tests.pipeline.sites import Site, SplitTarget, site, site_worker

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgres("workers in other namespaces need the test database on a server"),
    pytest.mark.services,
]
SLUGS = ("loc-a", "loc-b")
INTERVAL = 2  # seconds between rounds (MIN_CHECK_INTERVAL only bounds the API's input)
ROUND_WAIT = 45.0  # a first verdict: workers' start, the first rounds, the threshold
# A location is offline after 60 s of silence (monitoring.models.OFFLINE_AFTER), which the
# watch loop notices on its next run: this much more for beat's tick and the test's polling.
WATCH_SLACK = 5.0


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A Redis of the test's own: the broker and cache of every process of the test."""
    server = RedisServer(tmp_path)
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture
def sites(redis_server: RedisServer) -> Iterator[dict[str, Site]]:
    """The two locations' sites, each a namespace with forwarders to PostgreSQL and Redis."""
    with (
        site(SLUGS[0], redis_port=redis_server.port) as a,
        site(SLUGS[1], redis_port=redis_server.port) as b,
    ):
        yield {a.slug: a, b.slug: b}


@pytest.fixture
def target(sites: dict[str, Site]) -> Iterator[SplitTarget]:
    """The probe target, on this host's side of loc-a's link (routed from both sites)."""
    server = SplitTarget(
        host=sites[SLUGS[0]].namespace.gateway,
        sites={s.address: slug for slug, s in sites.items()},
    )
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def processes(
    tmp_path: Path, redis_server: RedisServer, sites: dict[str, Site]
) -> Iterator[Processes]:
    """Central processes on this host (beat and its worker) and the sites' workers; all
    stopped before the sites' links go (this fixture needs `sites`), logs shown on failure."""
    started = Processes(
        tmp_path,
        {
            "DATABASE_URL": database_url(),
            "CELERY_BROKER_URL": redis_server.url(0),
            "CACHE_URL": redis_server.url(1),
            "CELERY_TASK_ALWAYS_EAGER": "false",
            "PROBE_ALLOW_PRIVATE_NETWORKS": "true",
            "PROBE_LOCATION": "",
        },
    )
    try:
        yield started
    finally:
        started.stop_all()
        started.print_logs()


def start_central(processes: Processes, queues: str = "celery,slow,dispatch") -> None:
    """Beat and the central worker, as the Procfile runs them (one worker on every ordinary
    queue and the dispatcher's)."""
    processes.beat()
    processes.worker("central", "--concurrency=2", queues=queues)
    processes.wait_ready("beat", "central")


def located_endpoint(
    make_endpoint: Callable[..., Endpoint], project: Project, target: SplitTarget
) -> Endpoint:
    """An HTTP endpoint on the target probed from both locations (quorum: the default,
    majority: 2 of 2), every two seconds, down after two failed rounds."""
    endpoint = make_endpoint(
        project,
        name="Shop",
        target=target.url,
        interval_seconds=INTERVAL,
        timeout_seconds=1,
        failure_threshold=2,
        enabled=False,
    )
    Endpoint.objects.filter(pk=endpoint.pk).update(locations=list(SLUGS))
    return endpoint_set_enabled(endpoint=endpoint, enabled=True)


def both_online(processes: Processes, sites: dict[str, Site]) -> dict[str, int]:
    """Start both locations' workers and wait until the dispatcher counts them online."""
    pids = {slug: site_worker(processes, s) for slug, s in sites.items()}
    processes.wait_ready(*(f"worker-{slug}" for slug in SLUGS))

    def online() -> bool:
        """both locations heard from (their workers' heartbeats)"""
        return set(SLUGS) <= online_slugs(timezone.now())

    wait_for(online, timeout=30, interval=0.2)
    return pids


def status_of(endpoint: Endpoint) -> str:
    return Endpoint.objects.values_list("status", flat=True).get(pk=endpoint.pk)


def rounds_after(endpoint: Endpoint, count: int, locations: tuple[str, ...] = SLUGS) -> None:
    """Wait until `count` more rounds of the endpoint have a result from each of these
    locations: judged then (the last result of a round judges it in its transaction)."""
    since = timezone.now()

    def judged() -> bool:
        """more rounds judged"""
        complete = (
            CheckResult.objects.filter(
                endpoint=endpoint, scheduled_for__gt=since, location__in=locations
            )
            .values("scheduled_for")
            .annotate(answered=Count("location", distinct=True))
            .filter(answered=len(locations))
        )
        return complete.count() >= count

    wait_for(judged, timeout=INTERVAL * count + ROUND_WAIT, interval=0.2)


def queued_slots(server: RedisServer, queue: str) -> list[datetime]:
    """The round slots of the batches waiting in a queue of the test's broker (Celery's
    messages as kombu's Redis transport keeps them: a JSON envelope, the body base64)."""
    with redis.Redis(port=server.port) as client:
        messages = client.lrange(queue, 0, -1)
    slots = []
    for message in messages:
        args, _kwargs, _embed = json.loads(base64.b64decode(json.loads(message)["body"]))
        slots += [datetime.fromisoformat(item[1]) for item in args[0]]
    return slots


def watch_period() -> float:
    """How often beat runs the locations' watch loop."""
    schedule = settings.CELERY_BEAT_SCHEDULE["watch-locations"]["schedule"]
    assert isinstance(schedule, int | float)
    return float(schedule)


def test_a_default_worker_in_a_namespace_probes_the_target_from_its_own_address(
    cast, make_endpoint, sites, target, processes
):
    """The harness itself: a worker of the default location inside a site reaches the
    broker and the database through its link, and probes the target from its address."""
    start_central(processes, queues="dispatch")
    remote = sites[SLUGS[0]]
    site_worker(processes, remote, location=False)
    processes.wait_ready(f"worker-{remote.slug}")
    endpoint = make_endpoint(
        cast.project, target=target.url, interval_seconds=INTERVAL, timeout_seconds=1
    )

    wait_for(lambda: status_of(endpoint) == EndpointStatus.UP, timeout=ROUND_WAIT)
    assert target.requests_from(remote.slug) >= 1
    assert target.requests_from(SLUGS[1]) == target.requests_from("other") == 0

    target.failing = {remote.slug}
    wait_for(lambda: status_of(endpoint) == EndpointStatus.DOWN, timeout=ROUND_WAIT)
    incident = Incident.objects.get(endpoint=endpoint)
    assert "503" in incident.cause
    locations = CheckResult.objects.filter(endpoint=endpoint).values_list("location", flat=True)
    assert set(locations) == {""}


def test_a_target_failing_for_one_location_of_two_makes_the_endpoint_degraded_not_down(
    cast, make_endpoint, sites, target, processes
):
    start_central(processes)
    both_online(processes, sites)
    target.failing = {"loc-a"}
    endpoint = located_endpoint(make_endpoint, cast.project, target)

    wait_for(lambda: status_of(endpoint) == EndpointStatus.DEGRADED, timeout=ROUND_WAIT)
    rounds_after(endpoint, 4)  # twice the failure threshold, and more

    endpoint.refresh_from_db()
    assert endpoint.status == EndpointStatus.DEGRADED
    assert not Incident.objects.filter(endpoint=endpoint).exists()
    reason = endpoint.status_changes.values_list("reason", flat=True).first() or ""  # latest
    assert "loc-a" in reason
    assert "loc-b" not in reason
    checks = CheckResult.objects.filter(endpoint=endpoint)
    assert set(checks.values_list("location", flat=True)) == set(SLUGS)
    # One slot per round, shared by both locations' checks (judged together).
    slots = {
        slug: set(checks.filter(location=slug).values_list("scheduled_for", flat=True))
        for slug in SLUGS
    }
    assert len(slots["loc-a"] & slots["loc-b"]) >= 4
    assert not checks.filter(location="loc-a", ok=True).exists()
    assert not checks.filter(location="loc-b", ok=False).exists()
    # Each site's requests name the place they come from.
    assert target.headers_from("loc-a") == {"loc-a"}
    assert target.headers_from("loc-b") == {"loc-b"}
    assert target.requests_from("other") == 0


def test_a_target_down_for_both_locations_opens_one_incident_naming_both(
    cast, make_endpoint, sites, target, processes
):
    start_central(processes)
    both_online(processes, sites)
    endpoint = located_endpoint(make_endpoint, cast.project, target)
    wait_for(lambda: status_of(endpoint) == EndpointStatus.UP, timeout=ROUND_WAIT)

    target.failing = set(SLUGS)
    wait_for(lambda: status_of(endpoint) == EndpointStatus.DOWN, timeout=ROUND_WAIT)
    rounds_after(endpoint, 3)

    incident = Incident.objects.get(endpoint=endpoint)
    assert incident.resolved_at is None
    assert "loc-a" in incident.cause
    assert "loc-b" in incident.cause
    assert "503" in incident.cause


def test_a_killed_worker_takes_its_location_offline_and_the_other_goes_on_judging(
    cast, make_endpoint, sites, target, processes, redis_server
):
    start_central(processes)
    pids = both_online(processes, sites)
    endpoint = located_endpoint(make_endpoint, cast.project, target)
    wait_for(lambda: status_of(endpoint) == EndpointStatus.UP, timeout=ROUND_WAIT)

    processes.kill(pids["loc-b"])  # SIGKILL, the worker and its pool
    killed, killed_at = time.monotonic(), timezone.now()

    def offline() -> bool:
        """loc-b marked offline by the watch loop"""
        return not Location.objects.get(slug="loc-b").online

    bound = OFFLINE_AFTER.total_seconds() + watch_period() + WATCH_SLACK
    wait_for(offline, timeout=bound + 30, interval=0.5)
    took = time.monotonic() - killed
    assert took <= bound, f"offline {took:.0f} s after the kill"
    assert Location.objects.get(slug="loc-a").online
    outage = LocationOutage.objects.get(location__slug="loc-b")
    assert outage.resolved_at is None
    wait_for(lambda: LocationOutage.objects.get(pk=outage.pk).announced_at, timeout=15)

    # Judged by loc-a alone from now on: rounds go on, the endpoint stays up, no incident,
    # and nothing more is sent to loc-b.
    since = timezone.now()
    rounds_after(endpoint, 3, locations=("loc-a",))
    # The dispatcher sends to a location heard from within OFFLINE_AFTER of its tick, and
    # claims slots up to LOOKAHEAD past the tick.
    last_heard = Location.objects.get(slug="loc-b").last_seen_at
    assert last_heard is not None
    sent_to_b = queued_slots(redis_server, "probes.loc-b")
    assert sent_to_b  # rounds sent while it still counted as online wait there
    assert max(sent_to_b) <= last_heard + OFFLINE_AFTER + LOOKAHEAD
    assert status_of(endpoint) == EndpointStatus.UP
    assert not Incident.objects.filter(endpoint=endpoint).exists()
    assert not endpoint.status_changes.filter(changed_at__gte=killed_at).exists()
    recent = CheckResult.objects.filter(endpoint=endpoint, scheduled_for__gt=since)
    assert set(recent.values_list("location", flat=True)) == {"loc-a"}

    # And loc-a alone can call an outage (the quorum capped at the locations judging).
    target.failing = {"loc-a"}
    wait_for(lambda: status_of(endpoint) == EndpointStatus.DOWN, timeout=ROUND_WAIT)
    assert Incident.objects.filter(endpoint=endpoint).count() == 1
