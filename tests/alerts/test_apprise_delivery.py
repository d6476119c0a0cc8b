"""Apprise channels end to end: an incident opened and resolved by stored checks goes through
the delivery task to real local receivers (`json://`, `form://`, `ntfy://` against a
stand-in of ntfy's API, `mailto://` to aiosmtpd), with the bytes that arrived checked;
failures are retried with back-off, errors quote no secret, the network policy holds at
send time and a receiver that never answers is cut off."""

import json
import socket
import threading
from collections.abc import Iterator
from datetime import timedelta
from email import message_from_bytes
from email.message import Message
from typing import Any
from urllib.parse import parse_qs

import pytest
from django.utils import timezone

from alerts.delivery import deliveries_dispatch
from alerts.models import Delivery, DeliveryAttempt, DeliveryStatus
from alerts.tasks import deliver
from tests.alerts.receiver import MailReceiver, Receiver, apprise_channel

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("loopback_allowed")]

SECRET = "pa55-w0rd-Zq81"


def host_port(receiver: Receiver) -> str:
    return receiver.url.split("/")[2]


def dispatch(after: timedelta, capture: Any) -> int:
    with capture(execute=True):
        return deliveries_dispatch(now=timezone.now() + after)


@pytest.fixture
def mail_receiver() -> Iterator[MailReceiver]:
    peer = MailReceiver()
    try:
        yield peer
    finally:
        peer.stop()


def test_json_gets_the_opening_and_the_resolution_through_the_task(
    cast, endpoint, receiver, go_down
):
    apprise_channel(cast, f"json://ops:{SECRET}@{host_port(receiver)}/in/T0K3N-PATH")
    started = timezone.now()
    go_down(endpoint, at=started)
    go_down(endpoint, ok=True, at=started + timedelta(seconds=95))

    opened, resolved = receiver.requests
    assert opened.path == "/in/T0K3N-PATH"
    assert opened.headers["content-type"] == "application/json"
    assert opened.headers["authorization"].startswith("Basic ")  # ops:SECRET, as configured
    first, second = json.loads(opened.body), json.loads(resolved.body)
    assert first["title"] == f"DOWN: Checkout API ({cast.project.name})"
    assert first["message"].splitlines()[0] == "Cause: unexpected status 503"
    *_, page, ack = first["message"].splitlines()
    assert page == f"https://healthmon.test/endpoints/{endpoint.pk}"
    assert ack.startswith("Acknowledge: https://healthmon.test/ack/")  # the incident is open
    assert first["type"] == "failure"
    assert second["title"] == f"RECOVERED: Checkout API ({cast.project.name}) after 1 min 35 s"
    assert "Duration: 1 min 35 s" in second["message"]
    assert second["type"] == "success"
    deliveries = Delivery.objects.order_by("created_at")
    assert [d.status for d in deliveries] == [DeliveryStatus.DELIVERED] * 2
    assert DeliveryAttempt.objects.filter(ok=True).count() == 2


def test_form_gets_the_event_url_encoded(cast, endpoint, receiver, go_down):
    apprise_channel(cast, f"form://{host_port(receiver)}/form-hook")

    go_down(endpoint)

    [request] = receiver.requests
    assert request.path == "/form-hook"
    assert request.headers["content-type"] == "application/x-www-form-urlencoded"
    fields = parse_qs(request.body.decode())
    assert fields["title"] == [f"DOWN: Checkout API ({cast.project.name})"]
    assert fields["type"] == ["failure"]
    assert fields["message"][0].startswith("Cause: unexpected status 503\n")


def test_ntfy_gets_the_topic_title_and_token_as_its_api_takes_them(
    cast, endpoint, receiver, go_down
):
    token = "tk_a1b2c3d4e5f6g7h8i9j0"
    apprise_channel(cast, f"ntfy://{token}@{host_port(receiver)}/checkout-alerts")

    go_down(endpoint)

    [request] = receiver.requests
    assert request.path == "/"  # ntfy's publish-as-JSON route
    assert request.headers["authorization"] == f"Bearer {token}"
    sent = json.loads(request.body)
    assert sent["topic"] == "checkout-alerts"
    assert sent["title"] == f"DOWN: Checkout API ({cast.project.name})"
    assert sent["message"].startswith("Cause: unexpected status 503\n")
    assert Delivery.objects.get().status == DeliveryStatus.DELIVERED


def test_mailto_reaches_a_real_smtp_server(cast, endpoint, go_down, mail_receiver):
    apprise_channel(
        cast,
        f"mailto://127.0.0.1:{mail_receiver.port}?from=healthmon@example.com&to=oncall@example.com",
    )

    go_down(endpoint)

    [envelope] = mail_receiver.envelopes
    assert envelope.mail_from == "healthmon@example.com"
    assert envelope.rcpt_tos == ["oncall@example.com"]
    letter = message_from_bytes(envelope.original_content or b"")
    assert letter["Subject"] == f"DOWN: Checkout API ({cast.project.name})"
    assert "Cause: unexpected status 503" in _plain_text(letter)
    assert Delivery.objects.get().status == DeliveryStatus.DELIVERED


def _plain_text(letter: Message) -> str:
    for part in letter.walk():
        if part.get_content_type() == "text/plain":
            return part.get_payload(decode=True).decode()  # type: ignore[union-attr]
    return ""


def test_a_failing_receiver_is_retried_with_back_off_then_delivered(
    cast, endpoint, go_down, django_capture_on_commit_callbacks
):
    peer = Receiver((500, 200))
    try:
        apprise_channel(cast, f"json://ops:{SECRET}@{host_port(peer)}/in/T0K3N-PATH")
        go_down(endpoint)
        delivery = Delivery.objects.get()
        assert (delivery.status, delivery.attempts) == (DeliveryStatus.PENDING, 1)
        assert delivery.last_error.startswith("JSON: ")
        assert "error=500" in delivery.last_error
        wait = delivery.next_attempt_at - timezone.now()
        assert timedelta(seconds=25) < wait <= timedelta(seconds=30)
        assert dispatch(timedelta(seconds=10), django_capture_on_commit_callbacks) == 0
        assert dispatch(timedelta(seconds=31), django_capture_on_commit_callbacks) == 1
    finally:
        peer.stop()

    assert [r.answered for r in peer.requests] == [500, 200]
    assert len({r.body for r in peer.requests}) == 1  # the same event both times
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.last_error) == ("delivered", 2, "")
    tries = DeliveryAttempt.objects.filter(delivery=delivery).order_by("attempted_at")
    assert [t.ok for t in tries] == [False, True]
    for text in [tries[0].error, delivery.last_error]:
        assert SECRET not in text
        assert "T0K3N" not in text
    assert deliver(str(delivery.pk), 1) is None  # a duplicate task sends nothing more
    assert len(peer.requests) == 2


def test_the_network_policy_is_checked_again_when_sending(
    cast, endpoint, receiver, go_down, settings
):
    apprise_channel(cast, f"json://{host_port(receiver)}/in")
    settings.PROBE_ALLOWED_NETWORKS = []  # loopback no longer allowed

    go_down(endpoint)

    assert receiver.requests == []
    attempt = DeliveryAttempt.objects.get()
    assert (attempt.ok, attempt.error) == (False, "target address not allowed (network policy)")


def test_a_host_name_resolving_to_a_forbidden_address_is_refused_when_sending(
    cast, endpoint, receiver, go_down, settings, monkeypatch
):
    port = host_port(receiver).split(":")[1]
    apprise_channel(cast, f"json://hooks.example.com:{port}/in")
    settings.PROBE_ALLOWED_NETWORKS = []
    resolve = socket.getaddrinfo

    def rebinding(host: str, *args: Any, **kwargs: Any) -> Any:
        return resolve("127.0.0.1" if host == "hooks.example.com" else host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)

    go_down(endpoint)

    assert receiver.requests == []
    assert DeliveryAttempt.objects.get().error == "target address not allowed (network policy)"


def test_a_receiver_that_never_answers_is_cut_off_by_the_time_limit(
    cast, endpoint, go_down, settings
):
    settings.NOTIFY_TIMEOUT_SECONDS = 1
    silent = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    acceptor = threading.Thread(target=lambda: accepted.append(silent.accept()[0]), daemon=True)
    acceptor.start()
    try:
        apprise_channel(cast, f"json://127.0.0.1:{silent.getsockname()[1]}/slow")
        go_down(endpoint)
    finally:
        acceptor.join(5)
        for sock in [*accepted, silent]:
            sock.close()

    attempt = DeliveryAttempt.objects.get()
    assert attempt.ok is False
    assert attempt.error.startswith("JSON: ")
    assert attempt.duration_ms < 4000
    assert Delivery.objects.get().status == DeliveryStatus.PENDING  # tried again later
