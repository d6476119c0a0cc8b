"""End to end: celery beat and a real Celery worker on the real Redis broker probe a local
HTTP server; stopping it opens one incident, starting it again resolves it, and a webhook
receiver that fails twice hears of both through the workers' retries."""

import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import redis
from django.conf import settings

from alerts.delivery import signature
from alerts.models import Delivery
from alerts.services import channel_create
from monitoring.models import CheckResult, Endpoint, EndpointStatus, Incident
from tests.alerts.receiver import Receiver

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgres("the worker process needs the test database on a server"),
]
BROKER = "redis://127.0.0.1:6379/13"
ROOT = Path(__file__).resolve().parents[2]


class _Healthy(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


class SwitchableServer:
    """An HTTP server that can be stopped and started again on the same port."""

    def __init__(self):
        self.port = 0
        self.start()

    def start(self):
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), _Healthy)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def wait_for(condition, timeout=45.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"not reached within {timeout} s: {condition.__doc__}")


@pytest.fixture
def celery(tmp_path):
    """`celery beat` and `celery worker` processes on a Redis database of their own."""
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
        "PROBE_ALLOW_PRIVATE_NETWORKS": "true",
        # Retries a second, then two, apart: the test waits for the third attempt.
        "NOTIFY_RETRY_BASE_SECONDS": "1",
    }
    log = (tmp_path / "celery.log").open("w")

    def spawn(*args):
        command = [sys.executable, "-m", "celery", "-A", "healthmon", *args, "--loglevel=INFO"]
        return subprocess.Popen(command, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)  # noqa: S603 - our own command line

    processes = [
        spawn("worker", "-Q", "celery,dispatch", "--pool=prefork", "--concurrency=2"),
        spawn("worker", "-Q", "slow", "--pool=threads", "--concurrency=4", "-n", "slow@%h"),
        spawn("beat", "-s", str(tmp_path / "beat-schedule")),
    ]
    yield
    for process in processes:
        process.terminate()
    for process in processes:
        process.wait(timeout=20)
    log.close()
    redis.Redis.from_url(BROKER).flushdb()
    print((tmp_path / "celery.log").read_text()[-4000:])  # shown only when the test fails


def test_a_down_server_opens_one_incident_and_its_return_resolves_it(cast, make_endpoint, celery):
    server = SwitchableServer()
    endpoint = make_endpoint(
        cast.project,
        target=f"http://127.0.0.1:{server.port}/",
        interval_seconds=2,
        timeout_seconds=1,
        failure_threshold=2,
    )

    def status_is(wanted):
        return lambda: Endpoint.objects.get(pk=endpoint.pk).status == wanted

    try:
        wait_for(status_is(EndpointStatus.UP))
        server.stop()
        wait_for(status_is(EndpointStatus.DOWN))
        incident = Incident.objects.get(endpoint=endpoint)
        assert incident.resolved_at is None
        assert "refused" in incident.cause
        server.start()
        wait_for(status_is(EndpointStatus.UP))
    finally:
        server.stop()

    incident.refresh_from_db()
    assert incident.resolved_at is not None
    assert Incident.objects.filter(endpoint=endpoint).count() == 1
    checks = CheckResult.objects.filter(endpoint=endpoint)
    assert checks.filter(ok=False).count() >= 2
    slots = list(checks.values_list("scheduled_for", flat=True))
    assert len(slots) == len(set(slots))


def test_a_webhook_failing_twice_hears_of_the_incident_once_through_the_workers(
    cast, make_endpoint, celery
):
    server, receiver = SwitchableServer(), Receiver((500, 500, 200))
    channel = channel_create(
        organization=cast.org, name="Hook", kind="webhook", config={"url": receiver.url}
    )
    endpoint = make_endpoint(
        cast.project,
        target=f"http://127.0.0.1:{server.port}/",
        interval_seconds=2,
        timeout_seconds=1,
        failure_threshold=1,
    )

    def events():
        return [json.loads(r.body)["event"] for r in receiver.requests if r.answered == 200]

    try:
        wait_for(lambda: Endpoint.objects.get(pk=endpoint.pk).status == EndpointStatus.UP)
        server.stop()
        wait_for(lambda: events() == ["incident.opened"])
        server.start()
        wait_for(lambda: events() == ["incident.opened", "incident.resolved"])
    finally:
        server.stop()
        receiver.stop()

    opened = [r for r in receiver.requests if json.loads(r.body)["event"] == "incident.opened"]
    assert [r.answered for r in opened] == [500, 500, 200]
    assert len({r.body for r in opened}) == 1  # one event, one idempotency key, same bytes
    for request in receiver.requests:
        assert request.headers["x-healthmon-signature"] == signature(channel.secret, request.body)
    assert set(Delivery.objects.values_list("status", flat=True)) == {"delivered"}
