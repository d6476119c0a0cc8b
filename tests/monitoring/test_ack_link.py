"""The one-click acknowledge link, `/ack/<token>`, no login: a GET only asks (mail scanners
follow links), the POST acknowledges once; a second POST, the link of a resolved incident,
a tampered or unknown token answer a clear page with a 4xx and change nothing; the token
stays out of the logs; POSTs are throttled per client address."""

import re
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.core import signing
from django.test import Client

from monitoring.ack_views import ACK_POSTS_PER_IP
from monitoring.acknowledgement import (
    ACK_SALT,
    ack_link,
    ack_token,
    ack_token_incident_id,
    incident_acknowledge,
)
from monitoring.incidents import incident_declare
from monitoring.models import ActivityKind, Incident, IncidentActivity

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
TARGET = "https://user:hunter2@checkout.internal/health"


@pytest.fixture
def endpoint(cast, make_endpoint):
    return make_endpoint(cast.project, name="Checkout API", target=TARGET)


@pytest.fixture
def incident(endpoint):
    return Incident.objects.create(endpoint=endpoint, started_at=T0, cause="HTTP 503 from db-7")


def path(incident_id):
    return f"/ack/{ack_token(incident_id)}"


def text(response):
    return re.sub(r"\s+", " ", response.content.decode())


def acknowledgements():
    return IncidentActivity.objects.filter(kind=ActivityKind.ACKNOWLEDGED)


def test_the_link_is_absolute_and_names_its_incident(incident):
    link = ack_link(incident.pk)

    assert link.startswith("https://healthmon.test/ack/")
    assert ack_token_incident_id(link.rsplit("/", 1)[1]) == incident.pk


def test_a_get_shows_the_incident_and_changes_nothing(client, cast, incident):
    response = client.get(path(incident.pk))

    assert response.status_code == 200
    page = text(response)
    assert "Checkout API is down" in page
    assert "2030-01-01 12:00 UTC" in page
    assert 'method="post"' in page
    for secret in ("hunter2", "checkout.internal", "db-7", "HTTP 503", "@acme.test"):
        assert secret not in page
    assert response["Cache-Control"] == "private, no-store"
    assert response["Referrer-Policy"] == "no-referrer"
    incident.refresh_from_db()
    assert incident.acknowledged_at is None
    assert not acknowledgements().exists()


def test_the_page_and_the_acknowledgement_decrypt_no_endpoints_target(
    client, incident, endpoint_secrets_unread
):
    assert client.get(path(incident.pk)).status_code == 200
    assert client.post(path(incident.pk)).status_code == 200
    assert acknowledgements().count() == 1


def test_a_head_changes_nothing_either(client, incident):
    client.head(path(incident.pk))

    incident.refresh_from_db()
    assert incident.acknowledged_at is None


def test_the_post_acknowledges_once_with_no_login(client, incident):
    response = client.post(path(incident.pk))

    assert response.status_code == 200
    assert "Acknowledged at" in text(response)
    incident.refresh_from_db()
    assert incident.acknowledged_at is not None
    assert (incident.acknowledged_via, incident.acknowledged_by) == ("link", None)
    line = acknowledgements().get()
    assert line.actor is None
    assert line.text == "Acknowledged from the link in a notification"


def test_a_second_post_is_a_clear_409_and_changes_nothing(client, incident):
    client.post(path(incident.pk))
    incident.refresh_from_db()
    first = incident.acknowledged_at

    response = client.post(path(incident.pk))

    assert response.status_code == 409
    assert "already acknowledged" in text(response)
    assert 'method="post"' not in text(response)
    incident.refresh_from_db()
    assert incident.acknowledged_at == first
    assert acknowledgements().count() == 1


def test_a_link_of_an_incident_acknowledged_in_the_app_is_spent(client, cast, incident):
    incident_acknowledge(incident=incident, by=cast.owner, via="page")

    response = client.get(path(incident.pk))

    assert response.status_code == 409
    assert "owner@acme.test" not in text(response)  # no email on the public page


@pytest.mark.parametrize("method", ["get", "post"])
def test_the_link_of_a_resolved_incident_has_expired(client, incident, method):
    Incident.objects.filter(pk=incident.pk).update(resolved_at=T0 + timedelta(minutes=9))

    response = getattr(client, method)(path(incident.pk))

    assert response.status_code == 410
    assert "resolved" in text(response)
    assert 'method="post"' not in text(response)
    incident.refresh_from_db()
    assert incident.acknowledged_at is None
    assert not acknowledgements().exists()


def _tampered(incident_id):
    token = ack_token(incident_id)
    value, signature = token.split(":")
    flipped = ("A" if signature[0] != "A" else "B") + signature[1:]
    return [
        f"{value}:{flipped}",  # the signature changed
        f"{uuid.uuid4().hex}:{signature}",  # another incident, this one's signature
        value,  # no signature
        signing.Signer(salt="another.purpose").sign(value),  # signed for something else
        "not-a-token",
    ]


@pytest.mark.parametrize("method", ["get", "post"])
def test_a_tampered_token_is_a_clear_404_and_changes_nothing(client, incident, method):
    for token in _tampered(incident.pk):
        response = getattr(client, method)(f"/ack/{token}")

        assert response.status_code == 404, token
        assert "not valid" in text(response)
    incident.refresh_from_db()
    assert incident.acknowledged_at is None


def test_a_valid_token_of_an_unknown_incident_is_a_404(client, db):
    response = client.post(path(uuid.uuid4()))

    assert response.status_code == 404
    assert "not valid" in text(response)


def test_one_incidents_link_never_acknowledges_another(client, endpoint, incident):
    other = Incident.objects.create(
        endpoint=endpoint, started_at=T0 - timedelta(days=1), resolved_at=T0 - timedelta(hours=9)
    )

    client.post(path(other.pk))

    incident.refresh_from_db()
    assert incident.acknowledged_at is None


def test_a_declared_incident_names_its_endpoints(client, cast, endpoint):
    declared = incident_declare(
        organization=cast.org,
        author=cast.owner,
        title="Payments fail",
        endpoints=[endpoint],
        impact="major_outage",
        message="Card processor timing out.",
    )

    page = text(client.get(path(declared.pk)))

    assert "Payments fail" in page
    assert "Checkout API" in page
    assert "Card processor" not in page


def test_posts_are_throttled_per_client_address(client, incident):
    for _ in range(ACK_POSTS_PER_IP):
        client.post(f"/ack/{uuid.uuid4().hex}:guess")

    response = client.post(path(incident.pk))

    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    incident.refresh_from_db()
    assert incident.acknowledged_at is None
    elsewhere = client.post(path(incident.pk), REMOTE_ADDR="198.51.100.7")
    assert elsewhere.status_code == 200


def test_the_token_never_reaches_the_logs(client, incident, log_lines):
    token = ack_token(incident.pk)
    value, signature = token.split(":")

    client.get(f"/ack/{token}")
    client.post(f"/ack/{value}:{'A' + signature[1:]}")  # a refused one, logged by Django
    client.post(f"/ack/{token}")
    client.post(f"/ack/{token}")  # the 409
    Client(enforce_csrf_checks=True).post(f"/ack/{token}")  # the CSRF refusal

    logged = log_lines.text()
    assert "/ack/<token>" in logged  # Django's 4xx lines are there, masked
    assert signature not in logged
    assert signature[1:] not in logged
    assert value not in logged


def test_a_token_is_the_incident_id_signed_for_this_purpose_only(incident):
    token = ack_token(incident.pk)

    assert signing.Signer(salt=ACK_SALT).unsign(token) == incident.pk.hex
    assert ack_token_incident_id(signing.Signer().sign(incident.pk.hex)) is None


def test_a_browser_post_with_origin_null_acknowledges(incident):
    # The page sends no referrer (its URL holds the token), so a browser posts the button
    # with `Origin: null`, and nobody signed in holds a CSRF cookie: the view must take it
    # (the test client sends no Origin by default, which once hid a 403 here).
    browser = Client(enforce_csrf_checks=True)

    page = browser.get(path(incident.pk))
    answer = browser.post(path(incident.pk), HTTP_ORIGIN="null")

    assert page.status_code == 200
    assert answer.status_code == 200
    incident.refresh_from_db()
    assert incident.acknowledged_via == "link"
    assert acknowledgements().count() == 1


def test_ipv4_clients_of_a_dual_stack_server_are_counted_apart(client, incident):
    # Behind `[::]`, IPv4 clients arrive as ::ffff:a.b.c.d: each keeps its own count
    # (grouping them by /64 would put every IPv4 client in one bucket).
    for _ in range(ACK_POSTS_PER_IP + 1):
        client.post(f"/ack/{uuid.uuid4().hex}:guess", REMOTE_ADDR="::ffff:198.51.100.7")

    other = client.post(path(incident.pk), REMOTE_ADDR="::ffff:203.0.113.9")
    odd = client.post(f"/ack/{uuid.uuid4().hex}:guess", REMOTE_ADDR="zz:zz")

    assert other.status_code == 200
    assert odd.status_code == 404  # a malformed address is no 500
