"""Analytics per location: `group_by=location` and `location=` answer from raw checks grouped
by `CheckResult.location`, exact against seeded checks; bad input names the field."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from monitoring.models import CheckResult, Endpoint, Location
from tests.analytics.conftest import figures
from tests.helpers import assert_problem, iso

URL = "/api/v1/analytics/"
NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)


def seed(endpoint, location, results, start=NOW - timedelta(hours=2)):
    """Checks of one location: (ok, ms) each, a minute apart from `start`. Slots differ per
    location by a few seconds: on SQLite the test database still holds the unique
    (endpoint, scheduled_for) of before migration 0023 (see the report)."""
    offset = timedelta(seconds=sum(map(ord, location)) % 59)
    CheckResult.objects.bulk_create(
        CheckResult(
            endpoint=endpoint,
            scheduled_for=start + i * MINUTE + offset,
            checked_at=start + i * MINUTE,
            ok=ok,
            response_time_ms=ms,
            error="" if ok else "connection refused",
            location=location,
        )
        for i, (ok, ms) in enumerate(results)
    )


@pytest.fixture
def located(cast, make_endpoint):
    """An endpoint probed from the default location and eu-west: eu-west 3 checks, 1
    failure; the default location 4 checks, all ok."""
    Location.objects.create(slug="eu-west", name="Frankfurt")
    Location.objects.create(slug="us-east", name="Virginia")
    with time_machine.travel(NOW - timedelta(days=3), tick=False):
        endpoint = make_endpoint(cast.project, name="Shop")
    Endpoint.objects.filter(pk=endpoint.pk).update(locations=["default", "eu-west"])
    endpoint.refresh_from_db()
    seed(endpoint, "eu-west", [(True, 100.0), (False, None), (True, 200.0)])
    seed(endpoint, "", [(True, 10.0), (True, 20.0), (True, 30.0), (True, 40.0)])
    return endpoint


def get(api, cast, route, **params):
    with time_machine.travel(NOW, tick=False):
        return api.as_user(cast.owner).get(URL + route, params)


def test_summary_by_location_is_exact_per_location(api, cast, located):
    response = get(api, cast, "summary", group_by="location", endpoint=str(located.pk))

    rows = {row["location"]: row for row in figures(response)}
    assert list(rows) == ["default", "eu-west"]  # the endpoint's order; "" shown as its slug
    west = rows["eu-west"]
    assert west["endpoint"] == str(located.pk)
    assert (west["checks"], west["failures"]) == (3, 1)
    assert west["uptime"] == pytest.approx(66.6667)
    assert (west["avg_ms"], west["min_ms"], west["max_ms"]) == (150.0, 100.0, 200.0)
    assert west["p95_ms"] == 195.0  # interpolated between the two successes
    assert west["last_ok"] is True
    home = rows["default"]
    assert (home["checks"], home["failures"], home["uptime"]) == (4, 0, 100.0)
    assert (home["avg_ms"], home["p95_ms"]) == (25.0, 38.5)
    assert response.json()["coverage"] == {
        "since": iso(NOW - timedelta(hours=24)),
        "partial": False,
    }


def test_location_narrows_to_one_place_and_implies_group_by(api, cast, located):
    response = get(api, cast, "summary", location="eu-west")

    (row,) = figures(response)
    assert (row["location"], row["checks"], row["failures"]) == ("eu-west", 3, 1)


def test_the_default_location_is_asked_for_by_its_slug(api, cast, located):
    (row,) = figures(get(api, cast, "summary", location="default", group_by="location"))

    assert (row["location"], row["checks"]) == ("default", 4)


def test_response_time_by_location_draws_a_series_per_location(api, cast, located):
    response = get(api, cast, "response-time", group_by="location", bucket="1h", period="6h")

    rows = {row["location"]: row for row in figures(response)}
    assert set(rows) == {"default", "eu-west"}
    west = [p for p in rows["eu-west"]["points"] if p["count"]]
    assert [(p["count"], p["failures"], p["avg_ms"]) for p in west] == [(3, 1, 150.0)]
    assert sum(p["count"] for p in rows["default"]["points"]) == 4


def test_uptime_by_location_counts_each_places_checks(api, cast, located):
    response = get(api, cast, "uptime", group_by="location")

    rows = {r["location"]: r for r in figures(response)}
    assert rows["eu-west"]["checks_24h"] == 3
    assert rows["eu-west"]["failures_7d"] == 1
    assert rows["eu-west"]["uptime_30d"] == pytest.approx(66.6667)
    # 30 days reach past the 14 days raw checks are kept for: the answer says so.
    coverage = response.json()["coverage"]
    assert coverage == {"since": iso(NOW - timedelta(days=14)), "partial": True}


def test_csv_of_a_series_by_location_names_each_rows_location(api, cast, located):
    response = get(api, cast, "response-time", group_by="location", period="6h", format="csv")

    assert response.status_code == 200
    header, *lines = response.content.decode().splitlines()
    assert header.split(",")[:4] == ["endpoint", "project", "name", "location"]
    assert {line.split(",")[3] for line in lines} == {"default", "eu-west"}


def test_a_window_older_than_raw_retention_answers_what_exists_and_says_so(
    api, cast, located, settings
):
    settings.RAW_RETENTION_DAYS = 1
    old = NOW - timedelta(days=2)
    seed(located, "eu-west", [(False, None)], start=old)
    response = get(
        api,
        cast,
        "summary",
        group_by="location",
        **{"from": iso(old - timedelta(hours=1)), "to": iso(NOW)},
    )

    body = response.json()
    assert body["coverage"] == {"since": iso(NOW - timedelta(days=1)), "partial": True}
    rows = {row["location"]: row for row in body["results"]}
    assert (rows["eu-west"]["checks"], rows["eu-west"]["failures"]) == (4, 2)


def test_overall_figures_stay_on_the_rollups(api, cast, located):
    (row,) = figures(get(api, cast, "summary", endpoint=str(located.pk)))

    assert "location" not in row
    assert "coverage" not in get(api, cast, "summary").json()


def test_a_location_with_no_checks_shows_with_none(api, cast, located):
    Endpoint.objects.filter(pk=located.pk).update(locations=["default", "eu-west", "us-east"])

    rows = {r["location"]: r for r in figures(get(api, cast, "summary", group_by="location"))}

    assert rows["us-east"]["checks"] == 0
    assert rows["us-east"]["uptime"] is None
    assert rows["us-east"]["p95_ms"] is None


@pytest.mark.parametrize("route", ["summary", "response-time", "uptime"])
def test_an_unknown_location_is_a_400_naming_location(api, cast, located, route):
    problem = assert_problem(get(api, cast, route, location="mars"), 400, "validation_error")

    assert set(problem["errors"]) == {"location"}


def test_location_with_another_group_by_is_a_400_naming_location(api, cast, located):
    response = get(api, cast, "summary", location="eu-west", group_by="project")

    assert set(assert_problem(response, 400, "validation_error")["errors"]) == {"location"}


@pytest.mark.parametrize("route", ["availability", "errors", "sla"])
def test_routes_without_per_location_figures_refuse_group_by_location(api, cast, route):
    response = get(api, cast, route, group_by="location")

    assert set(assert_problem(response, 400, "validation_error")["errors"]) == {"group_by"}


def test_a_foreign_endpoint_is_a_404_by_location_too(api, cast, located, make_endpoint):
    foreign = make_endpoint(cast.other_project, name="Theirs")

    response = get(api, cast, "summary", group_by="location", endpoint=str(foreign.pk))

    assert response.status_code == 404


def test_an_outsider_sees_no_location_rows_of_another_org(api, cast, located):
    with time_machine.travel(NOW, tick=False):
        response = api.as_user(cast.outsider).get(URL + "summary", {"group_by": "location"})

    assert figures(response) == []


def test_by_location_costs_the_same_for_2_and_4_locations(
    api, cast, located, django_assert_max_num_queries
):
    with django_assert_max_num_queries(8) as captured:
        get(api, cast, "summary", group_by="location")
    few = len(captured)
    Location.objects.create(slug="ap-south", name="Mumbai")
    Endpoint.objects.filter(pk=located.pk).update(
        locations=["default", "eu-west", "us-east", "ap-south"]
    )
    seed(located, "us-east", [(True, 5.0)])
    seed(located, "ap-south", [(True, 6.0)])

    with django_assert_max_num_queries(few):
        rows = figures(get(api, cast, "summary", group_by="location"))
    assert len(rows) == 4


def test_a_page_of_per_location_figures_covers_at_most_50_endpoints(api, cast, located):
    wide = get(api, cast, "summary", group_by="location", page_size="51")
    fits = get(api, cast, "summary", group_by="location", page_size="50")
    overall = get(api, cast, "summary", group_by="endpoint", page_size="500")

    # Tallied from raw checks: a page reads a bounded number of rows.
    assert set(assert_problem(wide, 400, "validation_error")["errors"]) == {"page_size"}
    assert fits.status_code == overall.status_code == 200
