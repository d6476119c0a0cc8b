"""An incident's timeline: opening, updates, internal notes, acknowledgement, escalation
lines, each delivery's outcome and resolution, in time order, in `GET /incidents/{id}` and on
the incident page; never on a public route."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from monitoring.acknowledgement import incident_acknowledge
from monitoring.incidents import incident_declare, incident_note_add, incident_update_post
from monitoring.models import ActivityKind, Incident, IncidentActivity
from monitoring.selectors import incidents_load, incidents_visible, loaded
from monitoring.timeline import incident_timeline

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


def test_an_incident_read_without_the_selector_has_the_same_timeline(cast, story):
    # The selector loads the related rows into lists; any other read of an incident falls
    # back to its related managers and must tell the same story.
    (selected,) = incidents_visible(cast.member).filter(pk=story.pk)
    incidents_load([selected], cast.member)
    plain = Incident.objects.get(pk=story.pk)

    assert not hasattr(plain, "loaded_updates")
    assert [line.kind for line in incident_timeline(plain)] == ORDER
    assert incident_timeline(plain) == incident_timeline(selected)
    for relation in ("updates", "notes", "activities"):
        assert loaded(plain, relation) == loaded(selected, relation), relation
    assert [note.text for note in loaded(selected, "notes")] == ["Paged Bob."]
    # Which declared endpoints a user may see, only the selector knows: no fallback.
    with pytest.raises(LookupError):
        loaded(plain, "endpoints")


def test_the_list_answers_each_incident_its_own_updates_and_notes(api, cast, story, endpoint):
    other = Incident.objects.create(endpoint=endpoint, started_at=T0 + timedelta(hours=1))
    with at(70):
        incident_note_add(incident=other, author=cast.owner, text="Second one.")

    rows = {
        row["id"]: row
        for row in api.as_user(cast.member).get("/api/v1/incidents").json()["results"]
    }

    assert [note["text"] for note in rows[str(story.pk)]["notes"]] == ["Paged Bob."]
    assert [update["status"] for update in rows[str(story.pk)]["updates"]] == ["identified"]
    assert [note["text"] for note in rows[str(other.pk)]["notes"]] == ["Second one."]
    assert rows[str(other.pk)]["updates"] == []
    assert [line["kind"] for line in rows[str(other.pk)]["timeline"]] == ["opened", "note"]
    assert (
        rows[str(story.pk)]["endpoints"] == rows[str(other.pk)]["endpoints"] == [str(endpoint.pk)]
    )
