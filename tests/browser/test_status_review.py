"""The pages around status pages as a reader and an owner see them, at 1366 and 390 px, light
and dark: the public page in a major outage with a long Markdown update and a maintenance
window, the unlock form, and the incidents list and page. Each fits its width."""

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.hashers import make_password
from django.utils import timezone
from playwright.sync_api import Browser, Page
from pytest_django.live_server_helper import LiveServer

from alerts.models import MaintenanceWindow
from monitoring.incident_text import markdown_html
from monitoring.models import Endpoint, Incident, IncidentUpdate
from statuspages.models import StatusPage, Subscriber, Visibility
from tests.browser.conftest import shot, sign_in
from tests.statuspages.pages import declare, make_page

WIDTHS = (1366, 390)
SCHEMES = ("light", "dark")
LOG_LINE = (
    "ERROR pool exhausted: waited 30000 ms for a connection"
    " (max=20, in-use=20, waiting=1184, node=payments-eu-west-1c-7f9d)"
)
LONG_UPDATE = f"""\
We traced the failed payments to a **connection pool** that ran dry after the 14:02 deploy of
`payments-gateway-v2.31.0-rc.4-with-a-long-build-tag`. What we did:

1. Rolled back the deploy ([release notes](https://example.com/releases/payments-gateway/v2.31.0-rc.4/notes-for-the-incident-review)).
2. Raised the pool size:
   - from 20 to 80 connections
   - on every node of the cluster
3. Watched the error rate fall to zero.

```
{LOG_LINE}
```

A full write-up follows at https://example.com/postmortems/2026/11/payments-connection-pool-exhaustion-after-deploy.
"""


def _fits(page: Page, width: int) -> None:
    scroll = page.evaluate("document.documentElement.scrollWidth")
    assert scroll <= width, f"{page.url} is {scroll} px wide at {width} px"


def _look(page: Page, url: str, name: str, status: int = 200) -> None:
    for width in WIDTHS:
        for scheme in SCHEMES:
            page.set_viewport_size({"width": width, "height": 900})
            page.emulate_media(color_scheme=scheme)
            response = page.goto(url)
            assert response is not None
            assert response.status == status, url
            _fits(page, width)
            shot(page, f"review-{name}-{width}-{scheme}")


@pytest.fixture
def outage(cast: Any, make_endpoint: Callable[..., Endpoint]) -> Incident:
    """A major outage on a public page: every component down, a declared incident with a
    long Markdown update, and a maintenance window under way."""
    now = timezone.now()
    names = ("Payments API with a rather long component name", "Checkout", "Website")
    endpoints = [make_endpoint(cast.project, name=name) for name in names]
    Endpoint.objects.filter(pk__in=[e.pk for e in endpoints]).update(status="down")
    incident = declare(
        cast.org,
        endpoints,
        at=now - timedelta(minutes=50),
        impact="major_outage",
        title="Payments fail for every customer in every region of the world",
        updates=["We are investigating failed payments."],
    )
    IncidentUpdate.objects.create(
        incident=incident,
        state="identified",
        message=LONG_UPDATE,
        message_html=markdown_html(LONG_UPDATE),
        created_at=now - timedelta(minutes=10),
    )
    MaintenanceWindow.objects.create(
        organization=cast.org,
        name="Database upgrade to PostgreSQL 17 on the primary cluster",
        starts_at=now - timedelta(hours=1),
        ends_at=now + timedelta(hours=2),
    )
    make_page(cast.org, {"Core": endpoints[:2], "Edge": endpoints[2:]}, title="Acme status")
    return incident


def test_the_public_page_in_a_major_outage_fits(
    page: Page, outage: Incident, live_server: LiveServer
) -> None:
    _look(page, f"{live_server.url}/status/acme", "outage")


def test_the_unlock_form_fits(page: Page, cast: Any, live_server: LiveServer) -> None:
    make_page(
        cast.org,
        {},
        title="Acme status",
        visibility=Visibility.PASSWORD,
        password_hash=make_password("a long page password"),
    )
    _look(page, f"{live_server.url}/status/acme/unlock", "unlock")
    assert page.get_by_label("Password").is_visible()


def test_the_incident_pages_fit_for_an_owner(
    browser: Browser, cast: Any, outage: Incident, live_server: LiveServer
) -> None:
    context = browser.new_context(base_url=live_server.url)
    try:
        owner = context.new_page()
        sign_in(owner, cast.owner.email)
        _look(owner, f"{live_server.url}/incidents", "incidents")
        _look(owner, f"{live_server.url}/incidents/{outage.id}", "incident")
        # Each checkbox sits beside its label's text, not centred on a line above it.
        owner.set_viewport_size({"width": 1366, "height": 900})
        for check in owner.locator("form.stacked label.check").all():
            label, box = check.bounding_box(), check.locator("input").bounding_box()
            assert label is not None
            assert box is not None
            assert box["y"] + box["height"] / 2 == pytest.approx(
                label["y"] + label["height"] / 2, abs=3
            ), check.inner_text()
    finally:
        context.close()


def test_the_subscribe_pages_fit(page: Page, outage: Incident, live_server: LiveServer) -> None:
    subscriber = Subscriber.objects.create(page=StatusPage.objects.get(), email="r@example.com")
    base = f"{live_server.url}/status/acme"
    _look(page, f"{base}/confirm/{subscriber.token}", "subscribe-confirm")
    _look(page, f"{base}/unsubscribe/{subscriber.token}", "subscribe-unsubscribe")
    _look(page, f"{base}/confirm/not-a-token", "subscribe-unknown", status=404)
    # A refused address shows the form again with its error, in the app's layout.
    for width in WIDTHS:
        for scheme in SCHEMES:
            page.set_viewport_size({"width": width, "height": 900})
            page.emulate_media(color_scheme=scheme)
            page.goto(base)
            page.locator(".subscribe form").evaluate("form => { form.noValidate = true; }")
            page.get_by_role("textbox", name="Email").fill("not an address")
            page.get_by_role("button", name="Subscribe").click()
            page.get_by_role("heading", name="Subscribe to Acme status").wait_for()
            _fits(page, width)
            shot(page, f"review-subscribe-refused-{width}-{scheme}")
