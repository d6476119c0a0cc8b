"""Maintenance windows over the API: CRUD, one-off and weekly windows, whether one is in
effect now and when it next starts, validation, and who reads and writes what."""

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine

from accounts.models import Project
from alerts.models import MaintenanceWindow
from tests.helpers import assert_problem, queries_of_get

URL = "/api/v1/maintenance-windows"
FIELDS = {
    "id",
    "name",
    "starts_at",
    "ends_at",
    "recurrence",
    "rrule",
    "timezone",
    "projects",
    "endpoints",
    "active",
    "next_start",
    "created_at",
}
# Wednesday 10:00 to 12:00 UTC.
START = datetime(2030, 5, 1, 10, 0, tzinfo=UTC)
END = datetime(2030, 5, 1, 12, 0, tzinfo=UTC)
BODY = {"name": "Upgrade", "starts_at": "2030-05-01T10:00:00Z", "ends_at": "2030-05-01T12:00:00Z"}


def make_window(cast, **fields: Any) -> MaintenanceWindow:
    fields.setdefault("starts_at", START)
    fields.setdefault("ends_at", END)
    projects, endpoints = fields.pop("projects", []), fields.pop("endpoints", [])
    window = MaintenanceWindow.objects.create(organization=cast.org, **fields)
    window.projects.set(projects)
    window.endpoints.set(endpoints)
    return window


def at(moment: datetime) -> Any:
    return time_machine.travel(moment, tick=False)


# --- Create, read, change, delete -------------------------------------------------------------


def test_create_a_one_off_window(api, cast):
    with at(START - timedelta(days=1)):
        response = api.as_user(cast.owner).post(URL, BODY)

    assert response.status_code == 201, response.content
    data = response.json()
    assert set(data) == FIELDS
    assert data["starts_at"] == "2030-05-01T10:00:00Z"
    assert data["ends_at"] == "2030-05-01T12:00:00Z"
    assert (data["recurrence"], data["projects"], data["endpoints"]) == (None, [], [])
    assert (data["active"], data["next_start"]) == (False, "2030-05-01T10:00:00Z")
    window = MaintenanceWindow.objects.get()
    assert (window.organization, window.recurrence, window.name) == (cast.org, "", "Upgrade")


def test_create_a_weekly_window_for_some_projects_and_endpoints(api, cast, make_endpoint):
    endpoint = make_endpoint(cast.project)
    body = {
        **BODY,
        "recurrence": "weekly",
        "projects": [str(cast.project.id)],
        "endpoints": [str(endpoint.id)],
    }

    data = api.as_user(cast.admin).post(URL, body).json()

    assert data["recurrence"] == "weekly"
    assert (data["projects"], data["endpoints"]) == ([str(cast.project.id)], [str(endpoint.id)])
    window = MaintenanceWindow.objects.get()
    assert window.recurrence == "weekly"
    assert list(window.endpoints.all()) == [endpoint]


def test_a_name_is_optional(api, cast):
    body = {k: v for k, v in BODY.items() if k != "name"}

    data = api.as_user(cast.owner).post(URL, body).json()

    assert data["name"] == ""


def test_offsets_are_kept_as_the_same_instant_in_utc(api, cast):
    body = {**BODY, "starts_at": "2030-05-01T12:00:00+02:00", "ends_at": "2030-05-01T09:00-03:00"}

    data = api.as_user(cast.owner).post(URL, body).json()

    assert (data["starts_at"], data["ends_at"]) == ("2030-05-01T10:00:00Z", "2030-05-01T12:00:00Z")


@pytest.mark.parametrize(
    ("now", "active", "next_start"),
    [
        (START - timedelta(minutes=1), False, "2030-05-01T10:00:00Z"),
        (START, True, "2030-05-01T10:00:00Z"),
        (START + timedelta(hours=1), True, None),
        (END, False, None),
    ],
)
def test_a_one_off_window_is_active_while_it_lasts(api, cast, now, active, next_start):
    window = make_window(cast)

    with at(now):
        data = api.as_user(cast.owner).get(f"{URL}/{window.id}").json()

    assert (data["active"], data["next_start"]) == (active, next_start)


@pytest.mark.parametrize(
    ("now", "active", "next_start"),
    [
        (START - timedelta(days=1), False, "2030-05-01T10:00:00Z"),
        (START + timedelta(hours=1), True, "2030-05-08T10:00:00Z"),
        (END + timedelta(days=3), False, "2030-05-08T10:00:00Z"),
        (START + timedelta(weeks=5, hours=1), True, "2030-06-12T10:00:00Z"),
        (START + timedelta(weeks=5), True, "2030-06-05T10:00:00Z"),
    ],
)
def test_a_weekly_window_repeats_every_seven_days(api, cast, now, active, next_start):
    window = make_window(cast, recurrence="weekly")

    with at(now):
        data = api.as_user(cast.owner).get(f"{URL}/{window.id}").json()

    assert (data["active"], data["next_start"]) == (active, next_start)


def test_the_list_filters_by_whether_a_window_is_in_effect(api, cast):
    make_window(cast, name="Now")
    make_window(cast, name="Weekly", recurrence="weekly", starts_at=START - timedelta(weeks=2))
    make_window(cast, name="Later", starts_at=END, ends_at=END + timedelta(hours=1))

    with at(START + timedelta(minutes=30)):
        api.as_user(cast.owner)
        active = [w["name"] for w in api.get(f"{URL}?active=true").json()["results"]]
        inactive = [w["name"] for w in api.get(f"{URL}?active=false").json()["results"]]
        everything = api.get(f"{URL}?active=").json()["count"]
        refused = api.get(f"{URL}?active=yes")

    assert active == ["Weekly", "Now"]
    assert inactive == ["Later"]
    assert everything == 3
    assert "active" in assert_problem(refused, 400, "validation_error")["errors"]


def test_patch_changes_only_what_is_sent(api, cast):
    window = make_window(cast, name="Upgrade", recurrence="weekly", projects=[cast.project])

    data = api.as_user(cast.owner).patch(f"{URL}/{window.id}", {"name": "Patch day"}).json()

    assert data["name"] == "Patch day"
    assert data["recurrence"] == "weekly"
    assert data["projects"] == [str(cast.project.id)]
    window.refresh_from_db()
    assert (window.starts_at, window.ends_at) == (START, END)


def test_null_recurrence_makes_a_window_one_off(api, cast):
    window = make_window(cast, recurrence="weekly")

    data = api.as_user(cast.owner).patch(f"{URL}/{window.id}", {"recurrence": None}).json()

    assert data["recurrence"] is None
    window.refresh_from_db()
    assert window.recurrence == ""


def test_patch_replaces_the_scope(api, cast, make_endpoint):
    endpoint = make_endpoint(cast.project)
    window = make_window(cast, projects=[cast.project])

    data = api.as_user(cast.owner).patch(
        f"{URL}/{window.id}", {"projects": [], "endpoints": [str(endpoint.id)]}
    )

    assert (data.json()["projects"], data.json()["endpoints"]) == ([], [str(endpoint.id)])
    assert list(window.endpoints.all()) == [endpoint]
    assert not window.projects.exists()


def test_delete(api, cast):
    window = make_window(cast)

    assert api.as_user(cast.admin).delete(f"{URL}/{window.id}").status_code == 204
    assert not MaintenanceWindow.objects.exists()


def test_the_list_reads_a_page_in_a_fixed_number_of_queries(api, cast, make_endpoint):
    endpoint = make_endpoint(cast.project)
    api.as_user(cast.owner)

    make_window(cast, projects=[cast.project], endpoints=[endpoint])
    one = queries_of_get(api, URL)
    for n in range(5):
        make_window(cast, name=f"W{n}", projects=[cast.project], endpoints=[endpoint])

    assert queries_of_get(api, URL) == one
    assert one <= 6


# --- Validation -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"ends_at": "2030-05-01T10:00:00Z"}, "ends_at"),
        ({"ends_at": "2030-05-01T09:00:00Z"}, "ends_at"),
        ({"ends_at": "2030-05-08T10:00:00Z", "recurrence": "weekly"}, "ends_at"),
        ({"ends_at": "2030-05-09T10:00:00Z", "recurrence": "weekly"}, "ends_at"),
        ({"starts_at": "2030-05-01T10:00:00"}, "starts_at"),
        ({"ends_at": "2030-05-01T12:00:00"}, "ends_at"),
        ({"starts_at": "2030-05-01"}, "starts_at"),
        ({"starts_at": "tomorrow"}, "starts_at"),
        ({"starts_at": 1893492000}, "starts_at"),
        ({"starts_at": None}, "starts_at"),
        ({"starts_at": "0001-01-01T00:00:00+01:00"}, "starts_at"),
        ({"recurrence": "daily"}, "recurrence"),
        ({"recurrence": ""}, "recurrence"),
        ({"name": "x" * 201}, "name"),
        ({"name": "line\nbreak"}, "name"),
        ({"projects": [str(uuid.uuid4())]}, "projects"),
        ({"endpoints": "all"}, "endpoints"),
    ],
)
def test_bad_input_is_a_400_and_writes_nothing(api, cast, changes, field):
    response = api.as_user(cast.owner).post(URL, {**BODY, **changes})

    errors = assert_problem(response, 400, "validation_error")["errors"]
    assert field in errors, errors
    assert not MaintenanceWindow.objects.exists()


@pytest.mark.parametrize("missing", ["starts_at", "ends_at"])
def test_start_and_end_are_required(api, cast, missing):
    body = {k: v for k, v in BODY.items() if k != missing}

    errors = assert_problem(api.as_user(cast.owner).post(URL, body), 400, "validation_error")

    assert missing in errors["errors"]


def test_a_weekly_window_just_under_seven_days_is_accepted(api, cast):
    body = {**BODY, "ends_at": "2030-05-08T09:59:59Z", "recurrence": "weekly"}

    assert api.as_user(cast.owner).post(URL, body).status_code == 201


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"ends_at": "2030-05-01T09:00:00Z"}, "ends_at"),
        ({"starts_at": "2030-05-01T13:00:00Z"}, "ends_at"),
        ({"recurrence": "weekly", "ends_at": "2030-06-01T00:00:00Z"}, "ends_at"),
        ({"starts_at": "2030-05-01T09:00:00"}, "starts_at"),
    ],
)
def test_a_patch_is_checked_against_the_stored_fields(api, cast, changes, field):
    window = make_window(cast)

    response = api.as_user(cast.owner).patch(f"{URL}/{window.id}", changes)

    assert field in assert_problem(response, 400, "validation_error")["errors"]
    window.refresh_from_db()
    assert (window.starts_at, window.ends_at, window.recurrence) == (START, END, "")


def test_a_long_one_off_window_cannot_become_weekly(api, cast):
    window = make_window(cast, ends_at=START + timedelta(days=10))

    response = api.as_user(cast.owner).patch(f"{URL}/{window.id}", {"recurrence": "weekly"})

    assert "ends_at" in assert_problem(response, 400, "validation_error")["errors"]
    assert MaintenanceWindow.objects.get().recurrence == ""


# --- Credentials, roles and scopes ------------------------------------------------------------


def test_no_credential_is_a_401(api, cast):
    window = make_window(cast)
    for method, path in [
        ("get", URL),
        ("post", URL),
        ("get", f"{URL}/{window.id}"),
        ("patch", f"{URL}/{window.id}"),
        ("delete", f"{URL}/{window.id}"),
    ]:
        assert_problem(getattr(api, method)(path, {}), 401, "not_authenticated")
    assert MaintenanceWindow.objects.count() == 1


def test_members_cannot_write(api, cast):
    window = make_window(cast, name="Upgrade")
    api.as_user(cast.member)

    for response in [
        api.post(URL, BODY),
        api.patch(f"{URL}/{window.id}", {"name": "Mine"}),
        api.delete(f"{URL}/{window.id}"),
    ]:
        assert_problem(response, 403, "permission_denied")
    assert list(MaintenanceWindow.objects.values_list("name", flat=True)) == ["Upgrade"]


def test_members_read_the_windows_for_the_organization_or_their_projects(api, cast, make_endpoint):
    hidden = Project.objects.create(organization=cast.org, name="Payments")
    make_window(cast, name="Whole")
    make_window(cast, name="Mine", endpoints=[make_endpoint(cast.project)])
    theirs = make_window(cast, name="Theirs", projects=[hidden])
    api.as_user(cast.member)

    names = [w["name"] for w in api.get(URL).json()["results"]]

    assert sorted(names) == ["Mine", "Whole"]  # same start: in id order
    response = api.get(f"{URL}/{theirs.id}")
    assert_problem(response, 404, "not_found")
    assert response.content == api.get(f"{URL}/{uuid.uuid4()}").content


@pytest.mark.parametrize("scope", ["endpoint:read", "endpoint:create", "analytics:read"])
def test_keys_need_the_admin_scope_to_read_or_write(api, cast, make_key, scope):
    window = make_window(cast, name="Upgrade")
    api.with_key(make_key(cast.owner, scope))

    for response in [
        api.get(URL),
        api.get(f"{URL}/{window.id}"),
        api.post(URL, BODY),
        api.patch(f"{URL}/{window.id}", {"name": "Keyed"}),
        api.delete(f"{URL}/{window.id}"),
    ]:
        assert_problem(response, 403, "insufficient_scope")
    assert list(MaintenanceWindow.objects.values_list("name", flat=True)) == ["Upgrade"]


def test_an_admin_key_reads_and_writes(api, cast, make_key):
    api.with_key(make_key(cast.owner, "admin"))

    created = api.post(URL, BODY)
    pk = created.json()["id"]

    assert created.status_code == 201
    assert api.get(URL).json()["count"] == 1
    assert api.patch(f"{URL}/{pk}", {"name": "Keyed"}).status_code == 200
    assert api.delete(f"{URL}/{pk}").status_code == 204


def test_another_organizations_window_is_a_404_and_stays_as_it_is(api, cast):
    window = make_window(cast)
    before = list(MaintenanceWindow.objects.values())
    api.as_user(cast.outsider)

    for method, body in [("get", None), ("patch", {"name": "Taken"}), ("delete", None)]:
        foreign = getattr(api, method)(f"{URL}/{window.id}", body)
        missing = getattr(api, method)(f"{URL}/{uuid.uuid4()}", body)
        assert_problem(foreign, 404, "not_found")
        assert foreign.content == missing.content
    assert api.get(URL).json()["count"] == 0
    assert list(MaintenanceWindow.objects.values()) == before


@pytest.mark.parametrize("field", ["projects", "endpoints"])
def test_ids_the_caller_cannot_see_are_a_400_and_nothing_is_created(
    api, cast, make_endpoint, field
):
    foreign = {
        "projects": cast.other_project.id,
        "endpoints": make_endpoint(cast.other_project).id,
    }[field]

    response = api.as_user(cast.owner).post(URL, {**BODY, field: [str(foreign)]})

    assert field in assert_problem(response, 400, "validation_error")["errors"]
    assert not MaintenanceWindow.objects.exists()
