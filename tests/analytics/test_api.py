"""The analytics API at its edges: parameter validation, scopes and tenant isolation.

CSV export is in `test_api_csv.py`, figures on constructed data in `test_api_reports.py`,
query counts in `test_api_queries.py`.
"""

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from accounts.models import Project
from tests.analytics.conftest import figures
from tests.helpers import assert_problem, iso

URL = "/api/v1/analytics/"
PAGED = ["summary", "response-time", "uptime", "availability", "errors", "sla"]
ROUTES = [*PAGED, "compare"]
WITH_BUCKET = ["response-time", "availability", "errors", "compare"]
T0 = datetime(2026, 11, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)


def query(route, endpoint_id=None, **params):
    """Parameters for a route; compare always gets the `endpoints` it requires."""
    if route == "compare":
        params.setdefault("endpoints", str(endpoint_id or uuid.uuid4()))
    return params


# --- Validation -------------------------------------------------------------------------------

BAD_RANGES = [
    pytest.param({"from": "yesterday"}, "from", id="from-not-a-date"),
    pytest.param({"to": "2026-13-01"}, "to", id="to-month-13"),
    pytest.param({"to": "2026-02-30T00:00:00Z"}, "to", id="to-february-30"),
    pytest.param({"from": "2026-01-01T24:00:00Z"}, "from", id="from-hour-24"),
    pytest.param({"from": "2026-05-01T00:00:00Z", "to": "2026-04-30T00:00:00Z"}, "to", id="inv"),
    pytest.param({"from": "2026-05-01T00:00:00Z", "to": "2026-05-01T00:00:00Z"}, "to", id="empty"),
    pytest.param({"from": "2025-01-01T00:00:00Z", "to": "2026-02-05T00:00:01Z"}, "to", id="401d"),
    pytest.param({"from": "1999-12-31T23:59:59Z", "to": "2000-01-02T00:00:00Z"}, "from", id="1999"),
    pytest.param({"from": "2099-12-31T00:00:00Z", "to": "2100-01-01T00:00:00Z"}, "to", id="2100"),
    pytest.param({"to": "9999-12-31T23:59:59Z"}, "to", id="year-9999"),
    pytest.param({"from": "0001-01-01T00:00:00+01:00"}, "from", id="year-1-overflow"),
    pytest.param({"from": "2026-05-01T00:00:00+99:00"}, "from", id="offset+99"),
    pytest.param({"to": "2026-05-01T00:00:00-99:00"}, "to", id="offset-99"),
    pytest.param({"from": "2000-01-01T10:00:00+23:59"}, "from", id="offset-into-1999"),
    pytest.param({"period": "1y"}, "period", id="period"),
    pytest.param({"period": "24H"}, "period", id="period-case"),
    pytest.param({"from": "2000-01-01T00:00:00Z"}, "to", id="from-2000-to-now"),
]


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(("params", "name"), BAD_RANGES)
def test_a_bad_range_is_a_validation_error_naming_it(api, cast, route, params, name):
    api.as_user(cast.owner)

    response = api.get(URL + route, query(route, **params))

    problem = assert_problem(response, 400, "validation_error")
    assert set(problem["errors"]) == {name}


BAD_FILTERS = [
    pytest.param(PAGED, {"group_by": "organization"}, "group_by", id="group_by"),
    pytest.param(PAGED, {"endpoint": "not-a-uuid"}, "endpoint", id="endpoint"),
    pytest.param(PAGED, {"endpoint": "1234"}, "endpoint", id="endpoint-number"),
    pytest.param(PAGED, {"project": "x" * 36}, "project", id="project"),
    pytest.param(["sla"], {"target": "99.5"}, "target", id="target"),
    pytest.param(["sla"], {"target": "100"}, "target", id="target-100"),
    pytest.param(WITH_BUCKET, {"bucket": "2m"}, "bucket", id="bucket"),
    pytest.param(WITH_BUCKET, {"bucket": "1w"}, "bucket", id="bucket-week"),
    pytest.param(
        WITH_BUCKET,
        {"bucket": "5m", "from": "2025-01-01T00:00:00Z", "to": "2026-02-01T00:00:00Z"},
        "bucket",
        id="5m-over-396-days",
    ),
    pytest.param(
        WITH_BUCKET,
        {"bucket": "5m", "from": "2026-01-01T00:00:00Z", "to": "2026-02-05T00:00:00Z"},
        "bucket",
        id="5m-over-35-days",
    ),
]


@pytest.mark.parametrize(("routes", "params", "name"), BAD_FILTERS)
def test_a_bad_filter_is_a_validation_error_naming_it(api, cast, routes, params, name):
    api.as_user(cast.owner)

    for route in routes:
        response = api.get(URL + route, query(route, **params))

        problem = assert_problem(response, 400, "validation_error")
        assert set(problem["errors"]) == {name}, route


def test_a_fine_bucket_within_the_point_limit_is_accepted(api, cast, make_endpoint):
    endpoint = make_endpoint(cast.project)
    api.as_user(cast.owner)
    month = {"bucket": "5m", "from": "2026-01-01T00:00:00Z", "to": "2026-01-31T00:00:00Z"}

    for route in WITH_BUCKET:
        response = api.get(URL + route, query(route, endpoint.id, **month))

        assert response.status_code == 200, (route, response.content)
        assert response.json()["bucket"] == "5m"


@pytest.mark.parametrize(
    "endpoints",
    [
        pytest.param("not-a-uuid", id="malformed"),
        pytest.param(f"{uuid.UUID(int=1)},nope", id="one-malformed"),
        pytest.param("", id="empty"),
        pytest.param(" , ,", id="only-commas"),
        pytest.param(",".join(str(uuid.uuid4()) for _ in range(11)), id="eleven"),
    ],
)
def test_bad_endpoints_to_compare_are_a_validation_error(api, cast, endpoints):
    api.as_user(cast.owner)

    response = api.get(URL + "compare", {"endpoints": endpoints})

    problem = assert_problem(response, 400, "validation_error")
    assert set(problem["errors"]) == {"endpoints"}


def test_compare_requires_endpoints(api, cast, make_endpoint):
    make_endpoint(cast.project)
    api.as_user(cast.owner)

    problem = assert_problem(api.get(URL + "compare"), 400, "validation_error")

    assert set(problem["errors"]) == {"endpoints"}


def test_ten_endpoints_can_be_compared(api, cast, make_endpoint):
    ids = [str(make_endpoint(cast.project, name=f"E{n}").id) for n in range(10)]
    api.as_user(cast.owner)

    response = api.get(URL + "compare", {"endpoints": ",".join(ids)})

    assert response.status_code == 200, response.content
    assert [row["endpoint"] for row in response.json()["results"]] == ids


JSON_TYPES = ("application/json", "application/problem+json")
HOSTILE = ["\x00", "9" * 500, "%", "-1", "NaN", "1e309", "2026-01-01T00:00:00+99:99", "☃"]


@pytest.mark.parametrize("route", ROUTES)
def test_hostile_values_never_cause_a_server_error(api, cast, make_endpoint, route):
    endpoint = make_endpoint(cast.project)
    api.as_user(cast.owner)
    names = ["from", "to", "period", "bucket", "group_by", "endpoint", "project", "target"]

    for name in [*names, "endpoints", "page", "page_size"]:
        for value in HOSTILE:
            response = api.get(URL + route, {**query(route, endpoint.id), name: value})

            assert response.status_code in (200, 400, 404), (name, value, response.content)
            assert response["Content-Type"] in JSON_TYPES, (name, value)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(
    ("start", "end"),
    [
        pytest.param("2000-01-01T00:00:00Z", "2000-01-02T00:00:00Z", id="first-day"),
        pytest.param("2099-12-31T00:00:00Z", "2099-12-31T23:59:59Z", id="last-day"),
        pytest.param("2026-01-01T00:00:00+14:00", "2026-01-01T12:00:00-12:00", id="offsets"),
        pytest.param("2025-01-01T00:00:00Z", "2026-02-05T00:00:00Z", id="400-days"),
    ],
)
def test_ranges_at_the_edges_are_answered(api, cast, make_endpoint, route, start, end):
    endpoint = make_endpoint(cast.project)
    api.as_user(cast.owner)

    response = api.get(URL + route, query(route, endpoint.id, **{"from": start, "to": end}))

    assert response.status_code == 200, response.content
    body = response.json()
    assert datetime.fromisoformat(body["from"]) == datetime.fromisoformat(start)
    assert datetime.fromisoformat(body["to"]) == datetime.fromisoformat(end)


# --- Scopes and credentials -------------------------------------------------------------------


@pytest.mark.parametrize("route", ROUTES)
def test_a_key_without_analytics_read_is_refused(api, cast, make_key, make_endpoint, route):
    endpoint = make_endpoint(cast.project)
    api.with_key(make_key(cast.owner, "endpoint:read", "endpoint:create", "incident:read"))

    response = api.get(URL + route, query(route, endpoint.id))

    assert_problem(response, 403, "insufficient_scope")


@pytest.mark.parametrize("route", ROUTES)
def test_a_key_with_analytics_read_is_served(api, cast, make_key, make_endpoint, route):
    endpoint = make_endpoint(cast.project)
    api.with_key(make_key(cast.owner, "analytics:read"))

    response = api.get(URL + route, query(route, endpoint.id))

    assert response.status_code == 200, response.content
    assert [row["endpoint"] for row in response.json()["results"]] == [str(endpoint.id)]


@pytest.mark.parametrize("route", ROUTES)
def test_no_credential_is_a_401(api, cast, make_endpoint, route):
    endpoint = make_endpoint(cast.project)

    response = api.get(URL + route, query(route, endpoint.id))

    assert_problem(response, 401, "not_authenticated")
    assert response["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize("route", ROUTES)
def test_a_revoked_key_is_a_401(api, cast, make_key, make_endpoint, route):
    endpoint = make_endpoint(cast.project)
    key = make_key(cast.owner, "analytics:read")
    api.as_user(cast.owner)
    [listed] = api.get("/api/v1/api-keys").json()["results"]
    assert api.delete(f"/api/v1/api-keys/{listed['id']}").status_code == 204

    response = api.with_key(key).get(URL + route, query(route, endpoint.id))

    assert response.status_code == 401, response.content


# --- Isolation --------------------------------------------------------------------------------


@pytest.mark.parametrize("route", PAGED)
@pytest.mark.parametrize("param", ["endpoint", "project"])
@pytest.mark.parametrize("group_by", ["endpoint", "project"])
def test_a_foreign_id_is_a_404_like_a_missing_one(api, cast, make_endpoint, route, param, group_by):
    make_endpoint(cast.project)
    theirs = make_endpoint(cast.other_project)
    foreign = theirs.id if param == "endpoint" else cast.other_project.id
    api.as_user(cast.owner)

    foreign_answer = api.get(URL + route, {param: str(foreign), "group_by": group_by})
    missing_answer = api.get(URL + route, {param: str(uuid.uuid4()), "group_by": group_by})

    problem = assert_problem(foreign_answer, 404, "not_found")
    assert assert_problem(missing_answer, 404, "not_found") == problem
    assert str(foreign) not in foreign_answer.content.decode()


@pytest.mark.parametrize("mine_too", [False, True])
def test_comparing_a_foreign_endpoint_is_a_404_like_a_missing_one(
    api, cast, make_endpoint, mine_too
):
    mine = make_endpoint(cast.project)
    theirs = make_endpoint(cast.other_project)
    api.as_user(cast.owner)
    prefix = f"{mine.id}," if mine_too else ""

    foreign_answer = api.get(URL + "compare", {"endpoints": f"{prefix}{theirs.id}"})
    missing_answer = api.get(URL + "compare", {"endpoints": f"{prefix}{uuid.uuid4()}"})

    problem = assert_problem(foreign_answer, 404, "not_found")
    assert assert_problem(missing_answer, 404, "not_found") == problem


@pytest.mark.parametrize("param", ["endpoint", "project"])
def test_compare_answers_a_foreign_filter_like_a_missing_one(api, cast, make_endpoint, param):
    mine = make_endpoint(cast.project)
    theirs = make_endpoint(cast.other_project)
    foreign = theirs.id if param == "endpoint" else cast.other_project.id
    api.as_user(cast.owner)
    params = {"endpoints": str(mine.id), "from": iso(T0), "to": iso(T0 + HOUR)}

    foreign_answer = api.get(URL + "compare", {**params, param: str(foreign)})
    missing_answer = api.get(URL + "compare", {**params, param: str(uuid.uuid4())})

    assert foreign_answer.status_code == missing_answer.status_code
    assert foreign_answer.content == missing_answer.content
    assert str(theirs.id) not in foreign_answer.content.decode()


@pytest.mark.parametrize("route", PAGED)
@pytest.mark.parametrize("group_by", ["endpoint", "project"])
def test_the_outsider_sees_only_its_own_organization(api, cast, make_endpoint, route, group_by):
    make_endpoint(cast.project, name="Ours")
    theirs = make_endpoint(cast.other_project, name="Theirs")
    api.as_user(cast.outsider)

    rows = figures(api.get(URL + route, {"group_by": group_by}))

    if group_by == "endpoint":
        assert [(row["endpoint"], row["name"]) for row in rows] == [(str(theirs.id), "Theirs")]
    else:
        assert [row["project"] for row in rows] == [str(cast.other_project.id)]
    assert "Ours" not in str(rows)


@pytest.fixture
def private(cast, make_endpoint):
    """A second project of the organization, not granted to the member, with an endpoint."""
    project = Project.objects.create(organization=cast.org, name="Private")
    return make_endpoint(project, name="Secret service")


@pytest.mark.parametrize("route", PAGED)
def test_a_member_sees_only_granted_projects(api, cast, make_endpoint, private, route):
    granted = make_endpoint(cast.project, name="Shared service")

    owner_rows = figures(api.as_user(cast.owner).get(URL + route))
    member_rows = figures(api.as_user(cast.member).get(URL + route))
    member_projects = figures(api.get(URL + route, {"group_by": "project"}))

    assert {row["endpoint"] for row in owner_rows} == {str(granted.id), str(private.id)}
    assert [row["endpoint"] for row in member_rows] == [str(granted.id)]
    assert [row["project"] for row in member_projects] == [str(cast.project.id)]


@pytest.mark.parametrize("route", PAGED)
@pytest.mark.parametrize("param", ["endpoint", "project"])
def test_a_member_gets_404_for_an_ungranted_project(api, cast, private, route, param):
    hidden = private.id if param == "endpoint" else private.project_id
    api.as_user(cast.member)

    hidden_answer = api.get(URL + route, {param: str(hidden)})
    missing_answer = api.get(URL + route, {param: str(uuid.uuid4())})

    problem = assert_problem(hidden_answer, 404, "not_found")
    assert assert_problem(missing_answer, 404, "not_found") == problem
    assert api.as_user(cast.owner).get(URL + route, {param: str(hidden)}).status_code == 200


@pytest.mark.parametrize("route", ROUTES)
def test_a_members_key_sees_only_granted_projects(
    api, cast, make_key, make_endpoint, private, route
):
    granted = make_endpoint(cast.project)
    api.with_key(make_key(cast.member, "analytics:read"))

    listed = api.get(URL + route, query(route, granted.id))
    hidden = api.get(URL + route, query(route, private.id, endpoint=str(private.id)))

    assert [row["endpoint"] for row in figures(listed)] == [str(granted.id)]
    assert_problem(hidden, 404, "not_found")


def test_a_member_cannot_compare_an_ungranted_endpoint(api, cast, make_endpoint, private):
    granted = make_endpoint(cast.project)
    ids = f"{granted.id},{private.id}"

    refused = api.as_user(cast.member).get(URL + "compare", {"endpoints": ids})
    allowed = api.as_user(cast.owner).get(URL + "compare", {"endpoints": ids})

    assert_problem(refused, 404, "not_found")
    assert allowed.status_code == 200
