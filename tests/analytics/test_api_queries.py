"""Every analytics report costs the same number of queries for 5 endpoints as for 50."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext

from monitoring.models import Incident

URL = "/api/v1/analytics/"
T0 = datetime(2026, 11, 1, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
NOW = T0 + timedelta(hours=3)
# Authentication, the page count and the page, rollups per tier (per period for uptime),
# incidents, pauses, maintenance windows: about a dozen queries whatever the page holds,
# never one per endpoint.
CEILING = 13


@pytest.fixture
def fleet(cast, make_endpoint, record):
    """Add endpoints, each with checks either side of a short incident; returns all so far."""
    endpoints = []

    def grow(total):
        while len(endpoints) < total:
            with time_machine.travel(T0, tick=False):
                endpoint = make_endpoint(cast.project, name=f"service {len(endpoints)}")
            # Checks every 3 minutes; two in a row fail at 00:30 and 00:33: an incident.
            checks = [(T0 + m * MINUTE, m not in (30, 33), 50.0 + m) for m in range(0, 120, 3)]
            record(endpoint, checks)
            endpoints.append(endpoint)
        return endpoints

    return grow


def read(api, path, params):
    """The queries of one answer (200) and the answer."""
    with time_machine.travel(NOW, tick=False), CaptureQueriesContext(connection) as queries:
        response = api.get(path, params)
    assert response.status_code == 200, response.content
    return queries.captured_queries, response.json()


def count_queries(api, path, params):
    queries, answer = read(api, path, params)
    return len(queries), answer


@pytest.mark.parametrize(
    "route", ["summary", "uptime", "sla", "response-time", "availability", "errors"]
)
@pytest.mark.parametrize("group_by", ["endpoint", "project"])
def test_a_report_costs_the_same_queries_for_5_and_50_endpoints(api, cast, fleet, route, group_by):
    with time_machine.travel(T0, tick=False):
        api.as_user(cast.owner)
    params = {"period": "24h", "group_by": group_by}

    fleet(5)
    few, small = count_queries(api, URL + route, params)
    fleet(50)
    many, large = count_queries(api, URL + route, params)

    expected = (5, 50) if group_by == "endpoint" else (1, 1)
    assert (small["count"], large["count"]) == expected
    assert Incident.objects.count() == 50
    assert many == few
    assert many <= CEILING


@pytest.mark.parametrize("period", ["7d", "30d"])
def test_longer_ranges_cost_the_same_too(api, cast, fleet, period):
    with time_machine.travel(T0, tick=False):
        api.as_user(cast.owner)

    for route in ("summary", "uptime", "sla", "response-time"):
        fleet(5)
        few, _ = count_queries(api, URL + route, {"period": period})
        fleet(50)
        many, _ = count_queries(api, URL + route, {"period": period})

        assert many == few, route
        assert many <= CEILING, route


def test_compare_costs_the_same_queries_for_2_and_10_endpoints(api, cast, fleet):
    with time_machine.travel(T0, tick=False):
        api.as_user(cast.owner)
    endpoints = fleet(10)

    few, small = count_queries(
        api, URL + "compare", {"endpoints": ",".join(str(e.id) for e in endpoints[:2])}
    )
    many, large = count_queries(
        api, URL + "compare", {"endpoints": ",".join(str(e.id) for e in endpoints)}
    )

    assert (len(small["results"]), len(large["results"])) == (2, 10)
    assert many == few
    assert many <= CEILING


@pytest.mark.parametrize("route", ["summary", "sla", "response-time", "uptime"])
def test_one_endpoints_report_reads_it_once_and_pages_like_a_list(
    api, cast, fleet, make_endpoint, route
):
    from accounts.models import Project

    with time_machine.travel(T0, tick=False):
        api.as_user(cast.owner)
    endpoint, _ = fleet(2)
    other_project = Project.objects.create(organization=cast.org, name="Other")
    path = URL + route

    reads, answer = read(api, path, {"period": "24h", "endpoint": str(endpoint.id)})
    assert answer["count"] == 1
    assert [row["endpoint"] for row in answer["results"]] == [str(endpoint.id)]
    endpoint_reads = [q for q in reads if 'FROM "monitoring_endpoint"' in q["sql"]]
    assert len(endpoint_reads) == 1
    with time_machine.travel(NOW, tick=False):
        past_the_end = api.get(path, {"endpoint": str(endpoint.id), "page": 2})
        narrowed = api.get(path, {"endpoint": str(endpoint.id), "project": str(other_project.id)})
    assert past_the_end.status_code == 404
    assert narrowed.status_code == 200
    assert narrowed.json()["count"] == 0
