"""Periods of 1 h and 6 h beside 24 h, 7 d and 30 d, and the charts of a young endpoint,
which start at its first check instead of drawing an empty period."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from tests.web.conftest import Markup, fragment, html, visible_text

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
PERIODS = ["1h", "6h", "24h", "7d", "30d"]


@pytest.fixture
def clock():
    with time_machine.travel(NOW, tick=False):
        yield


@pytest.fixture
def old(cast, make_endpoint, record):
    """Watched for 40 days, checked every 10 minutes for the last two."""
    with time_machine.travel(NOW - timedelta(days=40), tick=False):
        endpoint = make_endpoint(cast.project, name="Old")
    start = NOW - timedelta(days=2)
    record(endpoint, [(start + timedelta(minutes=10 * i), True, 100.0) for i in range(1, 288)])
    return endpoint


@pytest.fixture
def young(cast, make_endpoint, record):
    """Created 20 minutes ago, first checked 18 minutes ago, every minute since."""
    with time_machine.travel(NOW - timedelta(minutes=20), tick=False):
        endpoint = make_endpoint(cast.project, name="Young")
    record(endpoint, [(NOW - timedelta(minutes=m), True, 80.0) for m in range(18, 0, -1)])
    return endpoint


def chart(response, chart_id):
    return fragment(response, f'id="{chart_id}"', "</svg>")


def test_the_endpoint_page_offers_five_periods(pages, cast, old, clock):
    response = pages.as_user(cast.owner).get(f"/endpoints/{old.pk}")
    periods = fragment(response, '<nav class="periods"', "</nav>")
    assert [a["href"] for a in Markup(periods).find("a")] == [f"?period={p}" for p in PERIODS]
    assert visible_text(periods) == "1 hour 6 hours 24 hours 7 days 30 days"


@pytest.mark.parametrize("period", PERIODS)
def test_every_period_draws_its_own_range(pages, api, cast, old, clock, period):
    response = pages.as_user(cast.owner).get(f"/endpoints/{old.pk}", {"period": period})
    assert response.status_code == 200
    text = visible_text(response)
    assert f"Response time, last {period}" in text
    assert f"Availability, last {period}" in text
    for chart_id in ("response-chart", "availability-chart", "response-chart-phone"):
        drawn = chart(response, chart_id)
        # The whole period: an old endpoint's charts start where the period starts.
        start = NOW - {"1h": timedelta(hours=1), "6h": timedelta(hours=6)}.get(
            period, timedelta(hours=24) if period == "24h" else timedelta(days=int(period[:-1]))
        )
        assert f"{start:%Y-%m-%d %H:%M} to {NOW:%Y-%m-%d %H:%M} UTC" in drawn, chart_id
        assert "first check" not in drawn
    api.as_user(cast.owner)
    summary = api.get("/api/v1/analytics/summary", {"endpoint": str(old.pk), "period": period})
    assert summary.status_code == 200, summary.content


def test_the_overview_and_compare_take_the_short_periods(pages, cast, old, young, clock):
    pages.as_user(cast.owner)
    for period in ("1h", "6h"):
        overview = pages.get("/", {"period": period})
        assert f'value="{period}" selected' in html(overview)
        assert f"Avg ({period})" in visible_text(overview)
        compare = pages.get("/compare", {"endpoints": [old.pk, young.pk], "period": period})
        assert f"Side by side, last {period}" in visible_text(compare)


def test_a_young_endpoints_charts_start_at_its_first_check(pages, cast, young, clock):
    first = NOW - timedelta(minutes=18)
    pages.as_user(cast.owner)
    for period in ("1h", "24h", "30d"):
        response = pages.get(f"/endpoints/{young.pk}", {"period": period})
        for chart_id in ("response-chart", "availability-chart", "availability-chart-phone"):
            drawn = chart(response, chart_id)
            assert f"{first:%Y-%m-%d %H:%M} to {NOW:%Y-%m-%d %H:%M} UTC" in drawn, (
                period,
                chart_id,
            )
            # Eighteen minutes drawn, whatever the period: labelled by the clock.
            assert "since 11:42 UTC (first check)" in drawn, (period, chart_id)


def test_a_young_endpoint_picked_alone_is_compared_from_its_first_check(pages, cast, young, clock):
    response = pages.as_user(cast.owner).get("/compare", {"endpoints": young.pk, "period": "7d"})
    assert "since 11:42 UTC (first check)" in chart(response, "compare-chart")


def test_a_young_endpoint_with_no_check_yet_shows_the_whole_period(
    pages, cast, make_endpoint, clock
):
    with time_machine.travel(NOW - timedelta(minutes=5), tick=False):
        pending = make_endpoint(cast.project, name="Pending")
    response = pages.as_user(cast.owner).get(f"/endpoints/{pending.pk}", {"period": "1h"})
    drawn = chart(response, "response-chart")
    assert f"{NOW - timedelta(hours=1):%Y-%m-%d %H:%M} to" in drawn
    assert "first check" not in drawn
