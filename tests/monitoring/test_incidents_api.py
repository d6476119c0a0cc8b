"""Incident communication over the API: declaring incidents, posting updates, internal
notes and edits; who may do what, and what each caller sees."""

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from monitoring.incidents import incident_declare, incident_update_post
from monitoring.models import Incident, IncidentKind, IncidentNote, IncidentUpdate
from tests.helpers import assert_problem, iso

URL = "/api/v1/incidents"
FIELDS = {
    "id",
    "kind",
    "title",
    "impact",
    "state",
    "public",
    "endpoint",
    "endpoints",
    "started_at",
    "resolved_at",
    "duration_seconds",
    "cause",
    "updated_at",
    "updates",
    "notes",
    "acknowledged_at",
    "acknowledged_by",
    "acknowledged_via",
    "timeline",
}
UPDATE_FIELDS = {"id", "status", "message", "message_html", "notify_subscribers", "created_at"}
NOTE_FIELDS = {"id", "text", "author", "created_at"}
T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def endpoint(cast, make_endpoint):
    return make_endpoint(cast.project)


@pytest.fixture
def declared(cast, endpoint):
    """A public manual incident of Acme, investigating, with one update."""
    return incident_declare(
        organization=cast.org,
        author=cast.owner,
        title="Checkout is slow",
        endpoints=[endpoint],
        impact="degraded_performance",
        message="Looking into it.",
    )


@pytest.fixture
def automatic(endpoint):
    """An open automatic incident on the endpoint, as the checks open it."""
    return Incident.objects.create(endpoint=endpoint, started_at=T0, cause="HTTP 503")


def body(endpoint, **fields):
    return {
        "title": "Payments fail",
        "endpoints": [str(endpoint.id)],
        "impact": "major_outage",
        "message": "We are **investigating** failed payments.",
        "public": True,
        **fields,
    }


# --- Declaring ----------------------------------------------------------------------------------


def test_an_owner_declares_an_incident(api, cast, endpoint):
    response = api.as_user(cast.owner).post(URL, body(endpoint))

    assert response.status_code == 201, response.content
    data = response.json()
    assert set(data) == FIELDS
    assert data["kind"] == "manual"
    assert (data["title"], data["impact"], data["state"]) == (
        "Payments fail",
        "major_outage",
        "investigating",
    )
    assert data["public"] is True
    assert data["endpoint"] is None
    assert data["endpoints"] == [str(endpoint.id)]
    assert data["resolved_at"] is None
    assert data["notes"] == []
    [update] = data["updates"]
    assert set(update) == UPDATE_FIELDS
    assert update["status"] == "investigating"
    assert update["message"] == "We are **investigating** failed payments."
    assert update["message_html"] == "<p>We are <strong>investigating</strong> failed payments.</p>"
    assert update["notify_subscribers"] is True
    incident = Incident.objects.get()
    assert incident.organization == cast.org
    assert incident.kind == IncidentKind.MANUAL
    assert list(incident.endpoints.all()) == [endpoint]
    assert incident.updates.get().author == cast.owner


def test_a_declaration_without_a_message_has_no_update(api, cast, endpoint):
    fields = body(endpoint)
    del fields["message"]

    data = api.as_user(cast.admin).post(URL, fields).json()

    assert data["updates"] == []
    assert data["public"] is True


def test_a_declaration_may_be_kept_off_status_pages(api, cast, endpoint):
    data = api.as_user(cast.owner).post(URL, body(endpoint, public=False)).json()

    assert data["public"] is False
    # A private incident's updates never reach subscribers (the flag is stored off).
    assert data["updates"][0]["notify_subscribers"] is False


def test_a_declaration_needs_endpoints_the_caller_can_see(api, cast, make_endpoint):
    foreign = make_endpoint(cast.other_project)

    response = api.as_user(cast.owner).post(URL, body(foreign))

    errors = assert_problem(response, 400, "validation_error")["errors"]
    assert any(key.startswith("endpoints") for key in errors), errors
    assert str(foreign.id) in str(errors)
    assert not Incident.objects.exists()


def test_every_bad_field_of_a_declaration_is_named_at_once(api, cast):
    response = api.as_user(cast.owner).post(
        URL,
        {"title": "  ", "endpoints": "all", "impact": "total", "message": 5, "public": "maybe"},
        format="json",
    )

    errors = assert_problem(response, 400, "validation_error")["errors"]
    assert {"title", "endpoints", "impact", "message", "public"} <= set(errors), errors
    assert not Incident.objects.exists()


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"title": "x" * 201}, "title"),
        ({"title": "two\nlines"}, "title"),
        ({"endpoints": []}, "endpoints"),
        ({"endpoints": ["not-a-uuid"]}, "endpoints"),
        ({"endpoints": [str(i) for i in range(101)]}, "endpoints"),
        ({"impact": "operational"}, "impact"),
        ({"message": "x" * 10_001}, "message"),
        ({"notify_subscribers": "loud"}, "notify_subscribers"),
        ({"public": 0}, "public"),
        ({"public": "true"}, "public"),
        ({"title": 5}, "title"),
    ],
)
def test_bad_declarations_are_a_400_and_write_nothing(api, cast, endpoint, fields, field):
    response = api.as_user(cast.owner).post(URL, body(endpoint, **fields), format="json")

    errors = assert_problem(response, 400, "validation_error")["errors"]
    assert any(key == field or key.startswith(f"{field}.") for key in errors), errors
    assert not Incident.objects.exists()


@pytest.mark.parametrize("missing", ["title", "endpoints", "impact"])
def test_a_declaration_needs_title_endpoints_and_impact(api, cast, endpoint, missing):
    fields = body(endpoint)
    del fields[missing]

    errors = assert_problem(api.as_user(cast.owner).post(URL, fields), 400, "validation_error")

    assert missing in errors["errors"]


# --- Updates ------------------------------------------------------------------------------------


def test_an_update_sets_the_state_and_is_rendered(api, cast, declared):
    before = declared.updated_at

    response = api.as_user(cast.admin).post(
        f"{URL}/{declared.id}/updates",
        {"status": "identified", "message": "A bad deploy:\n\n- rolled back\n- watching"},
    )

    assert response.status_code == 201, response.content
    data = response.json()
    assert set(data) == UPDATE_FIELDS
    assert data["status"] == "identified"
    assert data["message_html"] == (
        "<p>A bad deploy:</p>\n<ul>\n<li>rolled back</li>\n<li>watching</li>\n</ul>"
    )
    assert data["notify_subscribers"] is True
    declared.refresh_from_db()
    assert declared.state == "identified"
    assert declared.updated_at > before
    assert declared.resolved_at is None
    assert IncidentUpdate.objects.get(pk=data["id"]).author == cast.admin


def test_updates_are_listed_oldest_first_with_the_incident(api, cast, declared):
    api.as_user(cast.owner)
    api.post(f"{URL}/{declared.id}/updates", {"status": "monitoring", "message": "Fixed."})

    data = api.get(f"{URL}/{declared.id}").json()

    assert [u["status"] for u in data["updates"]] == ["investigating", "monitoring"]
    assert data["state"] == "monitoring"


def test_an_update_may_skip_the_subscribers(api, cast, declared):
    response = api.as_user(cast.owner).post(
        f"{URL}/{declared.id}/updates",
        {"status": "identified", "message": "Internal detail.", "notify_subscribers": False},
        format="json",
    )

    assert response.json()["notify_subscribers"] is False
    assert IncidentUpdate.objects.get(pk=response.json()["id"]).notify_subscribers is False


def test_resolved_closes_a_manual_incident(api, cast, declared):
    response = api.as_user(cast.owner).post(
        f"{URL}/{declared.id}/updates", {"status": "resolved", "message": "All good."}
    )

    assert response.status_code == 201
    data = api.get(f"{URL}/{declared.id}").json()
    assert data["state"] == "resolved"
    assert data["resolved_at"] is not None
    assert data["duration_seconds"] >= 0
    assert api.get(URL, {"state": "open"}).json()["count"] == 0


def test_a_resolved_incident_takes_resolved_updates_only(api, cast, declared):
    api.as_user(cast.owner)
    api.post(f"{URL}/{declared.id}/updates", {"status": "resolved", "message": "Fixed."})
    declared.refresh_from_db()
    resolved_at = declared.resolved_at

    postmortem = api.post(
        f"{URL}/{declared.id}/updates", {"status": "resolved", "message": "Postmortem: ..."}
    )
    reopen = api.post(
        f"{URL}/{declared.id}/updates", {"status": "investigating", "message": "Again?"}
    )

    assert postmortem.status_code == 201
    assert "status" in assert_problem(reopen, 400, "validation_error")["errors"]
    declared.refresh_from_db()
    assert (declared.state, declared.resolved_at) == ("resolved", resolved_at)
    assert declared.updates.count() == 3


def test_an_open_automatic_incident_cannot_be_resolved_by_hand(api, cast, automatic):
    response = api.as_user(cast.owner).post(
        f"{URL}/{automatic.id}/updates", {"status": "resolved", "message": "Fixed, we think."}
    )

    errors = assert_problem(response, 400, "validation_error")["errors"]
    assert "monitoring" in errors["status"][0]
    automatic.refresh_from_db()
    assert automatic.resolved_at is None
    assert automatic.state == "investigating"
    assert not automatic.updates.exists()


def test_an_automatic_incident_takes_other_states(api, cast, automatic):
    api.as_user(cast.owner)

    for status in ("identified", "monitoring"):
        response = api.post(f"{URL}/{automatic.id}/updates", {"status": status, "message": "x"})
        assert response.status_code == 201, response.content

    automatic.refresh_from_db()
    assert automatic.state == "monitoring"
    assert automatic.resolved_at is None


def test_every_bad_field_of_an_update_is_named_at_once(api, cast, declared):
    response = api.as_user(cast.owner).post(
        f"{URL}/{declared.id}/updates",
        {"status": "fixed", "message": "   ", "notify_subscribers": "perhaps"},
        format="json",
    )

    errors = assert_problem(response, 400, "validation_error")["errors"]
    assert {"status", "message", "notify_subscribers"} <= set(errors), errors
    assert declared.updates.count() == 1


def test_the_status_rule_is_named_beside_other_bad_fields(api, cast, automatic):
    response = api.as_user(cast.owner).post(
        f"{URL}/{automatic.id}/updates", {"status": "resolved", "message": ""}
    )

    assert {"status", "message"} <= set(assert_problem(response, 400, "validation_error")["errors"])


def test_a_private_incidents_updates_never_notify(api, cast, declared):
    api.as_user(cast.owner).patch(f"{URL}/{declared.id}", {"public": False}, format="json")

    response = api.post(f"{URL}/{declared.id}/updates", {"status": "identified", "message": "x"})

    assert response.json()["notify_subscribers"] is False


def test_update_markdown_is_stored_inert(api, cast, declared):
    message = '<script>alert(1)</script> [x](javascript:alert(1)) <img src=x onerror="a()">'

    data = api.as_user(cast.owner).post(
        f"{URL}/{declared.id}/updates", {"status": "identified", "message": message}
    )

    html = data.json()["message_html"]
    assert "<script" not in html
    assert "<img" not in html
    assert 'href="javascript' not in html
    assert data.json()["message"] == message


# --- Notes --------------------------------------------------------------------------------------


def test_an_admin_adds_an_internal_note(api, cast, declared):
    response = api.as_user(cast.admin).post(f"{URL}/{declared.id}/notes", {"text": "Paged Bob."})

    assert response.status_code == 201, response.content
    data = response.json()
    assert set(data) == NOTE_FIELDS
    assert data["text"] == "Paged Bob."
    assert data["author"] == {"id": str(cast.admin.id), "email": cast.admin.email}
    notes = api.as_user(cast.member).get(f"{URL}/{declared.id}").json()["notes"]
    assert [n["text"] for n in notes] == ["Paged Bob."]


def test_a_note_does_not_change_the_incident(api, cast, declared):
    before = (declared.state, declared.updated_at)

    api.as_user(cast.owner).post(f"{URL}/{declared.id}/notes", {"text": "Nothing to say."})

    declared.refresh_from_db()
    assert (declared.state, declared.updated_at) == before
    assert declared.updates.count() == 1


def test_a_note_keeps_its_text_when_its_author_is_gone(api, cast, declared):
    api.as_user(cast.admin).post(f"{URL}/{declared.id}/notes", {"text": "Mine."})
    cast.admin.delete()

    notes = api.as_user(cast.owner).get(f"{URL}/{declared.id}").json()["notes"]

    assert notes[0]["author"] is None
    assert notes[0]["text"] == "Mine."


@pytest.mark.parametrize("text", ["", "  \n ", "x" * 10_001, 7, None])
def test_a_bad_note_is_a_400(api, cast, declared, text):
    response = api.as_user(cast.owner).post(
        f"{URL}/{declared.id}/notes", {"text": text}, format="json"
    )

    assert "text" in assert_problem(response, 400, "validation_error")["errors"]
    assert not IncidentNote.objects.exists()


# --- Editing ------------------------------------------------------------------------------------


def test_an_automatic_incident_is_titled_after_its_endpoint(api, cast, endpoint, automatic):
    data = api.as_user(cast.member).get(f"{URL}/{automatic.id}").json()

    assert data["kind"] == "automatic"
    assert data["title"] == "Website is down"
    assert data["endpoint"] == str(endpoint.id)
    assert data["endpoints"] == [str(endpoint.id)]
    assert data["public"] is True
    assert data["started_at"] == iso(T0)


def test_the_checks_open_public_automatic_incidents(api, cast, endpoint, record):
    record(endpoint, [(T0, False, 5.0), (T0 + timedelta(minutes=1), False, 5.0)])

    [data] = api.as_user(cast.owner).get(URL).json()["results"]

    assert (data["kind"], data["public"], data["state"]) == ("automatic", True, "investigating")
    assert data["title"] == "Website is down"


def test_patch_changes_title_public_and_impact(api, cast, automatic):
    before = automatic.updated_at

    response = api.as_user(cast.owner).patch(
        f"{URL}/{automatic.id}",
        {"title": "Checkout API outage", "public": False, "impact": "partial_outage"},
        format="json",
    )

    assert response.status_code == 200, response.content
    data = response.json()
    assert (data["title"], data["public"], data["impact"]) == (
        "Checkout API outage",
        False,
        "partial_outage",
    )
    automatic.refresh_from_db()
    assert (automatic.title, automatic.public) == ("Checkout API outage", False)
    assert automatic.updated_at > before


def test_patch_changes_only_what_is_sent(api, cast, declared):
    response = api.as_user(cast.owner).patch(
        f"{URL}/{declared.id}", {"public": False}, format="json"
    )

    data = response.json()
    assert (data["title"], data["impact"], data["public"]) == (
        "Checkout is slow",
        "degraded_performance",
        False,
    )


def test_every_bad_field_of_a_patch_is_named_at_once(api, cast, declared):
    response = api.as_user(cast.owner).patch(
        f"{URL}/{declared.id}", {"title": "", "public": "no way", "impact": "none"}, format="json"
    )

    errors = assert_problem(response, 400, "validation_error")["errors"]
    assert {"title", "public", "impact"} <= set(errors)
    declared.refresh_from_db()
    assert (declared.title, declared.public) == ("Checkout is slow", True)


def test_patch_takes_json_booleans_only(api, cast, declared):
    response = api.as_user(cast.owner).patch(f"{URL}/{declared.id}", {"public": 0}, format="json")

    assert "public" in assert_problem(response, 400, "validation_error")["errors"]
    declared.refresh_from_db()
    assert declared.public is True


def test_incidents_cannot_be_put_or_deleted(api, cast, declared):
    api.as_user(cast.owner)

    assert_problem(api.delete(f"{URL}/{declared.id}"), 405, "method_not_allowed")
    assert_problem(api.put(f"{URL}/{declared.id}", {}), 405, "method_not_allowed")
    assert Incident.objects.filter(pk=declared.pk).exists()


# --- Who may do what ----------------------------------------------------------------------------


def writes(incident, endpoint):
    return [
        ("post", URL, body(endpoint)),
        ("post", f"{URL}/{incident.id}/updates", {"status": "identified", "message": "x"}),
        ("post", f"{URL}/{incident.id}/notes", {"text": "x"}),
        ("patch", f"{URL}/{incident.id}", {"public": False}),
    ]


def test_no_credential_is_a_401(api, cast, declared, endpoint):
    api.as_user(None)

    for path in (URL, f"{URL}/{declared.id}"):
        assert_problem(api.get(path), 401, "not_authenticated")
    for method, path, data in writes(declared, endpoint):
        assert_problem(getattr(api, method)(path, data, format="json"), 401, "not_authenticated")


def test_members_read_but_cannot_write(api, cast, declared, endpoint):
    api.as_user(cast.member)

    assert api.get(f"{URL}/{declared.id}").status_code == 200
    for method, path, data in writes(declared, endpoint):
        response = getattr(api, method)(path, data, format="json")
        assert_problem(response, 403, "permission_denied")
    declared.refresh_from_db()
    assert (Incident.objects.count(), declared.public, declared.state) == (1, True, "investigating")
    assert declared.updates.count() == 1
    assert not IncidentNote.objects.exists()


@pytest.mark.parametrize("scope", ["incident:read", "endpoint:create", "endpoint:read"])
def test_keys_need_the_admin_scope_to_write(api, cast, make_key, declared, endpoint, scope):
    api.with_key(make_key(cast.owner, scope))

    for method, path, data in writes(declared, endpoint):
        response = getattr(api, method)(path, data, format="json")
        assert_problem(response, 403, "insufficient_scope")
    assert declared.updates.count() == 1


def test_an_incident_read_key_reads_updates_and_notes(api, cast, make_key, declared):
    api.as_user(cast.owner).post(f"{URL}/{declared.id}/notes", {"text": "Paged."})

    data = api.with_key(make_key(cast.owner, "incident:read")).get(f"{URL}/{declared.id}").json()

    assert [u["status"] for u in data["updates"]] == ["investigating"]
    assert [n["text"] for n in data["notes"]] == ["Paged."]


def test_an_admin_key_writes(api, cast, make_key, declared, endpoint):
    api.with_key(make_key(cast.admin, "admin"))

    statuses = [
        getattr(api, method)(path, data, format="json").status_code
        for method, path, data in writes(declared, endpoint)
    ]

    assert statuses == [201, 201, 201, 200]
    assert Incident.objects.get(title="Payments fail").updates.get().author == cast.admin


def test_another_organizations_incident_is_a_404_and_stays_as_it_is(
    api, cast, make_endpoint, declared
):
    foreign_endpoint = make_endpoint(cast.other_project)
    foreign = incident_declare(
        organization=cast.other_org,
        author=cast.outsider,
        title="Globex down",
        endpoints=[foreign_endpoint],
        impact="major_outage",
    )
    api.as_user(cast.owner)

    assert_problem(api.get(f"{URL}/{foreign.id}"), 404, "not_found")
    for method, path, data in writes(foreign, foreign_endpoint)[1:]:
        assert_problem(getattr(api, method)(path, data, format="json"), 404, "not_found")
    assert [i["id"] for i in api.get(URL).json()["results"]] == [str(declared.id)]
    foreign.refresh_from_db()
    assert (foreign.public, foreign.state) == (True, "investigating")
    assert not foreign.updates.exists()
    assert not foreign.notes.exists()


def test_an_unknown_or_malformed_id_is_a_404(api, cast):
    api.as_user(cast.owner)

    assert_problem(api.get(f"{URL}/00000000-0000-0000-0000-000000000000"), 404, "not_found")
    assert_problem(api.post(f"{URL}/nope/notes", {"text": "x"}), 404, "not_found")


def test_members_see_declared_incidents_but_only_the_endpoints_they_may_see(
    api, cast, make_endpoint, endpoint
):
    hidden = make_endpoint(cast.org.projects.create(name="Hidden"), name="Billing")
    incident = incident_declare(
        organization=cast.org,
        author=cast.owner,
        title="Everything is slow",
        endpoints=[endpoint, hidden],
        impact="degraded_performance",
    )
    hidden_automatic = Incident.objects.create(endpoint=hidden, started_at=T0)

    member = api.as_user(cast.member)
    listed = member.get(URL).json()["results"]
    owner_view = api.as_user(cast.owner).get(f"{URL}/{incident.id}").json()

    assert [i["id"] for i in listed] == [str(incident.id)]
    assert listed[0]["endpoints"] == [str(endpoint.id)]
    assert set(owner_view["endpoints"]) == {str(endpoint.id), str(hidden.id)}
    assert_problem(api.as_user(cast.member).get(f"{URL}/{hidden_automatic.id}"), 404, "not_found")


def test_filters_find_declared_incidents_by_endpoint_project_and_kind(
    api, cast, make_endpoint, endpoint, automatic
):
    other = make_endpoint(cast.org.projects.create(name="Second"), name="Other")
    incident = incident_declare(
        organization=cast.org,
        author=cast.owner,
        title="Other is slow",
        endpoints=[other],
        impact="degraded_performance",
    )
    api.as_user(cast.owner)

    def ids(**query):
        return {i["id"] for i in api.get(URL, query).json()["results"]}

    assert ids(kind="manual") == {str(incident.id)}
    assert ids(kind="automatic") == {str(automatic.id)}
    assert ids(endpoint=str(other.id)) == {str(incident.id)}
    assert ids(endpoint=str(endpoint.id)) == {str(automatic.id)}
    assert ids(project=str(other.project_id)) == {str(incident.id)}
    assert ids(project=str(cast.project.id)) == {str(automatic.id)}
    assert_problem(api.get(URL, {"kind": "scheduled"}), 400, "validation_error")


def test_the_list_reads_a_page_in_a_fixed_number_of_queries(
    api, cast, make_endpoint, django_assert_max_num_queries
):
    def add(n):
        for i in range(n):
            endpoint = make_endpoint(cast.project, name=f"E{i}-{n}")
            incident = incident_declare(
                organization=cast.org,
                author=cast.owner,
                title=f"I{i}",
                endpoints=[endpoint],
                impact="major_outage",
                message="m",
            )
            incident_update_post(
                incident=incident, author=cast.owner, status="identified", message="x"
            )
            IncidentNote.objects.create(incident=incident, author=cast.owner, text="n")
            Incident.objects.create(endpoint=endpoint, started_at=timezone.now())

    api.as_user(cast.member)
    add(2)
    with django_assert_max_num_queries(10) as few:
        api.get(URL)
    add(10)
    with django_assert_max_num_queries(len(few.captured_queries)):
        response = api.get(URL)

    assert response.json()["count"] == 24


def test_pausing_an_endpoint_resolves_its_incident_in_every_field(api, cast, automatic):
    api.as_user(cast.owner).post(f"/api/v1/endpoints/{automatic.endpoint_id}/pause")

    automatic.refresh_from_db()
    assert automatic.resolved_at is not None
    assert automatic.state == "resolved"
    assert automatic.updated_at == automatic.resolved_at


def test_the_direct_representation_equals_drfs_generic_one(cast, make_endpoint, declared):
    """Every kind of line and field: a declared incident with updates, a note and an author
    gone; an automatic one acknowledged, with a delivery's line and a microsecond-less time;
    an open one with no cause."""
    from rest_framework import serializers
    from rest_framework.renderers import JSONRenderer

    from monitoring.acknowledgement import incident_acknowledge
    from monitoring.api.incident_serializers import IncidentSerializer
    from monitoring.incidents import incident_note_add
    from monitoring.models import IncidentActivity
    from monitoring.selectors import incidents_load, incidents_visible

    other = make_endpoint(cast.project, name="other")
    incident_update_post(
        incident=declared, author=cast.admin, status="identified", message="*Found* it"
    )
    incident_note_add(incident=declared, author=cast.admin, text="Gone soon.")
    incident_note_add(incident=declared, author=cast.owner, text="Still here.")
    cast.admin.delete()
    measured = Incident.objects.create(
        endpoint=other,
        started_at=T0,
        resolved_at=T0 + timedelta(minutes=3, microseconds=250),
        cause="HTTP 503",
    )
    Incident.objects.filter(pk=measured.pk).update(resolved_at=None)
    incident_acknowledge(incident=Incident.objects.get(pk=measured.pk), by=cast.owner, via="api")
    Incident.objects.filter(pk=measured.pk).update(resolved_at=T0 + timedelta(minutes=3))
    IncidentActivity.objects.create(
        incident=measured,
        kind="delivered",
        at=T0 + timedelta(seconds=30),
        text="Slack #ops: delivered",
        detail={"channel": "c1", "event": "incident.opened", "nested": {"n": [1, 2.5, None]}},
    )
    Incident.objects.create(endpoint=make_endpoint(cast.project, name="third"), started_at=T0)
    render = JSONRenderer().render

    incidents = list(incidents_visible(cast.owner))
    incidents_load(incidents, cast.owner)
    assert len(incidents) == 3
    for incident in incidents:
        serializer = IncidentSerializer()
        generic = serializers.ModelSerializer.to_representation(serializer, incident)
        assert render(serializer.to_representation(incident)) == render(generic)
    lines = {line["kind"] for i in incidents for line in IncidentSerializer(i).data["timeline"]}
    assert lines >= {"declared", "update", "note", "opened", "acknowledged", "delivered"}
    assert lines >= {"resolved"}


def test_a_page_reads_only_the_lines_some_incident_on_it_has(api, cast, endpoint, declared):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from monitoring.models import IncidentActivity

    quiet = Incident.objects.create(
        endpoint=endpoint, started_at=T0, resolved_at=T0 + timedelta(minutes=5)
    )
    notified = Incident.objects.create(endpoint=endpoint, started_at=T0 + timedelta(hours=1))
    IncidentActivity.objects.create(
        incident=notified, kind="delivered", at=T0 + timedelta(hours=2), text="Mail: delivered"
    )
    api.as_user(cast.owner)

    def read(path):
        with CaptureQueriesContext(connection) as captured:
            answer = api.get(path).json()
        sql = [q["sql"] for q in captured.captured_queries]
        lines = ("incidentupdate", "incidentnote", "incidentactivity")
        reads = {t: sum(q.startswith(f'SELECT "monitoring_{t}".') for q in sql) for t in lines}
        reads["incident_endpoints"] = sum('"monitoring_incident_endpoints"' in q for q in sql)
        return answer, reads

    page, reads = read(URL)
    by_id = {row["id"]: row for row in page["results"]}
    assert reads == {
        "incidentupdate": 1,
        "incidentnote": 0,
        "incidentactivity": 1,
        "incident_endpoints": 1,
    }
    assert [line["kind"] for line in by_id[str(quiet.id)]["timeline"]] == ["opened", "resolved"]
    assert [line["kind"] for line in by_id[str(notified.id)]["timeline"]] == [
        "opened",
        "delivered",
    ]
    assert by_id[str(notified.id)]["updates"] == []
    assert [u["message"] for u in by_id[str(declared.id)]["updates"]] == ["Looking into it."]
    assert by_id[str(declared.id)]["endpoints"] == [str(endpoint.id)]

    one, reads = read(f"{URL}/{quiet.id}")
    assert set(reads.values()) == {0}
    assert one == by_id[str(quiet.id)]
