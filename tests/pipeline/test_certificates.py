"""Certificates through the check pipeline: stored on the endpoint, shown by the API and the
page, and each expiry threshold announced once per certificate through the channels."""

import json
import re
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext

from alerts import services
from alerts.models import Delivery
from monitoring.checks import CheckOutcome
from monitoring.models import Endpoint
from monitoring.probes import ProbeResult
from monitoring.probes.certificates import PeerCertificate
from pipeline.checks import checks_record, checks_run
from tests.monitoring.authority import Authority
from tests.monitoring.peers import HTTPPeer


@pytest.fixture(scope="module")
def authority() -> Authority:
    return Authority()


@pytest.fixture(scope="module")
def expiring_peer(authority, tmp_path_factory):
    """A TLS service whose certificate has 10 days (and an hour) left."""
    directory = tmp_path_factory.mktemp("ten-days")
    peer = HTTPPeer(authority.server_context(directory, days=10 + 1 / 24, issued_days_ago=80))
    try:
        yield peer
    finally:
        peer.stop()


@pytest.fixture
def hook(cast, receiver):
    return services.channel_create(
        organization=cast.org, name="Ops hook", kind="webhook", config={"url": receiver.url}
    )


def check_at(endpoint, moment, capture):
    """Run the endpoint's check as a worker would, at `moment`, sending what it queues."""
    with time_machine.travel(moment, tick=True), capture(execute=True):
        return checks_run(slots=[(endpoint.pk, moment)])


def events(receiver):
    return [json.loads(request.body) for request in receiver.requests]


def test_a_certificate_expiring_in_10_days_warns_at_14_then_at_7_days_once_each(
    cast,
    make_endpoint,
    expiring_peer,
    authority,
    hook,
    receiver,
    settings,
    django_capture_on_commit_callbacks,
):
    endpoint = make_endpoint(
        cast.project,
        type="tls",
        target=f"tls://127.0.0.1:{expiring_peer.port}",
        config={"ca_certificate": authority.pem},
    )
    now = datetime.now(UTC).replace(microsecond=0)

    check_at(endpoint, now, django_capture_on_commit_callbacks)
    check_at(endpoint, now + timedelta(minutes=1), django_capture_on_commit_callbacks)

    [first] = events(receiver)
    assert first["event"] == "certificate.expiring"
    assert first["incident"] is None
    assert first["endpoint"]["id"] == str(endpoint.pk)
    assert (first["certificate"]["threshold"], first["certificate"]["days_left"]) == (14, 10)
    assert first["certificate"]["issuer"] == "CN=healthmon test CA"
    endpoint.refresh_from_db()
    assert endpoint.status == "up"  # expiring is no downtime
    assert endpoint.certificate_issuer == "CN=healthmon test CA"
    assert endpoint.certificate_expires_at - now > timedelta(days=10)

    later = now + timedelta(days=4)
    check_at(endpoint, later, django_capture_on_commit_callbacks)
    check_at(endpoint, later + timedelta(minutes=1), django_capture_on_commit_callbacks)
    check_at(endpoint, later + timedelta(hours=2), django_capture_on_commit_callbacks)

    thresholds = [event["certificate"]["threshold"] for event in events(receiver)]
    assert thresholds == [14, 7]
    assert Delivery.objects.filter(event="certificate.expiring").count() == 2
    assert {event["id"] for event in events(receiver)} == {
        str(d.event_id) for d in Delivery.objects.all()
    }


T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


def certificate(expires_at, lifetime=timedelta(days=90), fingerprint="a" * 64):
    return PeerCertificate(
        not_before=expires_at - lifetime,
        expires_at=expires_at,
        issuer="CN=Test CA",
        subject="CN=shop.example.com",
        fingerprint=fingerprint,
    )


def record_seen(endpoint, moment, seen, capture):
    result = ProbeResult(
        ok=True, response_time_ms=5.0, started_at=moment.timestamp(), certificate=seen
    )
    with capture(execute=True):
        return checks_record(outcomes=[CheckOutcome(endpoint.pk, moment, moment, result)])


def test_a_renewed_certificate_starts_over(
    cast, make_endpoint, hook, receiver, django_capture_on_commit_callbacks
):
    endpoint = make_endpoint(cast.project, config={"certificate_expiry_days": [14]})
    old = certificate(T0 + timedelta(days=10))
    renewed = certificate(T0 + timedelta(days=12), fingerprint="b" * 64)

    record_seen(endpoint, T0, old, django_capture_on_commit_callbacks)
    record_seen(endpoint, T0 + timedelta(minutes=1), old, django_capture_on_commit_callbacks)
    record_seen(endpoint, T0 + timedelta(minutes=2), renewed, django_capture_on_commit_callbacks)

    warned = [
        (e["certificate"]["fingerprint"][0], e["certificate"]["threshold"])
        for e in events(receiver)
    ]
    assert warned == [("a", 14), ("b", 14)]
    assert Endpoint.objects.get().certificate_fingerprint == "b" * 64


def test_a_share_of_a_short_lifetime_is_a_threshold(
    cast, make_endpoint, hook, receiver, django_capture_on_commit_callbacks
):
    """A 7-day certificate with "20%": warned once 1.4 days are left, not before."""
    endpoint = make_endpoint(cast.project, config={"certificate_expiry_days": ["20%"]})
    seen = certificate(T0 + timedelta(days=7), lifetime=timedelta(days=7))

    record_seen(endpoint, T0 + timedelta(days=5), seen, django_capture_on_commit_callbacks)
    assert events(receiver) == []
    record_seen(
        endpoint, T0 + timedelta(days=5, hours=15), seen, django_capture_on_commit_callbacks
    )

    [event] = events(receiver)
    assert (event["certificate"]["threshold"], event["certificate"]["days_left"]) == ("20%", 1)


def test_an_expired_certificate_announces_nothing(
    cast, make_endpoint, hook, receiver, django_capture_on_commit_callbacks
):
    """It fails its checks instead: the incident tells of it."""
    endpoint = make_endpoint(cast.project)
    seen = certificate(T0 - timedelta(days=1))

    record_seen(endpoint, T0, seen, django_capture_on_commit_callbacks)

    assert events(receiver) == []
    assert Endpoint.objects.get().certificate_expires_at == seen.expires_at


def test_a_certificate_seen_again_writes_nothing(
    cast, make_endpoint, django_capture_on_commit_callbacks
):
    """One write when a certificate or a warning changes, none per check."""
    endpoint = make_endpoint(cast.project)
    seen = certificate(T0 + timedelta(days=60))
    record_seen(endpoint, T0, seen, django_capture_on_commit_callbacks)

    with CaptureQueriesContext(connection) as captured:
        record_seen(endpoint, T0 + timedelta(minutes=1), seen, django_capture_on_commit_callbacks)

    # UPDATE statements (executemany's are logged as "N times: UPDATE ..."), not the row
    # locks (`SELECT ... FOR NO KEY UPDATE OF ...`)
    writes = [q["sql"] for q in captured if re.match(r"(\d+ times: )?UPDATE ", q["sql"])]
    assert writes
    assert not [sql for sql in writes if "certificate_" in sql]
    assert Endpoint.objects.get().certificate_expires_at == seen.expires_at


def test_the_api_and_the_page_show_the_certificate(
    cast, make_endpoint, api, client, django_capture_on_commit_callbacks
):
    endpoint = make_endpoint(cast.project)
    now = datetime.now(UTC)
    record_seen(
        endpoint,
        now,
        certificate(now + timedelta(days=20, hours=1)),
        django_capture_on_commit_callbacks,
    )

    data = api.as_user(cast.owner).get(f"/api/v1/endpoints/{endpoint.pk}").json()
    client.force_login(cast.owner)
    page = client.get(f"/endpoints/{endpoint.pk}").content.decode()

    assert data["certificate_issuer"] == "CN=Test CA"
    assert data["certificate_expires_at"].startswith(
        (now + timedelta(days=20, hours=1)).strftime("%Y-%m-%dT%H:%M")
    )
    assert "Certificate expires in 20 days" in page
    assert 'class="status-degraded">Certificate expires' in page  # under the first threshold, 30


def test_the_page_shows_an_expired_certificate_in_red(
    cast, make_endpoint, client, django_capture_on_commit_callbacks
):
    endpoint = make_endpoint(cast.project)
    now = datetime.now(UTC)
    record_seen(
        endpoint, now, certificate(now - timedelta(days=2)), django_capture_on_commit_callbacks
    )

    client.force_login(cast.owner)
    page = client.get(f"/endpoints/{endpoint.pk}").content.decode()

    assert '<strong class="status-down">Certificate expired' in page
