"""An incident's timeline: opening, updates, internal notes, acknowledgement, escalation
lines, each delivery's outcome and resolution, in time order, in `GET /incidents/{id}` and on
the incident page; never on a public route."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from monitoring.acknowledgement import incident_acknowledge
from monitoring.incidents import incident_declare, incident_note_add, incident_update_post
from monitoring.models import ActivityKind, Incident, IncidentActivity

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


def at(minutes):
    return time_machine.travel(T0 + timedelta(minutes=minutes), tick=False)


@pytest.fixture
def endpoint(cast, make_endpoint):
    return make_endpoint(cast.project, name="Checkout API")


@pytest.fixture
def story(cast, endpoint):
    """An automatic incident with one line of every kind, written out of order."""
    incident = Incident.objects.create(endpoint=endpoint, started_at=T0, cause="HTTP 503")
    lines = [
        (6, ActivityKind.REMINDED, "Reminder 1 to Slack “ops”"),
        (1, ActivityKind.DELIVERED, "Slack “ops”: incident.opened delivered"),
        (2, ActivityKind.DELIVERY_FAILED, "Webhook “pager”: incident.opened failed after 6"),
        (5, ActivityKind.ESCALATED, "Step 2 to Email “on-call”"),
    ]
    for minutes, kind, text in lines:
        IncidentActivity.objects.create(
            incident=incident, kind=kind, text=text, at=T0 + timedelta(minutes=minutes)
        )
    with at(3):
        incident_note_add(incident=incident, author=cast.admin, text="Paged Bob.")
    with at(4):
        incident_update_post(
            incident=incident, author=cast.owner, status="identified", message="DB"
        )
    with at(7):
        incident_acknowledge(incident=incident, by=cast.member, via="api")
    Incident.objects.filter(pk=incident.pk).update(resolved_at=T0 + timedelta(minutes=9))
    return incident


ORDER = [
    "opened",
    "delivered",
    "delivery_failed",
    "note",
    "update",
    "escalated",
    "reminded",
    "acknowledged",
    "resolved",
]


def test_the_api_answers_every_line_in_time_order(api, cast, story):
    data = api.as_user(cast.member).get(f"/api/v1/incidents/{story.pk}").json()

    timeline = data["timeline"]
    assert [line["kind"] for line in timeline] == ORDER
    assert [line["at"] for line in timeline] == sorted(line["at"] for line in timeline)
    assert set(timeline[0]) == {"at", "kind", "text", "actor", "detail"}
    assert timeline[0]["text"] == "Opened: HTTP 503"
    note, update, ack = timeline[3], timeline[4], timeline[7]
    assert note["text"] == "Paged Bob."
    assert note["actor"] == {"id": str(cast.admin.pk), "email": "admin@acme.test"}
    assert update["detail"]["status"] == "identified"
    assert ack["actor"]["email"] == "member@acme.test"
    assert ack["detail"]["via"] == "api"
    assert timeline[1]["actor"] is None
    assert timeline[-1]["at"] == "2030-01-01T12:09:00Z"


def test_the_page_shows_the_same_lines_in_the_same_order(client, cast, story):
    client.force_login(cast.member)

    page = client.get(f"/incidents/{story.pk}").content.decode()

    section = page[page.index('id="timeline"') :]
    found = [section.index(f'data-kind="{kind}"') for kind in ORDER]
    assert found == sorted(found)
    assert "Slack “ops”: incident.opened delivered" in section


def test_a_declared_incident_starts_with_its_declaration(api, cast, endpoint):
    with at(0):
        declared = incident_declare(
            organization=cast.org,
            author=cast.owner,
            title="Payments fail",
            endpoints=[endpoint],
            impact="major_outage",
            message="Looking.",
        )

    data = api.as_user(cast.member).get(f"/api/v1/incidents/{declared.pk}").json()

    assert [line["kind"] for line in data["timeline"]] == ["declared", "update"]


def test_public_status_page_routes_read_no_timeline(client, cast, story):
    """The status pages read incidents' updates only: the API's incident resource (with
    notes and timeline) is served to members, never anonymously."""
    response = client.get(f"/api/v1/incidents/{story.pk}")

    assert response.status_code == 401
    assert b"Paged Bob" not in response.content
