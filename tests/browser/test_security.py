"""What a browser does with hostile names and error texts, and the Content-Security-Policy."""

from datetime import timedelta

import time_machine
from django.utils import timezone
from playwright.sync_api import ConsoleMessage, Page

from accounts.models import User
from accounts.services import invitation_create, project_create
from tests.browser.conftest import day_of_checks, shot, sign_in
from tests.helpers import PASSWORD, mailed_token

ENDPOINT_NAME = "<img src=x onerror=alert(1)>"
PROJECT_NAME = "<script>alert(2)</script>"
PROBE_ERROR = "<script>alert(3)</script>"


def test_hostile_names_and_errors_render_as_text(new_context, cast, make_endpoint, record):
    project = project_create(organization=cast.org, name=PROJECT_NAME)
    now = timezone.now()
    with time_machine.travel(now - timedelta(days=1, minutes=5), tick=False):
        endpoint = make_endpoint(project, name=ENDPOINT_NAME)
    # An incident that opened and resolved 6 hours ago, and one open for 10 minutes.
    record(endpoint, day_of_checks(now, 30, failing=(6 * 60, 5 * 60), error=PROBE_ERROR))
    record(
        endpoint,
        [(now - timedelta(minutes=m), False, 900.0, PROBE_ERROR) for m in range(10, 0, -1)],
    )
    # Only the escaping is on trial here: with the CSP on, the browser would refuse an
    # injected handler or script anyway and no dialog could ever open.
    page = new_context(bypass_csp=True).new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    fetched: list[str] = []
    page.on("request", lambda request: fetched.append(request.url))
    sign_in(page, cast.owner.email)

    texts = {
        "/": [ENDPOINT_NAME, PROJECT_NAME, PROBE_ERROR],
        f"/?project={project.pk}": [ENDPOINT_NAME, PROJECT_NAME],
        f"/endpoints/{endpoint.pk}": [ENDPOINT_NAME, PROJECT_NAME, PROBE_ERROR],
        f"/endpoints/{endpoint.pk}?period=7d": [ENDPOINT_NAME, PROBE_ERROR],
        f"/endpoints/{endpoint.pk}?period=30d": [ENDPOINT_NAME, PROBE_ERROR],
        f"/compare?endpoints={endpoint.pk}": [ENDPOINT_NAME, PROJECT_NAME],
        "/projects": [PROJECT_NAME],
        f"/endpoints/{endpoint.pk}/edit": [PROJECT_NAME],
    }
    for url, shown in texts.items():
        page.goto(url)
        for text in shown:
            assert page.get_by_text(text).count() >= 1, (url, text)
        assert page.locator('img[src="x"]').count() == 0, url
        scripts = page.locator("script").evaluate_all("(els) => els.map((el) => el.textContent)")
        assert not [script for script in scripts if "alert" in script], url
    for period in ("24h", "7d", "30d"):
        page.goto(f"/endpoints/{endpoint.pk}?period={period}")
        assert page.locator("#latest-error").inner_text() == f"Latest error: {PROBE_ERROR}"
        assert PROBE_ERROR in page.locator("#top-errors").inner_text()
        assert PROBE_ERROR in page.locator("#incident-list").inner_text()
        assert PROBE_ERROR in page.locator("#check-list").inner_text()
    shot(page, "xss-endpoint")
    page.goto("/")
    shot(page, "xss-overview")
    assert dialogs == []
    assert not [url for url in fetched if url.endswith("/x")]

    # The check can fail: the same markup, inserted as HTML, opens a dialog at once.
    with page.expect_event("dialog"):
        page.evaluate(
            "(html) => document.body.insertAdjacentHTML('beforeend', html)", ENDPOINT_NAME
        )
    assert dialogs == ["1"]


def csp_report(page: Page) -> tuple[list[str], list[str]]:
    """Collect, from now on, the page's CSP violations and its other errors: failed loads
    (bar /favicon.ico, which the admin and Swagger UI ask for and the site does not serve)
    and uncaught script exceptions."""
    violations: list[str] = []
    errors: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        if "Content Security Policy" in message.text:
            violations.append(f"{page.url}: {message.text}")
        elif message.type == "error" and not message.location["url"].endswith("/favicon.ico"):
            errors.append(f"{page.url}: {message.text} ({message.location['url']})")

    page.on("console", on_console)
    page.on("pageerror", lambda error: errors.append(f"{page.url}: {error}"))
    return violations, errors


def test_no_page_breaks_the_content_security_policy(page: Page, cast, watched, outbox):
    violations, errors = csp_report(page)
    invitation_create(inviter=cast.owner, email="later@acme.test", role="member", projects=[])
    for url in [
        "/login",
        "/register",
        "/forgot-password",
        "/reset-password?token=abc",
        "/verify-email?token=abc",
    ]:
        page.goto(url)
    page.goto(f"/accept-invite?token={mailed_token(outbox[-1], '/accept-invite')}")
    assert page.get_by_role("button", name="Join").is_visible()

    sign_in(page, cast.owner.email)
    ids = [watched.website.pk, watched.payments.pk, watched.search.pk]
    for url in [
        "/?status=down",
        *(f"/endpoints/{watched.website.pk}?period={p}" for p in ("24h", "7d", "30d")),
        "/compare?" + "&".join(f"endpoints={i}" for i in ids),
        "/team",
        "/projects",
        "/endpoints/new",
        f"/endpoints/{watched.website.pk}/edit",
        "/account",
        "/status-pages",
        "/status-pages/new",
        "/api-keys",
    ]:
        page.goto(url)
    page.get_by_label("Name").fill("csp")
    page.locator('input[name="scopes"][value="admin"]').check()
    page.get_by_role("button", name="Create key").click()
    page.locator("#new-key-value").wait_for()
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url("**/login")

    User.objects.create_superuser("root@ops.test", PASSWORD)
    sign_in(page, "root@ops.test")
    for url in [
        "/admin/",
        "/admin/monitoring/endpoint/",
        f"/admin/monitoring/endpoint/{watched.website.pk}/change/",
        "/admin/accounts/user/",
    ]:
        page.goto(url)
        assert page.locator("#site-name").is_visible(), url
    shot(page, "admin-changelist")
    page.goto("/api/docs/")
    page.locator(".swagger-ui .info .title").wait_for()
    assert "healthmon API" in page.locator(".swagger-ui .info .title").inner_text()
    shot(page, "api-docs")

    assert violations == []
    assert errors == []
