"""The incident page's acknowledgement: a button (a CSRF-checked POST) while the incident is
open and unacknowledged, "Acknowledged by X at T" after; every member who sees it may."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.test import Client

from accounts.models import Role
from monitoring.acknowledgement import incident_acknowledge
from monitoring.models import ActivityKind, Incident, IncidentActivity

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def incident(cast, make_endpoint):
    endpoint = make_endpoint(cast.project, name="Checkout API")
    return Incident.objects.create(endpoint=endpoint, started_at=T0, cause="HTTP 503")


def page_of(client, incident):
    return client.get(f"/incidents/{incident.pk}").content.decode()


def test_an_open_incident_shows_the_button(client, cast, incident):
    client.force_login(cast.member)

    page = page_of(client, incident)

    assert f'action="/incidents/{incident.pk}/acknowledge"' in page
    assert "Nobody has acknowledged it yet" in page


def test_a_member_acknowledges_from_the_page(client, cast, incident):
    with time_machine.travel(T0 + timedelta(minutes=4), tick=False):
        client.force_login(cast.member)
        response = client.post(f"/incidents/{incident.pk}/acknowledge")
        page = page_of(client, incident)

    assert response.status_code == 302
    assert response["Location"] == f"/incidents/{incident.pk}"
    incident.refresh_from_db()
    assert (incident.acknowledged_by, incident.acknowledged_via) == (cast.member, "page")
    assert "Acknowledged by" in page
    assert "member@acme.test" in page
    assert "2030-01-01 12:04:00 UTC" in page
    assert f'action="/incidents/{incident.pk}/acknowledge"' not in page


def test_a_second_acknowledge_changes_nothing(client, cast, incident):
    incident_acknowledge(incident=incident, by=cast.admin, via="api")
    client.force_login(cast.member)

    client.post(f"/incidents/{incident.pk}/acknowledge")

    incident.refresh_from_db()
    assert incident.acknowledged_by == cast.admin
    assert IncidentActivity.objects.filter(kind=ActivityKind.ACKNOWLEDGED).count() == 1


def test_a_resolved_incident_has_no_button_and_refuses(client, cast, incident):
    Incident.objects.filter(pk=incident.pk).update(resolved_at=T0 + timedelta(minutes=2))
    client.force_login(cast.owner)

    assert "/acknowledge" not in page_of(client, incident)
    response = client.post(f"/incidents/{incident.pk}/acknowledge", follow=True)

    assert "nothing to acknowledge" in response.content.decode()
    incident.refresh_from_db()
    assert incident.acknowledged_at is None


def test_a_link_acknowledgement_shows_no_person(client, cast, incident):
    incident_acknowledge(incident=incident, by=None, via="link")
    client.force_login(cast.member)

    assert "Acknowledged from a notification link" in page_of(client, incident)


def test_get_does_not_acknowledge(client, cast, incident):
    client.force_login(cast.member)

    assert client.get(f"/incidents/{incident.pk}/acknowledge").status_code == 405
    incident.refresh_from_db()
    assert incident.acknowledged_at is None


def test_others_cannot_acknowledge(client, cast, make_user, incident):
    stranger = make_user(cast.org, "stranger@acme.test", Role.MEMBER)  # no project
    for user in (cast.outsider, stranger):
        client.force_login(user)
        assert client.post(f"/incidents/{incident.pk}/acknowledge").status_code == 404
    client.logout()
    response = client.post(f"/incidents/{incident.pk}/acknowledge")
    assert response.status_code == 302
    assert response["Location"].startswith("/login")
    incident.refresh_from_db()
    assert incident.acknowledged_at is None


def test_the_form_needs_its_csrf_token(cast, incident):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(cast.member)

    assert browser.post(f"/incidents/{incident.pk}/acknowledge").status_code == 403
    incident.refresh_from_db()
    assert incident.acknowledged_at is None
