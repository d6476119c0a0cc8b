"""The public status page in Chromium: in each overall state, at 1280 and 390 px, light and
dark, it fits its width, and with scripts its times read in the reader's zone."""

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from playwright.sync_api import Page
from pytest_django.live_server_helper import LiveServer

from alerts.models import MaintenanceWindow
from monitoring.models import Endpoint, Incident
from tests.browser.conftest import shot
from tests.statuspages.pages import declare, make_page

STATES = ("operational", "maintenance", "degraded", "partial", "major")


def _world(cast: Any, make_endpoint: Any, record: Any, state: str) -> None:
    now = timezone.now()
    names = ("Checkout service with a long name", "API", "Website", "Search")
    endpoints = [make_endpoint(cast.project, name=name) for name in names]
    for day in range(3):
        checks = [(now - timedelta(days=day, minutes=m), m % 11, 80.0 + m) for m in range(60)]
        record(endpoints[0], [(at, bool(ok), ms) for at, ok, ms in checks])
    if state == "maintenance":
        MaintenanceWindow.objects.create(
            organization=cast.org,
            name="Database upgrade",
            starts_at=now - timedelta(hours=1),
            ends_at=now + timedelta(hours=1),
        )
    elif state == "degraded":
        Endpoint.objects.filter(pk=endpoints[1].pk).update(status="degraded")
    elif state == "partial":
        declare(cast.org, endpoints[:2], at=now - timedelta(hours=1), updates=["Looking"])
    elif state == "major":
        Endpoint.objects.filter(pk__in=[e.pk for e in endpoints]).update(status="down")
        for endpoint in endpoints:
            Incident.objects.create(endpoint=endpoint, started_at=now - timedelta(minutes=20))
    declare(
        cast.org,
        endpoints[2:],
        at=now - timedelta(days=2),
        resolved_at=now - timedelta(days=1),
        state="resolved",
        title="Slow search",
        updates=["Found", "Fixed"],
    )
    make_page(
        cast.org,
        {"Core": endpoints[:2], "Edge": endpoints[2:]},
        title="Acme status",
        show_response_times=True,
    )


@pytest.mark.parametrize("state", STATES)
def test_the_page_fits_in_every_state_width_and_scheme(
    page: Page, cast: Any, make_endpoint: Any, record: Any, live_server: LiveServer, state: str
) -> None:
    _world(cast, make_endpoint, record, state)
    for width in (1280, 390):
        for scheme in ("light", "dark"):
            page.set_viewport_size({"width": width, "height": 900})
            page.emulate_media(color_scheme=scheme)
            response = page.goto(f"{live_server.url}/status/acme")
            assert response is not None
            assert response.status == 200
            assert page.evaluate("document.documentElement.scrollWidth") <= width
            shot(page, f"status-page-{state}-{width}-{scheme}")


def test_scripts_show_times_in_the_readers_zone(
    browser: Any, cast: Any, make_endpoint: Any, record: Any, live_server: LiveServer
) -> None:
    _world(cast, make_endpoint, record, "partial")
    context = browser.new_context(timezone_id="Asia/Tokyo")
    try:
        reader = context.new_page()
        reader.goto(f"{live_server.url}/status/acme")
        assert "Asia/Tokyo" in reader.locator(".js-zone").inner_text()
        assert "UTC" not in reader.locator(".incidents time").first.inner_text()
    finally:
        context.close()
