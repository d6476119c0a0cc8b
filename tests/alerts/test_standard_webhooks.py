"""Standard Webhooks on generic webhooks, verified on the receiving side with the reference
library: the headers of every attempt, one `webhook-id` per event kept across retries, a
replay older than five minutes refused, a `whsec_` secret for new channels, and secrets
from before Standard Webhooks still valid for both signatures."""

import base64
import hashlib
import hmac
import json
import secrets
from datetime import timedelta
from typing import Any

import pytest
import time_machine
from django.utils import timezone
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from alerts.delivery import deliveries_dispatch
from alerts.models import Delivery, NotificationChannel
from alerts.services import event_key
from tests.alerts.receiver import Received, Receiver, webhook

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("loopback_allowed")]

URL = "/api/v1/notification-channels"


def dispatch(after: timedelta, capture: Any) -> int:
    with capture(execute=True):
        return deliveries_dispatch(now=timezone.now() + after)


def old_signature_valid(secret: str, request: Received) -> bool:
    expected = "sha256=" + hmac.new(secret.encode(), request.body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, request.headers["x-healthmon-signature"])


def test_the_receiver_verifies_each_event_with_the_reference_library(
    cast, endpoint, receiver, go_down
):
    channel = webhook(cast, receiver.url)
    started = timezone.now()
    go_down(endpoint, at=started)
    go_down(endpoint, ok=True, at=started + timedelta(seconds=60))

    verifier = Webhook(channel.secret)
    opened, resolved = receiver.requests
    for request in (opened, resolved):
        document = verifier.verify(request.body, request.headers)
        assert request.headers["webhook-id"] == document["id"]
        assert request.headers["webhook-signature"].startswith("v1,")
        sent_at = int(request.headers["webhook-timestamp"])
        assert abs(sent_at - timezone.now().timestamp()) < 60
        assert old_signature_valid(channel.secret, request)  # the deprecated header stays
    incident = endpoint.incidents.get()
    assert opened.headers["webhook-id"] == str(event_key(incident.pk, "incident.opened"))
    assert resolved.headers["webhook-id"] == str(event_key(incident.pk, "incident.resolved"))


def test_the_signature_is_the_hmac_of_id_timestamp_and_body(cast, endpoint, receiver, go_down):
    channel = webhook(cast, receiver.url)

    go_down(endpoint)

    [request] = receiver.requests
    key = base64.b64decode(channel.secret.removeprefix("whsec_"))
    signed = b".".join(
        [
            request.headers["webhook-id"].encode(),
            request.headers["webhook-timestamp"].encode(),
            request.body,
        ]
    )
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    assert request.headers["webhook-signature"] == f"v1,{expected}"


def test_a_tampered_body_or_another_secret_is_rejected(cast, endpoint, receiver, go_down):
    channel = webhook(cast, receiver.url)
    go_down(endpoint)
    [request] = receiver.requests

    with pytest.raises(WebhookVerificationError):
        Webhook(channel.secret).verify(request.body.replace(b"503", b"200"), request.headers)
    other = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
    with pytest.raises(WebhookVerificationError):
        Webhook(other).verify(request.body, request.headers)


def test_a_replay_older_than_five_minutes_is_rejected(cast, endpoint, receiver, go_down):
    channel = webhook(cast, receiver.url)
    go_down(endpoint)
    [request] = receiver.requests
    verifier = Webhook(channel.secret)
    sent_at = timezone.now()

    with time_machine.travel(sent_at + timedelta(minutes=4), tick=False):
        assert verifier.verify(request.body, request.headers)["event"] == "incident.opened"
    with (
        time_machine.travel(sent_at + timedelta(minutes=6), tick=False),
        pytest.raises(WebhookVerificationError, match="too old"),
    ):
        verifier.verify(request.body, request.headers)


def test_retries_keep_the_webhook_id_and_are_signed_anew(
    cast, endpoint, go_down, django_capture_on_commit_callbacks
):
    peer = Receiver((500, 200))
    try:
        channel = webhook(cast, peer.url)
        go_down(endpoint)
        with time_machine.travel(timezone.now() + timedelta(seconds=40), tick=False):
            assert dispatch(timedelta(0), django_capture_on_commit_callbacks) == 1
    finally:
        peer.stop()

    first, second = peer.requests
    assert first.headers["webhook-id"] == second.headers["webhook-id"]
    assert first.body == second.body
    assert int(second.headers["webhook-timestamp"]) - int(first.headers["webhook-timestamp"]) >= 39
    assert first.headers["webhook-signature"] != second.headers["webhook-signature"]
    with time_machine.travel(timezone.now() + timedelta(seconds=40), tick=False):
        Webhook(channel.secret).verify(second.body, second.headers)
    assert Delivery.objects.get().status == "delivered"


def test_a_new_webhook_secret_is_a_standard_webhooks_secret(api, cast):
    created = api.as_user(cast.owner).post(
        URL, {"name": "Hook", "kind": "webhook", "config": {"url": "https://hooks.example.com/"}}
    )

    secret = created.json()["secret"]
    assert secret.startswith("whsec_")
    assert len(base64.b64decode(secret.removeprefix("whsec_"))) == 32
    assert NotificationChannel.objects.get().secret == secret


def test_a_secret_from_before_signs_both_headers_as_documented(cast, endpoint, receiver, go_down):
    channel = webhook(cast, receiver.url)
    old = secrets.token_urlsafe(32)  # how secrets were made before Standard Webhooks
    NotificationChannel.objects.filter(pk=channel.pk).update(secret=old)

    go_down(endpoint)

    [request] = receiver.requests
    assert old_signature_valid(old, request)
    assert Webhook(old.encode()).verify(request.body, request.headers)["event"] == (
        "incident.opened"
    )
    raw_as_whsec = "whsec_" + base64.b64encode(old.encode()).decode()
    assert (
        Webhook(raw_as_whsec).verify(request.body, request.headers)["id"]
        == json.loads(request.body)["id"]
    )


def test_a_test_send_is_signed_too(api, cast, receiver):
    api.as_user(cast.owner)
    created = api.post(URL, {"name": "Hook", "kind": "webhook", "config": {"url": receiver.url}})

    api.post(f"{URL}/{created.json()['id']}/test")

    [request] = receiver.requests
    document = Webhook(created.json()["secret"]).verify(request.body, request.headers)
    assert document["event"] == "test"
    assert request.headers["webhook-id"] == document["id"]
