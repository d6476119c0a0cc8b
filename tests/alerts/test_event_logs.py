"""Event lines (issue 19, item 5): failed checks, status changes, incidents and deliveries
each write one structured line, and a delivery's line never holds its URL."""

from datetime import timedelta

import pytest
from django.utils import timezone

from alerts.models import Delivery
from tests.alerts.receiver import Receiver, webhook

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("loopback_allowed")]


def test_a_failed_check_a_status_change_and_an_incident_are_logged(endpoint, go_down, log_lines):
    started = timezone.now()
    go_down(endpoint, at=started)
    go_down(endpoint, ok=True, at=started + timedelta(seconds=30))

    (failed,) = log_lines.events("check_failed")
    assert failed["endpoint_id"] == str(endpoint.pk)
    assert failed["type"] == "http"
    assert failed["error"] == "unexpected status 503"
    assert failed["level"] == "warning"
    down, up = log_lines.events("status_changed")
    assert (down["from_status"], down["to_status"]) == ("pending", "down")
    assert down["error"] == "unexpected status 503"
    assert (up["from_status"], up["to_status"]) == ("down", "up")
    incident = endpoint.incidents.get()
    (opened,) = log_lines.events("incident_opened")
    assert opened["incident_id"] == str(incident.pk)
    assert opened["endpoint_id"] == str(endpoint.pk)
    assert opened["cause"] == "unexpected status 503"
    (resolved,) = log_lines.events("incident_resolved")
    assert resolved["incident_id"] == str(incident.pk)


def test_delivery_attempts_are_logged_with_their_outcome_but_never_the_url(
    cast, endpoint, go_down, log_lines
):
    peer = Receiver((500,))
    try:
        webhook(cast, peer.url)
        go_down(endpoint)
    finally:
        peer.stop()

    delivery = Delivery.objects.get()
    (attempt,) = log_lines.events("delivery_attempt")
    assert attempt["delivery_id"] == str(delivery.pk)
    assert attempt["channel_kind"] == "webhook"
    assert attempt["status_code"] == 500
    assert attempt["outcome"] == "retry"
    assert attempt["attempt"] == 1
    assert peer.url not in log_lines.text()
    assert "SECRET-PATH" not in log_lines.text()


def test_a_delivered_attempt_is_logged_as_delivered(cast, endpoint, go_down, receiver, log_lines):
    webhook(cast, receiver.url)
    go_down(endpoint)

    (attempt,) = log_lines.events("delivery_attempt")
    assert (attempt["status_code"], attempt["outcome"], attempt["level"]) == (
        200,
        "delivered",
        "info",
    )
