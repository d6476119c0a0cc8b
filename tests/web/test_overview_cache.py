"""The overview's figures are computed at most once per `DASHBOARD_CACHE_SECONDS` for a page
of endpoints; statuses, names and last checks are always read live."""

import time
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext

from healthmon.templatetags.healthmon import ago
from monitoring.models import Endpoint, EndpointStatus
from tests.web.conftest import endpoint_row

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


@pytest.fixture
def watched(cast, make_endpoint, record):
    """An endpoint checked every 10 minutes for the last 2 hours at 100 ms, all fine."""
    with time_machine.travel(NOW - timedelta(days=1), tick=False):
        endpoint = make_endpoint(cast.project, name="Watched")
    start = NOW - timedelta(hours=2)
    record(endpoint, [(start + n * timedelta(minutes=10), True, 100.0) for n in range(12)])
    return endpoint


def rollup_reads(queries) -> int:
    return sum("analytics_rollup" in query["sql"] for query in queries.captured_queries)


def overview(pages, user):
    with CaptureQueriesContext(connection) as queries:
        response = pages.as_user(user).get("/")
    assert response.status_code == 200
    return response, queries


def test_a_second_view_within_the_ttl_reads_no_rollups(pages, cast, watched, settings):
    settings.DASHBOARD_CACHE_SECONDS = 30
    with time_machine.travel(NOW, tick=False):
        first, cold = overview(pages, cast.owner)
        second, warm = overview(pages, cast.owner)

    assert rollup_reads(cold) > 0
    assert rollup_reads(warm) == 0
    assert len(warm) < len(cold)
    assert endpoint_row(second, watched) == endpoint_row(first, watched)
    assert endpoint_row(second, watched)[6] == "100 ms"


def test_status_name_and_last_check_stay_live_while_figures_are_cached(
    pages, cast, watched, record, settings
):
    settings.DASHBOARD_CACHE_SECONDS = 30
    with time_machine.travel(NOW, tick=False):
        overview(pages, cast.owner)
        record(watched, [(NOW - timedelta(seconds=5), True, 400.0)])
        Endpoint.objects.filter(pk=watched.pk).update(name="Renamed", status=EndpointStatus.DOWN)
        response, _ = overview(pages, cast.owner)

    row = endpoint_row(response, watched)
    assert row[0].startswith("Renamed")
    assert row[1] == "Down"
    assert row[2] == "5 s ago"
    assert row[6] == "100 ms"  # the cached average, without the 400 ms check: at most 30 s old


def test_figures_are_computed_again_after_the_ttl(pages, cast, watched, record, settings):
    settings.DASHBOARD_CACHE_SECONDS = 1  # the cache's own clock (Redis in CI) is real time
    with time_machine.travel(NOW, tick=False):
        overview(pages, cast.owner)
    record(watched, [(NOW + timedelta(seconds=10), True, 400.0)])
    time.sleep(1.2)
    with time_machine.travel(NOW + timedelta(seconds=31), tick=False):
        response, queries = overview(pages, cast.owner)

    assert rollup_reads(queries) > 0
    assert endpoint_row(response, watched)[6] == "123 ms"  # (12 x 100 + 400) / 13


def test_a_new_endpoint_shows_its_figures_at_once(pages, cast, watched, make_endpoint, settings):
    settings.DASHBOARD_CACHE_SECONDS = 30
    with time_machine.travel(NOW, tick=False):
        overview(pages, cast.owner)
        added = make_endpoint(cast.project, name="Added")
        response, _ = overview(pages, cast.owner)

    assert endpoint_row(response, added)[0].startswith("Added")
    assert endpoint_row(response, watched)[6] == "100 ms"


def test_zero_turns_the_cache_off(pages, cast, watched, record, settings):
    settings.DASHBOARD_CACHE_SECONDS = 0
    with time_machine.travel(NOW, tick=False):
        overview(pages, cast.owner)
        record(watched, [(NOW - timedelta(seconds=5), True, 400.0)])
        response, queries = overview(pages, cast.owner)

    assert rollup_reads(queries) > 0
    assert endpoint_row(response, watched)[6] == "123 ms"


def test_organizations_never_share_cached_figures(pages, cast, watched, make_endpoint):
    with time_machine.travel(NOW, tick=False):
        overview(pages, cast.owner)
        theirs = make_endpoint(cast.other_project, name="Theirs")
        response, queries = overview(pages, cast.outsider)

    assert rollup_reads(queries) > 0
    assert str(watched.pk) not in response.content.decode()
    assert endpoint_row(response, theirs)[6] == "—"


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0, "0 s ago"),
        (59, "59 s ago"),
        (60, "1 min ago"),
        (3599, "59 min ago"),
        (3600, "1 h ago"),
        (86399, "23 h ago"),
        (86400, "1 d ago"),
        (-5, "0 s ago"),
    ],
)
def test_ago_shows_the_largest_unit(seconds, shown):
    with time_machine.travel(NOW, tick=False):
        assert ago(NOW - timedelta(seconds=seconds)) == shown


def test_ago_of_nothing_is_a_dash():
    assert ago(None) == "—"
