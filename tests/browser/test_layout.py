"""Every page fits a laptop (1,366 px) and a phone (390 px) with the longest names allowed.

Each page is loaded at both widths with data at its limits: 200-character names of the
organization, a project, endpoints (one of them a single unbroken token), a channel, a
maintenance window, an API key and a status page with its sections, and a long incident
cause. The document must never be wider than the viewport (wide tables scroll inside their
own box), and no chart text may be drawn under 11 px; each page is saved as a screenshot
in `SCREENSHOT_DIR` (default: a directory under pytest's tmp dir) for review.
"""

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import time_machine
from django.utils import timezone
from playwright.sync_api import Browser, Page
from pytest_django.live_server_helper import LiveServer

from accounts.models import Project, Role
from accounts.services import invitation_create, project_create
from alerts.models import MaintenanceWindow
from alerts.services import channel_create, maintenance_window_save
from apikeys.services import api_key_create
from monitoring.incidents import incident_declare
from monitoring.models import Endpoint
from statuspages.models import StatusPage
from statuspages.services import status_page_create
from statuspages.validation import PageInput, SectionIn
from tests.browser.conftest import day_of_checks, sign_in
from tests.helpers import mailed_token

WIDTHS = {"laptop": (1366, 800), "phone": (390, 844)}
# A 200-character name in words, and one without a single place to break.
WORDY = ("Customer checkout and payment gateway for the European storefronts " * 4)[:200]
TOKEN = ("payments-gateway-primary.eu-west-1.internal.example.com" * 4)[:200]
CAUSE = (
    "unexpected EOF while reading the response headers of "
    "https://auth.identity-provider.internal.example.com/oauth2/v1/introspect?"
    "client_id=storefront-checkout-service-production&token_type_hint=access_token"
    " after 3 retries; connection reset by peer"
)


@dataclass
class Limits:
    """Objects whose names and texts are as long as the product allows."""

    project: Project
    wordy: Endpoint
    token: Endpoint
    young: Endpoint
    status_page: StatusPage


@pytest.fixture
def limits(cast: Any, make_endpoint: Callable[..., Endpoint], record: Any) -> Limits:
    now = timezone.now()
    cast.org.name = WORDY
    cast.org.save(update_fields=["name"])
    project = project_create(organization=cast.org, name=TOKEN)
    with time_machine.travel(now - timedelta(days=1, minutes=5), tick=False):
        wordy = make_endpoint(
            project, name=WORDY, target="https://checkout.example.com/" + "x" * 150
        )
        token = make_endpoint(cast.project, name=TOKEN, target="https://pay.test/health")
    record(wordy, day_of_checks(now, 10, failing=(30, 0), error=CAUSE))
    record(token, day_of_checks(now, 15, failing=(6 * 60, 6 * 60 - 20), error=CAUSE))
    # Watched for ten minutes only: its charts start at its first check.
    with time_machine.travel(now - timedelta(minutes=10), tick=False):
        young = make_endpoint(cast.project, name="Young " + TOKEN[:190])
    record(young, [(now - timedelta(minutes=m), True, 90.0 + m) for m in range(9, 0, -1)])
    channel_create(
        organization=cast.org,
        name=TOKEN,
        kind="webhook",
        config={"url": "https://hooks.example.com/services/" + "T0" * 60},
        projects=[project],
    )
    maintenance_window_save(
        window=MaintenanceWindow(organization=cast.org),
        starts_at=now + timedelta(days=1),
        ends_at=now + timedelta(days=1, hours=2),
        name=WORDY,
        projects=[project],
    )
    api_key_create(
        creator=cast.owner, name=TOKEN, scopes=["endpoint:read", "analytics:read"], expires_at=None
    )
    invitation_create(
        inviter=cast.owner,
        email="someone.with.a.rather.long.address@" + "sub." * 10 + "example.com",
        role=Role.MEMBER,
        projects=[project],
    )
    status_page = status_page_create(
        organization=cast.org,
        data=PageInput(
            name=TOKEN,
            slug="a" * 63,
            title=WORDY,
            description=WORDY,
            visibility="public",
            password=None,
            custom_domain=("status-" + "x" * 50 + ".") * 3 + "example.com",
            uptime_days=90,
            show_response_times=False,
            sections=(
                SectionIn(name=TOKEN, endpoints=(token, wordy)),
                SectionIn(name=WORDY, endpoints=(young,)),
            ),
        ),
    )
    for endpoint in (wordy, token, young):
        endpoint.refresh_from_db()
    return Limits(project=project, wordy=wordy, token=token, young=young, status_page=status_page)


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the screenshots go: `SCREENSHOT_DIR` when set (CI keeps it), else a tmp dir."""
    chosen = os.environ.get("SCREENSHOT_DIR")
    folder = Path(chosen) if chosen else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(params=list(WIDTHS))
def sized(
    request: pytest.FixtureRequest, browser: Browser, live_server: LiveServer
) -> Iterator[tuple[str, Page]]:
    """A fresh page at one of the two widths, named by it."""
    width, height = WIDTHS[request.param]
    context = browser.new_context(
        base_url=live_server.url, viewport={"width": width, "height": height}
    )
    yield request.param, context.new_page()
    context.close()


def overflow(page: Page, folder: Path, name: str, width: str) -> list[str]:
    """Save a full-page screenshot; say how far the document is wider than the viewport."""
    page.screenshot(path=folder / f"{name}-{width}.png", full_page=True)
    scroll, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    return [f"{name} at {width}: {scroll} px wide, not {inner}"] if scroll > inner else []


# The smallest text of the visible charts in CSS px: its font size scaled as its SVG is.
SMALLEST_CHART_TEXT = """() => {
  const sizes = [];
  for (const svg of document.querySelectorAll("svg.chart")) {
    const box = svg.getBoundingClientRect();
    if (!box.width) continue;  // the drawing for the other kind of screen
    const scale = box.width / svg.viewBox.baseVal.width;
    for (const text of svg.querySelectorAll("text")) {
      sizes.push(parseFloat(getComputedStyle(text).fontSize) * scale);
    }
  }
  return sizes.length ? Math.min(...sizes) : null;
}"""


def _incident_of(limits: Limits) -> Any:
    """A declared incident on the long-named endpoints, its title and update at their limits."""
    incident = incident_declare(
        organization=limits.project.organization,
        author=None,
        title=WORDY,
        endpoints=[limits.wordy, limits.token],
        impact="major_outage",
        message=f"**{WORDY}**\n\n    {TOKEN}\n\n[{TOKEN}](https://{TOKEN}/)",
    )
    return incident.pk


def small_chart_text(page: Page, name: str, width: str) -> list[str]:
    """Say so when a chart's text is drawn under 11 px."""
    smallest = page.evaluate(SMALLEST_CHART_TEXT)
    if smallest is None or smallest >= 11:
        return []
    return [f"{name} at {width}: chart text of {smallest:.1f} px"]


def visit(page: Page, path: str, status: int = 200) -> None:
    response = page.goto(path)
    assert response is not None
    assert response.status == status, (path, response.status)


def test_signed_out_pages_fit(
    sized: tuple[str, Page], screenshots: Path, limits: Limits, outbox: list[Any]
) -> None:
    width, page = sized
    invited = mailed_token(outbox[-1], "/accept-invite")
    pages = {
        "login": ("/login", 200),
        "register": ("/register", 200),
        "forgot-password": ("/forgot-password", 200),
        "reset-password": ("/reset-password?token=nope", 200),
        "accept-invite": (f"/accept-invite?token={invited}", 200),
        "accept-invite-invalid": ("/accept-invite?token=nope", 400),
        "verify-email": ("/verify-email?token=nope", 200),
    }
    wide = []
    for name, (path, status) in pages.items():
        visit(page, path, status)
        wide += overflow(page, screenshots, name, width)
    visit(page, "/no/such/page", status=404)
    wide += overflow(page, screenshots, "404-signed-out", width)
    assert not wide


def signed_in_pages(limits: Limits) -> dict[str, str]:
    wordy, token, young = limits.wordy.pk, limits.token.pk, limits.young.pk
    return {
        "overview": "/",
        "overview-1h": "/?period=1h",
        "endpoint": f"/endpoints/{wordy}",
        "endpoint-token": f"/endpoints/{token}?period=6h",
        "endpoint-7d": f"/endpoints/{wordy}?period=7d",
        "endpoint-30d": f"/endpoints/{token}?period=30d",
        "endpoint-young-1h": f"/endpoints/{young}?period=1h",
        "endpoint-young-24h": f"/endpoints/{young}",
        "endpoint-new": "/endpoints/new",
        "endpoint-edit": f"/endpoints/{wordy}/edit",
        "compare": f"/compare?endpoints={wordy}&endpoints={token}&endpoints={young}",
        "compare-empty": "/compare",
        "alerts": "/alerts",
        "incidents": "/incidents",
        "incident": f"/incidents/{_incident_of(limits)}",
        "team": "/team",
        "projects": "/projects",
        "api-keys": "/api-keys",
        "account": "/account",
        "status-pages": "/status-pages",
        "status-page-new": "/status-pages/new",
        "status-page-edit": f"/status-pages/{limits.status_page.pk}/edit",
        "status-page-delete": f"/status-pages/{limits.status_page.pk}/delete",
    }


def test_signed_in_pages_fit(
    sized: tuple[str, Page], screenshots: Path, cast: Any, limits: Limits
) -> None:
    width, page = sized
    sign_in(page, cast.owner.email)
    wide = []
    for name, path in signed_in_pages(limits).items():
        visit(page, path)
        wide += overflow(page, screenshots, name, width)
        wide += small_chart_text(page, name, width)
    visit(page, "/no/such/page", status=404)
    wide += overflow(page, screenshots, "404", width)
    assert not wide


def test_forms_with_errors_fit(
    sized: tuple[str, Page], screenshots: Path, cast: Any, limits: Limits
) -> None:
    """A refused endpoint form and a refused API key, their errors shown, still fit."""
    width, page = sized
    sign_in(page, cast.owner.email)
    visit(page, f"/endpoints/{limits.wordy.pk}/edit")
    page.locator('input[name="target"]').fill("ftp://" + TOKEN)
    page.locator('input[name="interval_seconds"]').fill("1")
    page.locator("form.stacked").evaluate("(form) => form.noValidate = true")
    page.get_by_role("button", name="Save").click()
    page.wait_for_load_state()
    assert page.locator(".field-errors").count() >= 1
    wide = overflow(page, screenshots, "endpoint-edit-errors", width)

    visit(page, "/api-keys")
    page.locator('input[name="name"]').fill(TOKEN)
    page.locator('input[name="scopes"][value="endpoint:read"]').check()
    page.get_by_role("button", name="Create key").click()
    page.wait_for_url(re.compile(r"/api-keys"))
    assert page.locator("#new-key").count() == 1
    wide += overflow(page, screenshots, "api-keys-created", width)
    assert not wide


def test_long_names_show_whole_on_hover(page: Page, cast: Any, limits: Limits) -> None:
    """A name cut short on screen keeps its whole text in a `title`."""
    sign_in(page, cast.owner.email)
    visit(page, "/")
    link = page.locator(f'tr[data-endpoint="{limits.token.pk}"] a').first
    assert link.get_attribute("title") == TOKEN
    visit(page, f"/endpoints/{limits.token.pk}")
    assert page.locator("h1 .name").get_attribute("title") == TOKEN


def test_favicon_is_served(page: Page, live_server: LiveServer, db: None) -> None:
    response = page.request.get(live_server.url + "/favicon.ico")
    assert response.status == 200
    assert response.headers["content-type"].startswith("image/")
    visit(page, "/login")
    icon = page.locator('link[rel="icon"]').get_attribute("href")
    assert icon
    assert page.request.get(live_server.url + icon).status == 200
