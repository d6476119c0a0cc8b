"""The ping routes over real HTTP with real concurrency: a burst of 1,000 pings over 200
heartbeats is answered `OK` and stored whole; a large body is cut and marked; unknown and
deleted keys are 404 and write nothing."""

import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from itertools import cycle

import pytest
from django.db.models import Count
from django.utils import timezone

from accounts.services import organization_create
from monitoring.models import CheckResult, Endpoint, EndpointStatus, Ping
from monitoring.services import endpoint_create
from monitoring.validation import validate_config
from pipeline.tasks import run_heartbeat_deadlines

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgres("a live server whose request threads write at once"),
]

HEARTBEATS = 200
PINGS = 1_000
CLIENTS = 16


def heartbeats(count: int) -> list[Endpoint]:
    """Heartbeats already up and far from their deadlines, as a busy fleet is."""
    _, project = organization_create(name="Acme")
    config = validate_config("heartbeat", {"grace_seconds": 3600})
    beats = [
        endpoint_create(
            project=project,
            name=f"Job {n}",
            type="heartbeat",
            target="",
            interval_seconds=3600,
            config=config,
            failure_threshold=1,
        )
        for n in range(count)
    ]
    now = timezone.now()
    Endpoint.objects.filter(pk__in=[b.pk for b in beats]).update(
        status=EndpointStatus.UP,
        last_checked_at=now,
        late_after=now + timedelta(hours=1),
        alert_after=now + timedelta(hours=2),
    )
    return beats


def send(url: str, method: str = "GET", body: bytes | None = None) -> tuple[int, bytes]:
    """One HTTP request; its status and body (an error status is an answer too)."""
    request = urllib.request.Request(url, data=body, method=method)  # noqa: S310 - loopback
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def process() -> None:
    """Run the deadline task as beat does until it finds no pending ping left to record."""
    for _ in range(10):
        before = CheckResult.objects.count()
        run_heartbeat_deadlines()
        if CheckResult.objects.count() == before:
            return


def test_a_burst_of_1000_pings_over_200_heartbeats_is_answered_ok_and_stored(live_server):
    beats = heartbeats(HEARTBEATS)
    methods = cycle([("GET", None), ("HEAD", None), ("POST", b"done")])
    # Each heartbeat's five pings in a row: the clients send them at once, racing for its row.
    per_beat = PINGS // HEARTBEATS
    requests = [
        (f"{live_server.url}/ping/{beats[n // per_beat].ping_key}", *next(methods))
        for n in range(PINGS)
    ]

    with ThreadPoolExecutor(CLIENTS) as pool:
        answers = list(pool.map(lambda args: send(*args), requests))

    assert sorted({status for status, _ in answers}) == [200]
    assert {body for _, body in answers} == {b"OK", b""}  # HEAD answers have no body
    assert Ping.objects.count() == PINGS
    per_endpoint = Ping.objects.values("endpoint_id").annotate(n=Count("id"))
    assert sorted(row["n"] for row in per_endpoint) == [per_beat] * HEARTBEATS
    assert Ping.objects.filter(method="HEAD").count() == PINGS // 3
    process()
    assert CheckResult.objects.count() == PINGS
    assert not CheckResult.objects.filter(ok=False).exists()


def test_a_200_kb_post_over_http_is_cut_at_100_kb_and_still_a_success(live_server):
    [beat] = heartbeats(1)

    status, body = send(f"{live_server.url}/ping/{beat.ping_key}", "POST", b"x" * 200_000)
    process()

    assert (status, body) == (200, b"OK")
    stored = Ping.objects.get()
    assert (stored.kind, stored.body_size, stored.body_truncated) == ("success", 200_000, True)
    assert stored.body == "x" * 100_000
    assert CheckResult.objects.get().ok


@pytest.mark.parametrize("method", ["GET", "HEAD", "POST"])
def test_a_bad_or_deleted_key_over_http_is_404_and_writes_nothing(live_server, method):
    kept, deleted = heartbeats(2)
    deleted.delete()
    body = b"y" * 200_000 if method == "POST" else None

    answers = [
        send(f"{live_server.url}/ping/{key}{suffix}", method, body)
        for key in ("not-a-uuid", deleted.ping_key)
        for suffix in ("", "/fail", "/3")  # three a key: well inside the rate limit
    ]
    process()

    assert {status for status, _ in answers} == {404}
    if method != "HEAD":
        assert {body for _, body in answers} == {b"not found"}
    assert not Ping.objects.exists()
    assert not CheckResult.objects.exists()
    kept.refresh_from_db()
    assert kept.status == EndpointStatus.UP
