"""One answer holds at most 50,000 series points, counted on the page it answers."""

import pytest

from tests.helpers import assert_problem

URL = "/api/v1/analytics/"


@pytest.mark.parametrize("route", ["response-time", "availability", "errors"])
def test_too_many_points_for_one_page_is_a_400(api, cast, make_endpoint, route):
    for n in range(6):  # 6 series of 30 days at 5 minutes: 51,846 points
        make_endpoint(cast.project, name=f"E{n}")
    api.as_user(cast.owner)

    refused = api.get(URL + route, {"period": "30d", "bucket": "5m", "page_size": 100})
    small_page = api.get(URL + route, {"period": "30d", "bucket": "5m", "page_size": 5})
    coarser = api.get(URL + route, {"period": "30d", "bucket": "1h", "page_size": 50})

    assert "bucket" in assert_problem(refused, 400, "validation_error")["errors"]
    assert small_page.status_code == coarser.status_code == 200
    series = {"response-time": "points", "availability": "buckets", "errors": "trend"}[route]
    points = small_page.json()["results"][0][series]
    assert 8640 <= len(points) <= 8641  # 30 days of 5 minutes, the first one partial


def test_compare_counts_each_endpoint_as_a_series(api, cast, make_endpoint):
    ids = ",".join(str(make_endpoint(cast.project, name=f"E{i}").id) for i in range(10))
    api.as_user(cast.owner)

    refused = api.get(URL + "compare", {"endpoints": ids, "period": "30d", "bucket": "5m"})
    allowed = api.get(URL + "compare", {"endpoints": ids, "period": "7d", "bucket": "5m"})

    assert "bucket" in assert_problem(refused, 400, "validation_error")["errors"]
    assert allowed.status_code == 200
