"""Notifications end to end: incidents opened and resolved by stored checks reach a real
local receiver (signed, retried with back-off, at least once with one idempotency key),
mail lands in the locmem backend, maintenance holds them back, and the network policy
keeps webhooks off private addresses."""

import hashlib
import hmac
import json
import logging
from datetime import timedelta
from typing import Any

import pytest
from django.core import mail
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import Role
from alerts import delivery as delivery_module
from alerts import services
from alerts.delivery import deliveries_dispatch
from alerts.models import (
    Delivery,
    DeliveryAttempt,
    DeliveryStatus,
    MaintenanceWindow,
    NotificationChannel,
)
from alerts.services import event_key
from alerts.tasks import deliver
from monitoring.models import Endpoint
from tests.alerts.receiver import Receiver, webhook

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("loopback_allowed")]


def dispatch(after: timedelta, capture: Any) -> int:
    with capture(execute=True):
        return deliveries_dispatch(now=timezone.now() + after)


def valid_signature(secret: str, body: bytes, header: str) -> bool:
    expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, header)


def test_a_webhook_gets_signed_events_when_an_incident_opens_and_resolves(
    cast, endpoint, receiver, go_down
):
    channel = webhook(cast, receiver.url)
    started = timezone.now()
    go_down(endpoint, at=started)
    go_down(endpoint, ok=True, at=started + timedelta(seconds=95))

    opened, resolved = receiver.requests
    for request in (opened, resolved):
        assert request.path == "/hook/T000/SECRET-PATH"
        assert request.headers["content-type"] == "application/json"
        assert valid_signature(
            channel.secret, request.body, request.headers["x-healthmon-signature"]
        )
    first, second = json.loads(opened.body), json.loads(resolved.body)
    incident = endpoint.incidents.get()
    assert first["event"] == "incident.opened"
    assert first["id"] == str(event_key(incident.pk, "incident.opened"))
    assert first["incident"]["id"] == str(incident.pk)
    assert first["incident"]["cause"] == "unexpected status 503"
    assert first["endpoint"]["name"] == "Checkout API"
    assert first["endpoint"]["url"] == f"https://healthmon.test/endpoints/{endpoint.pk}"
    assert first["project"] == {"id": str(cast.project.pk), "name": cast.project.name}
    assert "target" not in first["endpoint"]
    assert set(first) == {"event", "id", "occurred_at", "incident", "endpoint", "project"}
    assert second["event"] == "incident.resolved"
    assert second["id"] != first["id"]
    assert second["incident"]["duration_seconds"] == 95.0
    assert Delivery.objects.filter(status=DeliveryStatus.DELIVERED).count() == 2


def test_a_receiver_failing_twice_gets_the_event_once_with_the_same_key(
    cast, endpoint, go_down, django_capture_on_commit_callbacks
):
    peer = Receiver((500, 503, 200))
    try:
        webhook(cast, peer.url)
        go_down(endpoint)
        delivery = Delivery.objects.get()
        assert (delivery.status, delivery.attempts) == ("pending", 1)
        first_wait = delivery.next_attempt_at - timezone.now()
        assert timedelta(seconds=25) < first_wait <= timedelta(seconds=30)

        # Not due yet: the back-off holds it.
        assert dispatch(timedelta(seconds=10), django_capture_on_commit_callbacks) == 0
        assert dispatch(timedelta(seconds=31), django_capture_on_commit_callbacks) == 1
        delivery.refresh_from_db()
        second_wait = delivery.next_attempt_at - timezone.now()
        assert timedelta(seconds=55) < second_wait <= timedelta(seconds=60)  # doubled
        assert dispatch(timedelta(seconds=45), django_capture_on_commit_callbacks) == 0
        assert dispatch(timedelta(seconds=61), django_capture_on_commit_callbacks) == 1
        assert dispatch(timedelta(seconds=200), django_capture_on_commit_callbacks) == 0
    finally:
        peer.stop()

    assert [r.answered for r in peer.requests] == [500, 503, 200]
    keys = {json.loads(r.body)["id"] for r in peer.requests}
    assert keys == {str(event_key(endpoint.incidents.get().pk, "incident.opened"))}
    assert len({r.body for r in peer.requests}) == 1  # the same bytes each time
    assert len({r.headers["x-healthmon-delivery"] for r in peer.requests}) == 1
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.last_error) == ("delivered", 3, "")
    assert delivery.next_attempt_at is None  # nothing more to attempt
    tries = list(
        DeliveryAttempt.objects.filter(delivery=delivery).values_list("ok", "status_code", "error")
    )
    assert tries == [(False, 500, "HTTP 500"), (False, 503, "HTTP 503"), (True, 200, "")]


def test_a_task_lost_by_the_broker_is_sent_by_the_sweep_and_a_duplicate_sends_nothing(
    cast, endpoint, receiver, record, django_capture_on_commit_callbacks
):
    webhook(cast, receiver.url)
    with django_capture_on_commit_callbacks(execute=False):  # the queued task never runs
        record(endpoint, [(timezone.now(), False, 20.0)])
    delivery = Delivery.objects.get()
    assert receiver.requests == []

    # Held while its task may still be queued; sent once the hold is over.
    assert dispatch(timedelta(seconds=30), django_capture_on_commit_callbacks) == 0
    assert dispatch(timedelta(seconds=61), django_capture_on_commit_callbacks) == 1
    assert len(receiver.requests) == 1

    assert deliver(str(delivery.pk)) is None  # the lost task, arriving late
    assert len(receiver.requests) == 1


def test_an_incident_is_written_to_the_outbox_once_per_channel(cast, endpoint, receiver, go_down):
    webhook(cast, receiver.url)
    webhook(cast, receiver.url, projects=[cast.project])
    webhook(cast, receiver.url, projects=[cast.other_project])  # another org's: covers nothing
    go_down(endpoint)

    assert Delivery.objects.count() == 2
    assert len({json.loads(r.body)["id"] for r in receiver.requests}) == 1


def test_channels_narrowed_to_other_projects_or_endpoints_or_disabled_get_nothing(
    cast, endpoint, receiver, go_down, make_endpoint
):
    other = make_endpoint(cast.project, name="Other")
    from accounts.services import project_create

    elsewhere = project_create(organization=cast.org, name="Elsewhere")
    webhook(cast, receiver.url, projects=[elsewhere])
    webhook(cast, receiver.url, endpoints=[other])
    webhook(cast, receiver.url, enabled=False)
    foreign = services.channel_create(
        organization=cast.other_org, name="Theirs", kind="webhook", config={"url": receiver.url}
    )
    go_down(endpoint)

    assert receiver.requests == []
    assert not Delivery.objects.exists()
    assert foreign.deliveries.count() == 0


def test_a_receiver_that_keeps_failing_gives_up_and_flags_its_channel(
    cast, make_endpoint, go_down, settings, django_capture_on_commit_callbacks
):
    settings.NOTIFY_MAX_ATTEMPTS = 3
    peer = Receiver((500,))
    try:
        channel = webhook(cast, peer.url)
        for n in range(3):
            go_down(make_endpoint(cast.project, name=f"E{n}", failure_threshold=1))
            for _ in range(2):
                dispatch(timedelta(hours=1), django_capture_on_commit_callbacks)
        channel.refresh_from_db()
        assert Delivery.objects.filter(status="failed").count() == 3
        assert DeliveryAttempt.objects.count() == 9
        assert channel.consecutive_failures == 3
        assert channel.failing_since is not None

        # Flagged: one attempt per delivery, no retries.
        go_down(make_endpoint(cast.project, name="E3", failure_threshold=1))
        assert Delivery.objects.order_by("created_at").last().status == "failed"
        assert dispatch(timedelta(hours=2), django_capture_on_commit_callbacks) == 0
        assert len(peer.requests) == 10

        # A success clears the flag.
        peer.statuses = [200]
        go_down(make_endpoint(cast.project, name="E4", failure_threshold=1))
    finally:
        peer.stop()
    channel.refresh_from_db()
    assert (channel.consecutive_failures, channel.failing_since) == (0, None)


def test_a_webhook_to_a_private_address_is_refused_when_the_policy_forbids_it(
    cast, endpoint, receiver, go_down, settings
):
    settings.PROBE_ALLOWED_NETWORKS = []
    host_url = receiver.url.replace("127.0.0.1", "localhost")
    channel = services.channel_create(
        organization=cast.org, name="Sneaky", kind="slack", config={"url": host_url}
    )
    go_down(endpoint)

    assert receiver.requests == []
    (attempt,) = DeliveryAttempt.objects.filter(delivery__channel=channel)
    assert attempt.error == "target address not allowed (network policy)"
    assert "SECRET-PATH" not in attempt.error


def test_a_redirect_is_not_followed(cast, endpoint, receiver, go_down):
    bouncer = Receiver((302,), location=receiver.url)
    try:
        webhook(cast, bouncer.url)
        go_down(endpoint)
    finally:
        bouncer.stop()

    assert receiver.requests == []
    attempt = DeliveryAttempt.objects.get()
    assert (attempt.ok, attempt.status_code) == (False, 302)
    assert "not followed" in attempt.error


def test_chat_webhooks_get_their_own_message_shapes(cast, endpoint, receiver, go_down):
    for kind in ("slack", "discord", "teams"):
        services.channel_create(
            organization=cast.org, name=kind, kind=kind, config={"url": receiver.url}
        )
    go_down(endpoint)

    bodies = [json.loads(r.body) for r in receiver.requests]
    assert all("x-healthmon-signature" not in r.headers for r in receiver.requests)
    slack = next(b for b in bodies if "text" in b)
    discord = next(b for b in bodies if "content" in b)
    teams = next(b for b in bodies if b.get("type") == "message")
    link = f"https://healthmon.test/endpoints/{endpoint.pk}"
    for text in (slack["text"], discord["content"], json.dumps(teams)):
        assert "DOWN: Checkout API (" in text
        assert cast.project.name in text
        assert "unexpected status 503" in text
        assert link in text
    assert discord["allowed_mentions"] == {"parse": []}
    card = teams["attachments"][0]
    assert card["contentType"] == "application/vnd.microsoft.card.adaptive"


def test_mail_goes_to_the_addresses_and_the_projects_members(
    cast, endpoint, go_down, make_user, outbox
):
    make_user(cast.org, "stranger@acme.test", Role.MEMBER)  # no access to the project
    services.channel_create(
        organization=cast.org,
        name="On call",
        kind="email",
        config={"addresses": ["oncall@example.com"], "to_members": True},
    )
    go_down(endpoint)
    go_down(endpoint, ok=True, at=timezone.now() + timedelta(minutes=3))

    opened = [m for m in outbox if "DOWN" in m.subject]
    resolved = [m for m in outbox if "RECOVERED" in m.subject]
    recipients = sorted(m.to[0] for m in opened)
    assert recipients == sorted(
        ["oncall@example.com", cast.owner.email, cast.admin.email, cast.member.email]
    )
    assert all(len(m.to) == 1 for m in mail.outbox)  # nobody sees the other recipients
    message = opened[0]
    assert message.subject == f"[healthmon] DOWN: Checkout API ({cast.project.name})"
    assert "unexpected status 503" in message.body
    assert f"https://healthmon.test/endpoints/{endpoint.pk}" in message.body
    assert len(resolved) == 4
    assert "Duration: 3 min" in resolved[0].body


def test_maintenance_holds_back_notifications_of_its_endpoints_only(
    cast, endpoint, receiver, go_down, make_endpoint
):
    from accounts.services import project_create

    elsewhere = make_endpoint(
        project_create(organization=cast.org, name="Elsewhere"), failure_threshold=1
    )
    webhook(cast, receiver.url)
    now = timezone.now()
    window = services.maintenance_window_save(
        window=MaintenanceWindow(organization=cast.org),
        starts_at=now - timedelta(minutes=5),
        ends_at=now + timedelta(minutes=30),
        projects=[cast.project],
    )
    go_down(endpoint)
    go_down(elsewhere)
    go_down(endpoint, ok=True, at=now + timedelta(minutes=40))  # after the window

    sent = [json.loads(r.body) for r in receiver.requests]
    assert [(b["event"], b["endpoint"]["id"]) for b in sent] == [
        ("incident.opened", str(elsewhere.pk))
    ]
    held = Delivery.objects.filter(status=DeliveryStatus.SUPPRESSED)
    # The opening was held back, so its resolution is too, though it came after the window.
    assert sorted(held.values_list("event", flat=True)) == ["incident.opened", "incident.resolved"]
    assert not held.filter(tries__isnull=False).exists()
    assert window.active_at(now)


def test_a_weekly_window_holds_back_notifications_a_week_later(cast, endpoint, receiver, go_down):
    webhook(cast, receiver.url)
    now = timezone.now()
    services.maintenance_window_save(
        window=MaintenanceWindow(organization=cast.org),
        starts_at=now - timedelta(days=14, minutes=5),
        ends_at=now - timedelta(days=14) + timedelta(minutes=5),
        recurrence="weekly",
        endpoints=[endpoint],
    )
    go_down(endpoint)

    assert receiver.requests == []
    assert Delivery.objects.get().status == DeliveryStatus.SUPPRESSED


def test_a_batch_in_which_no_incident_moves_reads_no_alert_table(cast, endpoint, receiver, record):
    webhook(cast, receiver.url)
    services.maintenance_window_save(
        window=MaintenanceWindow(organization=cast.org),
        starts_at=timezone.now() - timedelta(hours=1),
        ends_at=timezone.now() + timedelta(hours=1),
    )
    record(endpoint, [(timezone.now() - timedelta(minutes=2), True, 20.0)])
    with CaptureQueriesContext(connection) as queries:
        record(endpoint, [(timezone.now() - timedelta(minutes=1), True, 20.0)])

    assert queries.captured_queries  # the batch itself was stored
    touched = " ".join(q["sql"] for q in queries.captured_queries)
    for table in ("notificationchannel", "delivery", "maintenancewindow"):
        assert f"monitoring_{table}" not in touched


def test_no_webhook_url_reaches_the_logs_even_at_debug(cast, endpoint, receiver, go_down, caplog):
    caplog.set_level(logging.DEBUG)
    services.channel_create(
        organization=cast.org, name="Chat", kind="slack", config={"url": receiver.url}
    )
    go_down(endpoint)

    assert len(receiver.requests) == 1
    assert "SECRET-PATH" not in caplog.text


def test_a_delivery_left_for_a_channel_turned_off_fails_without_flagging_it(
    cast, endpoint, receiver, record, django_capture_on_commit_callbacks, settings
):
    settings.NOTIFY_FLAG_AFTER = 1
    channel = webhook(cast, receiver.url)
    with django_capture_on_commit_callbacks(execute=False):
        record(endpoint, [(timezone.now(), False, 20.0)])
    services.channel_update(channel=channel, enabled=False)
    dispatch(timedelta(seconds=61), django_capture_on_commit_callbacks)

    assert receiver.requests == []
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.last_error) == ("failed", "channel disabled")
    assert delivery.next_attempt_at is None
    channel.refresh_from_db()
    assert (channel.consecutive_failures, channel.failing_since) == (0, None)


def test_an_error_while_sending_is_recorded_and_retried_not_left_pending(
    cast, endpoint, receiver, go_down, monkeypatch, django_capture_on_commit_callbacks
):
    webhook(cast, receiver.url)

    def broken(channel, delivery):
        raise RuntimeError("a bug")

    monkeypatch.setattr(delivery_module, "send_once", broken)
    go_down(endpoint)
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts) == ("pending", 1)
    assert delivery.last_error == "internal error (RuntimeError)"

    monkeypatch.undo()
    dispatch(timedelta(seconds=31), django_capture_on_commit_callbacks)
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("delivered", 2)
    assert len(receiver.requests) == 1


def test_a_delivery_whose_attempts_keep_being_cut_off_is_given_up(
    cast, endpoint, receiver, record, settings, django_capture_on_commit_callbacks
):
    settings.NOTIFY_MAX_ATTEMPTS = 3
    webhook(cast, receiver.url)
    with django_capture_on_commit_callbacks(execute=False):
        record(endpoint, [(timezone.now(), False, 20.0)])
    # Three workers died mid-send: each counted its attempt, none recorded an outcome.
    Delivery.objects.update(attempts=3)
    dispatch(timedelta(seconds=61), django_capture_on_commit_callbacks)

    assert receiver.requests == []
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts) == ("failed", 4)
    assert delivery.last_error == "given up: earlier attempts were cut off"


def test_a_name_with_a_line_break_cannot_break_the_mail_subject(
    cast, make_endpoint, go_down, outbox
):
    endpoint = make_endpoint(cast.project, name="Checkout\r\nBcc: x@evil.test", failure_threshold=1)
    services.channel_create(
        organization=cast.org, name="Mail", kind="email", config={"addresses": ["a@example.com"]}
    )
    go_down(endpoint)

    (message,) = outbox
    assert "\n" not in message.subject
    assert message.to == ["a@example.com"]
    assert not message.bcc


def test_a_late_or_duplicate_task_sends_nothing_and_keeps_the_back_off(
    cast, endpoint, go_down, django_capture_on_commit_callbacks
):
    peer = Receiver((500,))
    try:
        webhook(cast, peer.url)
        go_down(endpoint)  # attempt 1 fails; the next waits 30 s
        delivery = Delivery.objects.get()
        assert deliver(str(delivery.pk), 0) is None  # the first task, delivered again
        assert deliver(str(delivery.pk), 0) is None
        assert len(peer.requests) == 1
        dispatch(timedelta(seconds=31), django_capture_on_commit_callbacks)
        assert deliver(str(delivery.pk), 1) is None  # the sweep's task, twice
    finally:
        peer.stop()
    assert len(peer.requests) == 2
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("pending", 2)


def test_an_incident_is_judged_at_its_own_time_not_at_ingest(cast, endpoint, receiver, go_down):
    webhook(cast, receiver.url)
    now = timezone.now()
    services.maintenance_window_save(
        window=MaintenanceWindow(organization=cast.org),
        starts_at=now - timedelta(hours=1),
        ends_at=now - timedelta(minutes=10),
    )
    past = now - timedelta(hours=2)
    Endpoint.objects.filter(pk=endpoint.pk).update(created_at=past, watch_started_at=past)
    endpoint.refresh_from_db()
    # The outage began inside the window; the batch that confirms it comes after it ended.
    go_down(endpoint, at=now - timedelta(minutes=15))
    go_down(endpoint, ok=True, at=now - timedelta(minutes=5))

    assert receiver.requests == []
    assert set(Delivery.objects.values_list("status", flat=True)) == {"suppressed"}


def test_a_test_whose_sending_raises_is_recorded_as_failed(cast, receiver, monkeypatch):
    channel = webhook(cast, receiver.url)

    def broken(channel, delivery):
        raise RuntimeError("a bug")

    monkeypatch.setattr(delivery_module, "send_once", broken)
    delivery = delivery_module.channel_test(channel=channel)

    assert (delivery.status, delivery.last_error) == ("failed", "internal error (RuntimeError)")
    assert delivery.tries.count() == 1
    assert Delivery.objects.filter(status="pending").count() == 0


def test_a_retry_pending_when_its_channel_is_flagged_is_sent_once_more(
    cast, endpoint, go_down, settings, django_capture_on_commit_callbacks
):
    peer = Receiver((500,))
    try:
        channel = webhook(cast, peer.url)
        go_down(endpoint)  # attempt 1 fails, a retry waits
        NotificationChannel.objects.filter(pk=channel.pk).update(failing_since=timezone.now())
        dispatch(timedelta(seconds=31), django_capture_on_commit_callbacks)
    finally:
        peer.stop()

    assert len(peer.requests) == 2
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.last_error) == ("failed", 2, "HTTP 500")
