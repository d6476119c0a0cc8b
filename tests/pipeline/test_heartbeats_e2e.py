"""End to end in real time: `celery beat` and a real Celery worker on Redis run the heartbeat
deadline loop against the test's PostgreSQL database, while real HTTP pings reach a live
server. A heartbeat pinged once goes late, then down with one incident, within 10 s of each
deadline; a success ping resolves it, and a failure ping opens the next incident at once."""

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import uuid4

import pytest
import redis
from django.conf import settings
from django.utils import timezone
from pytest_django.live_server_helper import LiveServer

from alerts.models import Delivery
from alerts.services import channel_create
from monitoring.models import Endpoint, EndpointStatus, Incident
from monitoring.validation import validate_config
from tests.conftest import Cast

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgres("the worker and beat processes need the test database on a server"),
    pytest.mark.services,
]
# A Redis database of this test's own (tests/monitoring/test_worker.py has 13).
BROKER = "redis://127.0.0.1:6379/9"
ROOT = Path(__file__).resolve().parents[2]
# The bound: the loop flips a heartbeat within 10 s of its deadline.
WITHIN = timedelta(seconds=10)


@pytest.fixture
def beat_and_worker(tmp_path: Path) -> Iterator[None]:
    """`celery beat` and one `celery worker` (the queues the deadline loop and the
    deliveries use) on a Redis database of their own, reaching the test database."""
    redis.Redis.from_url(BROKER).flushdb()
    database = settings.DATABASES["default"]
    env = {
        **os.environ,
        "DATABASE_URL": (
            f"postgres://{database['USER']}@{database['HOST']}:{database['PORT']}/"
            f"{database['NAME']}"
        ),
        "CELERY_BROKER_URL": BROKER,
        "CELERY_TASK_ALWAYS_EAGER": "false",
    }
    log_path = tmp_path / "celery.log"
    with log_path.open("w") as log:

        def spawn(*args: str) -> subprocess.Popen[bytes]:
            command = [sys.executable, "-m", "celery", "-A", "healthmon", *args]
            return subprocess.Popen(  # noqa: S603 - our own command line
                [*command, "--loglevel=INFO"], env=env, cwd=ROOT, stdout=log, stderr=log
            )

        processes = [
            spawn("worker", "-Q", "celery,dispatch", "--pool=prefork", "--concurrency=2"),
            spawn("beat", "-s", str(tmp_path / "beat-schedule")),
        ]
        try:
            yield
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                process.wait(timeout=20)
            redis.Redis.from_url(BROKER).flushdb()
            print(log_path.read_text()[-4000:])  # shown only when the test fails


def heartbeat(cast: Cast, name: str) -> Endpoint:
    """A heartbeat with a 2 s period and a 2 s grace, made with the ORM: the API and
    `validate_config` refuse anything under 60 s, which would make this test last minutes."""
    config = {**validate_config("heartbeat", {}), "grace_seconds": 2}
    return Endpoint.objects.create(
        project=cast.project,
        name=name,
        type="heartbeat",
        target="",
        config=config,
        config_masked=config,
        interval_seconds=2,
        timeout_seconds=1,
        failure_threshold=1,
        recovery_threshold=1,
        ping_key=uuid4(),
        status=EndpointStatus.PENDING,
        watch_started_at=timezone.now(),
    )


def send_ping(server: LiveServer, endpoint: Endpoint, suffix: str = "") -> None:
    """A real HTTP ping, as a cron job's curl sends it."""
    with urllib.request.urlopen(  # noqa: S310 - the live server on loopback
        f"{server.url}/ping/{endpoint.ping_key}{suffix}", timeout=10
    ) as response:
        assert (response.status, response.read()) == (200, b"OK")


def wait_for(condition: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout} s: {condition.__doc__}"
        time.sleep(0.1)


class Watch:
    """Samples of one heartbeat's status with the time each was read (after the read)."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.samples: list[tuple[datetime, str]] = []

    def until(self, wanted: str, timeout: float) -> datetime:
        """Poll every 0.1 s until the status is `wanted`; when it was first seen."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = Endpoint.objects.values_list("status", flat=True).get(pk=self.endpoint.pk)
            seen = datetime.now(UTC)
            self.samples.append((seen, status))
            if status == wanted:
                return seen
            time.sleep(0.1)
        raise AssertionError(f"{self.endpoint.name} not {wanted} within {timeout} s")

    def statuses_before(self, moment: datetime) -> set[str]:
        return {status for seen, status in self.samples if seen < moment}


def loop_running(cast: Cast) -> None:
    """Wait until beat and the worker run the deadline loop: a heartbeat already past its
    period (and far from its grace) turns late. Start-up is not counted as lateness."""
    sentinel = heartbeat(cast, "Sentinel")
    now = timezone.now()
    Endpoint.objects.filter(pk=sentinel.pk).update(
        status=EndpointStatus.UP,
        last_checked_at=now,
        late_after=now,
        alert_after=now + timedelta(hours=1),
    )
    wait_for(
        lambda: Endpoint.objects.get(pk=sentinel.pk).status == EndpointStatus.LATE,
        timeout=60,
    )


def test_a_silent_heartbeat_goes_late_then_down_once_and_a_ping_resolves_it(
    cast: Cast, live_server: LiveServer, beat_and_worker: None
):
    mail = {"addresses": ["ops@acme.test"], "to_members": False}
    channel = channel_create(organization=cast.org, name="Ops", kind="email", config=mail)
    job = heartbeat(cast, "Nightly backup")
    loop_running(cast)
    watch = Watch(job)

    send_ping(live_server, job)
    watch.until(EndpointStatus.UP, timeout=10)
    job.refresh_from_db()
    late_after, alert_after = job.late_after, job.alert_after
    assert late_after is not None
    assert alert_after is not None
    assert alert_after - late_after == timedelta(seconds=2)

    late_seen = watch.until(EndpointStatus.LATE, timeout=30)
    down_seen = watch.until(EndpointStatus.DOWN, timeout=30)

    print(f"late {late_seen - late_after} after its deadline, down {down_seen - alert_after}")
    assert late_seen - late_after <= WITHIN
    assert down_seen - alert_after <= WITHIN
    # Neither flip came early: up until the period ended, not down before the grace did.
    assert watch.statuses_before(late_after) <= {EndpointStatus.UP}
    assert EndpointStatus.DOWN not in watch.statuses_before(alert_after)
    incident = Incident.objects.get(endpoint=job)
    assert incident.resolved_at is None
    assert incident.cause.startswith("no ping since ")
    assert Delivery.objects.filter(channel=channel, incident=incident).count() == 1

    send_ping(live_server, job)
    watch.until(EndpointStatus.UP, timeout=10)
    incident.refresh_from_db()
    assert incident.resolved_at is not None
    assert Incident.objects.filter(endpoint=job).count() == 1

    send_ping(live_server, job, "/fail")
    failed = Incident.objects.get(endpoint=job, resolved_at__isnull=True)
    assert failed.cause == "failure ping"
    assert Endpoint.objects.get(pk=job.pk).status == EndpointStatus.DOWN
