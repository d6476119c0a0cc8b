"""Deliveries sent in batches (bench/incident_storm.py): a burst of incidents is queued as
few tasks, each claiming and recording its deliveries in a fixed number of queries, with
the guarantees of one attempt at a time (a duplicate task sends nothing, a failure backs
off, what a batch has no time for goes back to the sweep), over a pooled connection that
a change of the network policy drops."""

import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from alerts import delivery as delivery_module
from alerts import delivery_batch, transport
from alerts.delivery import BATCH_SIZE, deliveries_dispatch
from alerts.delivery_batch import RECORD_EVERY, deliveries_attempt
from alerts.models import Delivery, DeliveryAttempt, DeliveryStatus, NotificationChannel
from alerts.tasks import deliver
from monitoring.models import ActivityKind, IncidentActivity
from tests.alerts.receiver import Receiver, _Handler, webhook

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("loopback_allowed")]


class _KeepAliveHandler(_Handler):
    """The test receiver's handler speaking HTTP/1.1, noting each request's client port."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 (http.server calls it so)
        self.server.owner.ports.append(self.client_address[1])  # type: ignore[attr-defined]
        super().do_POST()


@pytest.fixture
def keep_alive() -> Any:
    peer = Receiver((200,))
    peer.ports = []  # type: ignore[attr-defined]
    peer._server.RequestHandlerClass = _KeepAliveHandler
    yield peer
    peer.stop()


@pytest.fixture
def caught(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """The delivery tasks queued (their arguments), none run."""
    tasks: list[tuple[Any, ...]] = []
    monkeypatch.setattr(
        delivery_module, "enqueue_batch", lambda name, items, **options: tasks.append((items,))
    )
    return tasks


def down(cast: Any, make_endpoint: Any, capture: Any, count: int) -> None:
    """`count` endpoints of the cast's project fail at once (one batch of checks)."""
    from monitoring.checks import CheckOutcome
    from monitoring.probes import ProbeResult
    from pipeline.checks import checks_record

    endpoints = [
        make_endpoint(cast.project, name=f"Service {i}", failure_threshold=1) for i in range(count)
    ]
    at = timezone.now()
    result = ProbeResult(
        ok=False, response_time_ms=20.0, error="HTTP 503", started_at=at.timestamp()
    )
    with capture(execute=True):
        checks_record(outcomes=[CheckOutcome(e.pk, at, at, result) for e in endpoints])


def test_a_burst_is_queued_in_batches_and_each_is_sent_once(
    cast, make_endpoint, receiver, caught, django_capture_on_commit_callbacks
):
    webhook(cast, receiver.url)
    webhook(cast, receiver.url)
    count = BATCH_SIZE  # two channels: two tasks of BATCH_SIZE
    down(cast, make_endpoint, django_capture_on_commit_callbacks, count)

    assert len(caught) == 2
    assert [len(items) for (items,) in caught] == [BATCH_SIZE, BATCH_SIZE]
    assert all(made == 0 for (items,) in caught for _, made in items)
    for args in caught:
        deliver(*args)
    assert len(receiver.requests) == 2 * count
    keys = {(r.path, r.headers["x-healthmon-delivery"], r.body) for r in receiver.requests}
    assert len(keys) == count  # both channels share the path: one key and body per event
    assert Delivery.objects.filter(status=DeliveryStatus.DELIVERED).count() == 2 * count
    assert DeliveryAttempt.objects.filter(ok=True).count() == 2 * count

    for args in caught:  # the broker delivers every task again: nothing is sent twice
        deliver(*args)
    assert len(receiver.requests) == 2 * count
    assert DeliveryAttempt.objects.count() == 2 * count


def test_a_batch_costs_the_same_queries_whatever_its_size(
    cast, make_endpoint, receiver, caught, django_capture_on_commit_callbacks
):
    # Successes are recorded RECORD_EVERY at a time (a worker dying mid-batch sends again
    # only those): up to that many cost the same queries as two, and each more round of
    # them the same again.
    webhook(cast, receiver.url)
    down(
        cast, make_endpoint, django_capture_on_commit_callbacks, 2 + RECORD_EVERY + 2 * RECORD_EVERY
    )
    items = [item for (part,) in caught for item in part]  # queued BATCH_SIZE a task
    few = items[:2]
    one_round = items[2 : 2 + RECORD_EVERY]
    two_rounds = items[2 + RECORD_EVERY :]

    counted = []
    for part in (few, one_round, two_rounds):
        with CaptureQueriesContext(connection) as queries:
            deliver(part)
        counted.append(len(queries))
    assert counted[0] == counted[1], counted
    assert counted[2] - counted[1] < counted[1], counted  # a round, not a batch, again
    assert len(receiver.requests) == 2 + 3 * RECORD_EVERY


def test_a_failure_in_a_batch_backs_off_while_the_rest_are_delivered(
    cast, make_endpoint, receiver, caught, django_capture_on_commit_callbacks
):
    failing = Receiver((500,))
    try:
        good, bad = webhook(cast, receiver.url), webhook(cast, failing.url)
        down(cast, make_endpoint, django_capture_on_commit_callbacks, 3)
        before = timezone.now()
        for args in caught:
            deliver(*args)
    finally:
        failing.stop()
    assert len(receiver.requests) == 3
    assert len(failing.requests) == 3
    sent = Delivery.objects.filter(channel=good)
    assert {(d.status, d.attempts, d.next_attempt_at) for d in sent} == {("delivered", 1, None)}
    for row in Delivery.objects.filter(channel=bad):
        assert (row.status, row.attempts, row.last_error) == ("pending", 1, "HTTP 500")
        assert row.next_attempt_at >= before + timedelta(seconds=30)
    errors = DeliveryAttempt.objects.filter(delivery__channel=bad).values_list("error", flat=True)
    assert list(errors) == ["HTTP 500"] * 3


def test_what_a_batch_has_no_time_for_goes_back_to_the_sweep(
    cast, make_endpoint, receiver, caught, django_capture_on_commit_callbacks, monkeypatch
):
    webhook(cast, receiver.url)
    down(cast, make_endpoint, django_capture_on_commit_callbacks, 4)
    monkeypatch.setattr(delivery_module, "BATCH_BUDGET_SECONDS", 0.0)
    ((items,),) = caught
    assert deliveries_attempt(items=[(uuid.UUID(pk), made) for pk, made in items]) == {
        "delivered": 1
    }
    assert len(receiver.requests) == 1
    left = Delivery.objects.filter(status=DeliveryStatus.PENDING)
    assert {(d.attempts, d.next_attempt_at <= timezone.now()) for d in left} == {(0, True)}
    assert left.count() == 3

    caught.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert deliveries_dispatch() == 3  # due now: queued again, their attempts uncounted
    ((again,),) = caught
    assert sorted(made for _, made in again) == [0, 0, 0]


def test_connections_are_kept_between_sends_until_the_network_policy_changes(
    cast, settings, keep_alive
):
    def send() -> transport.Sent:
        return transport.post_json(keep_alive.url, b"{}", {}, 5)

    assert send().ok
    assert send().ok
    assert len(set(keep_alive.ports)) == 1  # one connection for both

    settings.PROBE_ALLOWED_NETWORKS = []  # loopback is no longer allowed
    refused = send()
    assert not refused.ok
    assert "network policy" in refused.error
    assert len(keep_alive.requests) == 2


def test_a_server_answering_a_long_body_gets_a_fresh_connection_each_time() -> None:
    class Long(_KeepAliveHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server calls it so)
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.server.owner.ports.append(self.client_address[1])  # type: ignore[attr-defined]
            body = b"x" * (transport.KEEP_ALIVE_REPLY_BYTES + 1)
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    peer = Receiver((200,))
    peer.ports = []  # type: ignore[attr-defined]
    peer._server.RequestHandlerClass = Long
    try:
        assert transport.post_json(peer.url, b"{}", {}, 5).ok
        assert transport.post_json(peer.url, b"{}", {}, 5).ok
    finally:
        peer.stop()
    assert len(set(peer.ports)) == 2  # the unread reply's connection was not reused


def test_a_batch_records_attempts_timeline_lines_and_clears_its_channels_failures(
    cast, make_endpoint, receiver, caught, django_capture_on_commit_callbacks
):
    hook = webhook(cast, receiver.url)
    NotificationChannel.objects.filter(pk=hook.pk).update(
        consecutive_failures=2, failing_since=timezone.now()
    )
    down(cast, make_endpoint, django_capture_on_commit_callbacks, 3)
    before = timezone.now()
    for args in caught:
        deliver(*args)

    hook.refresh_from_db()
    assert (hook.consecutive_failures, hook.failing_since) == (0, None)
    rows = Delivery.objects.filter(channel=hook)
    assert {(d.status, d.attempts, d.last_error, d.next_attempt_at) for d in rows} == {
        ("delivered", 1, "", None)
    }
    assert all(d.delivered_at >= before for d in rows)
    tries = DeliveryAttempt.objects.filter(delivery__channel=hook)
    assert sorted(t.delivery_id for t in tries) == sorted(d.pk for d in rows)
    assert {(t.ok, t.status_code, t.error) for t in tries} == {(True, 200, "")}
    assert all(t.duration_ms > 0 and t.attempted_at >= before for t in tries)
    lines = IncidentActivity.objects.filter(kind=ActivityKind.DELIVERED)
    assert sorted((line.incident_id, line.detail["delivery"]) for line in lines) == sorted(
        (d.incident_id, str(d.pk)) for d in rows
    )
    assert {line.text for line in lines} == {"Webhook “Ops hook”: incident.opened delivered"}
    assert {
        (line.detail["channel"], line.detail["channel_kind"], line.detail["event"])
        for line in lines
    } == {(str(hook.pk), "webhook", "incident.opened")}
    assert all(line.at >= before for line in lines)


def test_a_success_another_task_recorded_first_gets_no_second_timeline_line(
    cast, make_endpoint, receiver, caught, django_capture_on_commit_callbacks, monkeypatch
):
    webhook(cast, receiver.url)
    down(cast, make_endpoint, django_capture_on_commit_callbacks, 2)
    ((items,),) = caught
    overtaken = uuid.UUID(items[0][0])
    sends = delivery_batch._try

    def raced(delivery: Delivery) -> transport.Sent:
        sent = sends(delivery)
        if delivery.pk == overtaken:  # a duplicate task delivered it meanwhile
            Delivery.objects.filter(pk=overtaken).update(status=DeliveryStatus.DELIVERED)
        return sent

    monkeypatch.setattr(delivery_batch, "_try", raced)
    deliver(items)

    assert DeliveryAttempt.objects.count() == 2  # both attempts were made: both recorded
    lines = IncidentActivity.objects.filter(kind=ActivityKind.DELIVERED)
    assert [line.detail["delivery"] for line in lines] == [items[1][0]]
    assert Delivery.objects.get(pk=overtaken).delivered_at is None  # left as the other wrote it


def test_a_batch_claims_each_delivery_at_the_attempts_it_was_queued_with(
    cast, make_endpoint, receiver, caught, django_capture_on_commit_callbacks
):
    webhook(cast, receiver.url)
    down(cast, make_endpoint, django_capture_on_commit_callbacks, 3)
    ((items,),) = caught
    first, retried, stale = (uuid.UUID(pk) for pk, _ in items)
    Delivery.objects.filter(pk=retried).update(attempts=1)  # one attempt made before

    statuses = deliveries_attempt(items=[(first, 0), (retried, 1), (stale, 1)])

    assert statuses == {"delivered": 2}
    assert sorted(r.headers["x-healthmon-delivery"] for r in receiver.requests) == sorted(
        str(d.event_id) for d in Delivery.objects.filter(pk__in=[first, retried])
    )
    attempts = dict(Delivery.objects.values_list("pk", "attempts"))
    assert (attempts[first], attempts[retried], attempts[stale]) == (1, 2, 0)
    assert Delivery.objects.get(pk=stale).status == "pending"  # left to its own task
