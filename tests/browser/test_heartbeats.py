"""A heartbeat's pages in Chromium at a laptop's and a phone's width: the ping URL and its
snippets with working copy buttons, the ping log, and the form's next expected times
following the schedule as it is typed.

Screenshots go to /tmp/hbui-<page>-<width>.png (`HEARTBEAT_SCREENSHOTS` changes the prefix).
"""

import os
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from playwright.sync_api import Browser, Page, expect
from pytest_django.live_server_helper import LiveServer

from monitoring.models import Endpoint, Ping
from tests.browser.conftest import sign_in

pytestmark = pytest.mark.browser

WIDTHS = {"laptop": (1366, 800), "phone": (390, 844)}
PREFIX = os.environ.get("HEARTBEAT_SCREENSHOTS", "/tmp/hbui")  # noqa: S108 - for review
BODY = "<script>alert(1)</script> " + "backup finished: 1834 files, 42 GiB, " * 10


@pytest.fixture
def heartbeat(api: Any, cast: Any) -> Endpoint:
    """A heartbeat with a long slug and a few pings, one with a long body."""
    body = {
        "project": str(cast.project.id),
        "name": "Nightly backup of the customer database",
        "type": "heartbeat",
        "slug": "nightly-backup-of-the-customer-database-eu-west",
        "interval_seconds": 3600,
    }
    response = api.as_user(cast.owner).post("/api/v1/endpoints", body, format="json")
    assert response.status_code == 201, response.content
    endpoint = Endpoint.objects.get(pk=response.json()["id"])
    now = timezone.now()
    common = {"endpoint": endpoint, "client_ip": "2001:db8:85a3::8a2e:370:7334"}
    Ping.objects.create(
        **common, kind="start", received_at=now - timedelta(minutes=3), method="GET"
    )
    Ping.objects.create(
        **common,
        kind="success",
        exit_status=0,
        duration_ms=151_000.0,
        received_at=now - timedelta(minutes=1),
        method="POST",
        body=BODY,
        body_size=len(BODY),
    )
    Ping.objects.create(
        **common,
        kind="fail",
        exit_status=3,
        received_at=now,
        method="POST",
        body="x" * 100_000,
        body_size=100_000,
        body_truncated=True,
    )
    return endpoint


@pytest.fixture(params=list(WIDTHS))
def sized(
    request: pytest.FixtureRequest, browser: Browser, live_server: LiveServer
) -> Iterator[tuple[str, Page]]:
    """A fresh page at one of the two widths, allowed to use the clipboard."""
    width, height = WIDTHS[request.param]
    context = browser.new_context(
        base_url=live_server.url, viewport={"width": width, "height": height}
    )
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    yield request.param, context.new_page()
    context.close()


def fits(page: Page, name: str, width: str) -> list[str]:
    """Save a full-page screenshot; say so when the document is wider than the viewport."""
    page.screenshot(path=f"{PREFIX}-{name}-{width}.png", full_page=True)
    scroll, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    return [f"{name} at {width}: {scroll} px wide, not {inner}"] if scroll > inner else []


def test_the_heartbeat_page_shows_snippets_that_copy_and_the_ping_log(
    sized: tuple[str, Page], cast: Any, heartbeat: Endpoint
) -> None:
    width, page = sized
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: dialogs.append(dialog.message))
    sign_in(page, cast.owner.email)
    page.goto(f"/endpoints/{heartbeat.pk}")

    curl = page.locator("#snippet-curl")
    expect(curl).to_have_text(f"curl -fsS -m 10 --retry 5 -o /dev/null {heartbeat.ping_url}")
    expect(page.locator("#slug-url")).to_contain_text("/nightly-backup-of-the-customer")
    # The script shows the copy buttons, and one copies its snippet.
    button = page.locator('button[data-copy="snippet-curl"]')
    expect(button).to_be_visible()
    button.click()
    expect(button).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == curl.inner_text().strip()
    # The log: newest first, the body as text (its script never ran), the cut one marked.
    rows = page.locator("#ping-log tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.nth(0)).to_contain_text("truncated")
    expect(rows.nth(1)).to_contain_text("<script>alert(1)</script> backup finished")
    expect(rows.nth(1)).to_contain_text("exit 0 151.00 s")
    assert not dialogs
    # Every snippet box stays within the screen, wrapping its long URL.
    for box in page.locator(".snippet pre").all():
        right = box.evaluate("(el) => el.getBoundingClientRect().right")
        assert right <= WIDTHS[width][0], (box.get_attribute("id"), right)
    assert not fits(page, "detail", width)
    page.locator("#ping-urls").screenshot(path=f"{PREFIX}-detail-snippets-{width}.png")
    page.locator("#ping-log").screenshot(path=f"{PREFIX}-detail-log-{width}.png")


def test_the_form_shows_the_next_five_times_as_a_cron_is_typed(
    sized: tuple[str, Page], cast: Any, heartbeat: Endpoint
) -> None:
    width, page = sized
    sign_in(page, cast.owner.email)
    page.goto(f"/endpoints/{heartbeat.pk}/edit")
    times = page.locator("#schedule-times li")
    expect(times).to_have_count(5)  # the saved period's, drawn by the server
    expect(times.first).to_contain_text("UTC")

    page.locator("#config").fill(
        '{"cron": "*/5 * * * *", "timezone": "America/New_York", "grace_seconds": 3600}'
    )

    expect(page.locator("#schedule-description")).to_contain_text(
        "cron `*/5 * * * *` (America/New_York)"
    )
    expect(times).to_have_count(5)
    shown = times.all_inner_texts()
    assert all(text.endswith(("EST", "EDT")) for text in shown), shown
    minutes = [int(text.split(" ")[1].split(":")[1]) for text in shown]
    assert all(minute % 5 == 0 for minute in minutes), shown
    assert not fits(page, "form-cron", width)
    panel = page.locator("#schedule-preview")
    panel.screenshot(path=f"{PREFIX}-form-preview-{width}.png")

    page.locator("#config").fill('{"cron": "61 * * * *"}')
    errors = page.locator("#schedule-errors")
    expect(errors).to_be_visible()
    expect(errors).to_contain_text("cron: Not a valid cron expression: minute 61")
    expect(times).to_have_count(0)
    assert not fits(page, "form-bad-cron", width)


def test_the_new_form_shows_the_times_once_heartbeat_is_chosen(
    sized: tuple[str, Page], cast: Any, db: None
) -> None:
    width, page = sized
    sign_in(page, cast.owner.email)
    page.goto("/endpoints/new")
    panel = page.locator("#schedule-preview")
    expect(panel).to_be_hidden()

    page.locator("#type").select_option("heartbeat")
    page.locator("#interval_seconds").fill("900")

    expect(panel).to_be_visible()
    expect(page.locator("#schedule-description")).to_contain_text("every 15 min")
    expect(page.locator("#schedule-times li")).to_have_count(5)
    assert not fits(page, "new", width)
