"""The endpoint page of a degraded endpoint: amber bands where it was slow on both charts,
and the assertion results of its latest check."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from monitoring.models import EndpointStatus

T0 = datetime(2026, 11, 2, 12, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)

pytestmark = pytest.mark.django_db


@pytest.fixture
def slow(cast, make_endpoint, record):
    """Fast for 10 minutes, slow for 20, fast again for 30: degraded 12:10-12:30."""
    with time_machine.travel(T0 - MINUTE, tick=False):
        endpoint = make_endpoint(cast.project, name="Checkout", config={"degraded_above_ms": 500})
    checks = [(T0 + m * MINUTE, True, 900.0 if 10 <= m < 30 else 100.0) for m in range(60)]
    record(endpoint, checks)
    return endpoint


def test_the_endpoint_page_draws_amber_bands_on_both_charts(pages, cast, slow, make_endpoint):
    slow.refresh_from_db()
    assert slow.status == EndpointStatus.UP
    with time_machine.travel(T0 + timedelta(hours=1), tick=False):
        html = pages.as_user(cast.member).get(f"/endpoints/{slow.id}?period=24h").content.decode()

    # Each chart is drawn twice (desktop and phone): one band and one legend swatch each.
    assert html.count('class="degraded slow"') == 8
    assert html.count("Degraded from 2026-11-02 12:10") == 4
    assert "degraded (slow)" in html


def test_no_amber_band_when_never_degraded(pages, cast, make_endpoint, record):
    with time_machine.travel(T0 - MINUTE, tick=False):
        endpoint = make_endpoint(cast.project, config={"degraded_above_ms": 500})
    record(endpoint, [(T0 + m * MINUTE, True, 100.0) for m in range(10)])
    with time_machine.travel(T0 + timedelta(hours=1), tick=False):
        html = pages.as_user(cast.member).get(f"/endpoints/{endpoint.id}?period=24h").content
    assert b"degraded slow" not in html
