"""Acknowledging incidents over the API, `POST /incidents/{id}/acknowledge`: every member who
sees an incident may (a key needs `admin`), once (again: the same acknowledgement, nothing
changed), never a resolved one; the incident answers who, when and how, and its timeline."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from accounts.models import Role
from monitoring.acknowledgement import incident_acknowledge
from monitoring.incidents import incident_declare, incident_note_add, incident_update_post
from monitoring.models import ActivityKind, Incident, IncidentActivity
from tests.helpers import assert_problem

URL = "/api/v1/incidents"
T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def endpoint(cast, make_endpoint):
    return make_endpoint(cast.project, name="Checkout API")


@pytest.fixture
def incident(endpoint):
    """An open automatic incident, as the checks open it."""
    return Incident.objects.create(endpoint=endpoint, started_at=T0, cause="HTTP 503")


def ack(api, incident_id):
    return api.post(f"{URL}/{incident_id}/acknowledge")


def acknowledgements(incident):
    return IncidentActivity.objects.filter(incident=incident, kind=ActivityKind.ACKNOWLEDGED)


def test_a_member_acknowledges_an_incident_it_sees(api, cast, incident):
    with time_machine.travel(T0 + timedelta(minutes=3), tick=False):
        response = ack(api.as_user(cast.member), incident.pk)

    assert response.status_code == 200, response.content
    data = response.json()
    assert data["acknowledged_at"] == "2030-01-01T12:03:00Z"
    assert data["acknowledged_by"] == {"id": str(cast.member.pk), "email": "member@acme.test"}
    assert data["acknowledged_via"] == "api"
    line = acknowledgements(incident).get()
    assert (line.actor, line.announced_at) == (cast.member, None)  # the outbox row
    assert line.text == "Acknowledged by member@acme.test by API"
    assert [e["kind"] for e in data["timeline"]] == ["opened", "acknowledged"]


def test_a_second_acknowledge_answers_the_first_and_changes_nothing(api, cast, incident):
    first = ack(api.as_user(cast.member), incident.pk).json()

    again = ack(api.as_user(cast.admin), incident.pk)

    assert again.status_code == 200
    assert again.json()["acknowledged_at"] == first["acknowledged_at"]
    assert again.json()["acknowledged_by"]["email"] == "member@acme.test"
    assert acknowledgements(incident).count() == 1


def test_an_unacknowledged_incident_answers_nulls(api, cast, incident):
    data = api.as_user(cast.member).get(f"{URL}/{incident.pk}").json()

    assert data["acknowledged_at"] is None
    assert data["acknowledged_by"] is None
    assert data["acknowledged_via"] is None


def test_a_resolved_incident_cannot_be_acknowledged(api, cast, incident):
    Incident.objects.filter(pk=incident.pk).update(resolved_at=T0 + timedelta(minutes=5))

    assert_problem(ack(api.as_user(cast.owner), incident.pk), 409, "incident_resolved")

    incident.refresh_from_db()
    assert incident.acknowledged_at is None
    assert not acknowledgements(incident).exists()


def test_one_acknowledged_before_it_resolved_answers_that_acknowledgement(api, cast, incident):
    incident_acknowledge(incident=incident, by=cast.admin, via="page")
    Incident.objects.filter(pk=incident.pk).update(resolved_at=T0 + timedelta(minutes=5))

    response = ack(api.as_user(cast.owner), incident.pk)

    assert response.status_code == 200
    assert response.json()["acknowledged_via"] == "page"
    assert response.json()["acknowledged_by"]["email"] == "admin@acme.test"


def test_a_declared_incident_may_be_acknowledged(api, cast, endpoint):
    declared = incident_declare(
        organization=cast.org,
        author=cast.owner,
        title="Payments fail",
        endpoints=[endpoint],
        impact="major_outage",
    )

    response = ack(api.as_user(cast.member), declared.pk)

    assert response.status_code == 200
    assert response.json()["acknowledged_via"] == "api"


def test_no_credential_is_a_401(api, incident):
    assert_problem(ack(api, incident.pk), 401, "not_authenticated")
    assert not acknowledgements(incident).exists()


def test_a_key_without_admin_scope_is_refused(api, cast, make_key, incident):
    key = make_key(cast.owner, "incident:read", "endpoint:read")

    assert_problem(ack(api.with_key(key), incident.pk), 403, "insufficient_scope")
    assert not acknowledgements(incident).exists()


def test_an_admin_scoped_key_acknowledges_as_its_creator(api, cast, make_key, incident):
    key = make_key(cast.member, "admin")

    response = ack(api.with_key(key), incident.pk)

    assert response.status_code == 200
    assert response.json()["acknowledged_by"]["email"] == "member@acme.test"


def test_another_organizations_incident_is_a_404(api, cast, incident):
    assert_problem(ack(api.as_user(cast.outsider), incident.pk), 404, "not_found")
    assert not acknowledgements(incident).exists()


def test_a_member_outside_the_project_gets_a_404(api, cast, make_user, incident):
    stranger = make_user(cast.org, "stranger@acme.test", Role.MEMBER)  # no project

    assert_problem(ack(api.as_user(stranger), incident.pk), 404, "not_found")


def test_an_unknown_id_is_a_404(api, cast):
    assert_problem(ack(api.as_user(cast.owner), "nope"), 404, "not_found")


def test_get_is_not_allowed(api, cast, incident):
    response = api.as_user(cast.owner).get(f"{URL}/{incident.pk}/acknowledge")

    assert_problem(response, 405, "method_not_allowed")


# --- Query counts -------------------------------------------------------------------------------


def _busy(cast, endpoint, index):
    """An incident with an update, a note, an acknowledgement and delivery lines."""
    incident = incident_declare(
        organization=cast.org,
        author=cast.owner,
        title=f"Outage {index}",
        endpoints=[endpoint],
        impact="major_outage",
        message="Looking.",
    )
    incident_update_post(incident=incident, author=cast.admin, status="identified", message="x")
    incident_note_add(incident=incident, author=cast.admin, text="Paged Bob.")
    incident_acknowledge(incident=incident, by=cast.member, via="api")
    for kind in (ActivityKind.DELIVERED, ActivityKind.DELIVERY_FAILED):
        IncidentActivity.objects.create(incident=incident, kind=kind, text=f"Webhook: {kind}")
    return incident


def test_one_incident_is_read_in_a_fixed_number_of_queries(
    api, cast, endpoint, django_assert_max_num_queries
):
    incident = _busy(cast, endpoint, 0)
    api.as_user(cast.member)

    with django_assert_max_num_queries(8):
        response = api.get(f"{URL}/{incident.pk}")

    assert len(response.json()["timeline"]) == 7


def test_the_list_is_read_in_queries_that_do_not_grow_with_incidents(
    api, cast, endpoint, django_assert_max_num_queries
):
    for index in range(6):
        _busy(cast, endpoint, index)
    api.as_user(cast.member)

    with django_assert_max_num_queries(9):
        response = api.get(URL)

    assert len(response.json()["results"]) == 6
    assert all(len(i["timeline"]) == 7 for i in response.json()["results"])
