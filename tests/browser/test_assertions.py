"""The assertion editor and the endpoint page of a degraded endpoint with assertions, in
Chromium at a laptop's and a phone's width: the editor works with JavaScript off, the
results table and the amber bands fit the screen.

Screenshots go to /tmp/i22assert-<page>-<width>.png (`ASSERTION_SCREENSHOTS` changes it).
"""

import os
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import time_machine
from django.utils import timezone
from playwright.sync_api import Browser, Page, expect
from pytest_django.live_server_helper import LiveServer

from monitoring.models import Endpoint
from tests.browser.conftest import sign_in

pytestmark = pytest.mark.browser

WIDTHS = {"laptop": (1366, 800), "phone": (390, 844)}
PREFIX = os.environ.get("ASSERTION_SCREENSHOTS", "/tmp/i22assert")  # noqa: S108 - for review


@pytest.fixture(params=list(WIDTHS))
def no_script(
    request: pytest.FixtureRequest, browser: Browser, live_server: LiveServer
) -> Iterator[tuple[str, Page]]:
    """A fresh page at one of the two widths, JavaScript off."""
    width, height = WIDTHS[request.param]
    context = browser.new_context(
        base_url=live_server.url,
        viewport={"width": width, "height": height},
        java_script_enabled=False,
    )
    yield request.param, context.new_page()
    context.close()


def fits(page: Page, name: str, width: str) -> list[str]:
    """Save a full-page screenshot; say so when the document is wider than the viewport."""
    page.screenshot(path=f"{PREFIX}-{name}-{width}.png", full_page=True)
    scroll, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    return [f"{name} at {width}: {scroll} px wide, not {inner}"] if scroll > inner else []


def test_the_editor_adds_assertions_without_javascript(
    no_script: tuple[str, Page], cast: Any, db: None
) -> None:
    width, page = no_script
    sign_in(page, cast.owner.email)
    page.goto(f"/endpoints/new?project={cast.project.pk}")
    page.locator("#name").fill("Payments")
    page.locator("#target").fill("https://payments.test/health")
    page.locator("#assertion-0-source").select_option("json")
    page.locator("#assertion-0-property").fill("checks.db")
    page.locator("#assertion-0-comparison").select_option("equals")
    page.locator("#assertion-0-target").fill("ok")
    page.locator("#assertion-1-source").select_option("body")
    page.locator("#assertion-1-comparison").select_option("less_than")
    page.locator("#assertion-1-target").fill("5")
    assert not fits(page, "form", width)

    page.get_by_role("button", name="Start monitoring").click()

    # Refused on its row, the rows kept as chosen; then fixed and saved.
    expect(page.locator(".assertion-row").nth(1)).to_contain_text("body supports only")
    assert not fits(page, "form-error", width)
    page.locator("#assertion-1-comparison").select_option("contains")
    page.get_by_role("button", name="Start monitoring").click()
    page.wait_for_url("**/endpoints/*")
    saved = Endpoint.objects.get(name="Payments")
    assert [a["source"] for a in saved.config["assertions"]] == ["json", "body"]


def test_the_endpoint_page_shows_results_and_amber_bands(
    no_script: tuple[str, Page], cast: Any, make_endpoint: Any, record: Any
) -> None:
    width, page = no_script
    assertions = [
        {"source": "status_code", "comparison": "equals", "target": 200},
        {
            "source": "json",
            "property": "checks.database.primary",
            "comparison": "equals",
            "target": "ok",
        },
        {"source": "response_time", "comparison": "less_than", "target": 800},
    ]
    now = timezone.now()
    with time_machine.travel(now - timedelta(hours=2), tick=False):
        endpoint = make_endpoint(
            cast.project,
            name="Checkout API",
            config={"assertions": assertions, "degraded_above_ms": 500},
        )
    checks = [
        (now - timedelta(minutes=90 - m), True, 900.0 if 20 <= m < 50 else 120.0) for m in range(89)
    ]
    error = (
        'assertion 2 failed: json checks.database.primary equals "ok", '
        'got "read-only replica lagging 42 s behind"'
    )
    record(endpoint, [*checks, (now - timedelta(seconds=30), False, 130.0, error)])

    sign_in(page, cast.owner.email)
    page.goto(f"/endpoints/{endpoint.pk}?period=24h")

    rows = page.locator("#assertion-results tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.nth(0)).to_contain_text("met")
    expect(rows.nth(1)).to_contain_text("read-only replica")
    expect(rows.nth(2)).to_contain_text("not checked")
    expect(page.locator("svg .slow-bands rect").first).to_be_attached()
    assert not fits(page, "detail", width)
    page.locator("#assertion-results").screenshot(path=f"{PREFIX}-results-{width}.png")
