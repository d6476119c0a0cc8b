"""Fixtures for the browser tests: Debian's Chromium driven by Playwright against a live server.

pytest-playwright's sync API keeps an asyncio event loop running in the test thread for as
long as Playwright is started. Its own fixtures start it once per session, so every test
collected after these would run inside that loop: Django refuses ORM calls there
(SynchronousOnlyOperation) and `asyncio.run()` fails in the probe tests. The fixtures that
hold Playwright are therefore redefined here with package scope: the loop stops when the
last browser test is done, and Django's async-safety check is lifted for this package only.
"""

import math
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import time_machine
from django.utils import timezone
from pytest_django.live_server_helper import LiveServer

from monitoring.models import Endpoint, Incident
from tests.helpers import PASSWORD, in_ci

try:
    from playwright.sync_api import Browser, BrowserType, Page, Playwright, sync_playwright
except ImportError as missing:  # the browser tier is optional on a developer's machine, not in CI
    if in_ci():
        raise
    pytest.skip(
        f"Playwright is not installed ({missing}): `pip install -e '.[dev]'`",
        allow_module_level=True,
    )

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Where `shot` saves screenshots: SCREENSHOT_DIR when set (CI sets it and keeps the folder
# as an artifact), else tests/artifacts/.
ARTIFACTS = Path(os.environ.get("SCREENSHOT_DIR") or Path(__file__).parents[1] / "artifacts")


# --- Browser --------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def browser_type_launch_args() -> dict[str, Any]:
    """Debian's Chromium; Playwright's own browser download does not work on these machines."""
    if not CHROMIUM.exists():
        missing = (
            f"{CHROMIUM} is missing: install Debian's Chromium (`apt-get install -y chromium`)."
            " The browser tests never use `playwright install`."
        )
        if in_ci():
            pytest.fail(missing)
        pytest.skip(missing)
    return {"executable_path": str(CHROMIUM), "args": CHROMIUM_ARGS}


@pytest.fixture(scope="package", autouse=True)
def _async_unsafe_allowed() -> Iterator[None]:
    """Let the test thread use the ORM while Playwright's event loop runs in it (see above)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        yield


@pytest.fixture(scope="package")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as started:
        yield started


@pytest.fixture(scope="package")
def browser_type(playwright: Playwright) -> BrowserType:
    return playwright.chromium


@pytest.fixture(scope="package")
def launch_browser(
    browser_type_launch_args: dict[str, Any], browser_type: BrowserType
) -> Callable[..., Browser]:
    def launch(**kwargs: Any) -> Browser:
        return browser_type.launch(**{**browser_type_launch_args, **kwargs})

    return launch


@pytest.fixture(scope="package")
def browser(launch_browser: Callable[..., Browser]) -> Iterator[Browser]:
    """One Chromium for every browser test; each test gets fresh contexts from it."""
    launched = launch_browser()
    yield launched
    launched.close()


@pytest.fixture(scope="package")
def browser_context_args(live_server: LiveServer) -> dict[str, Any]:
    return {"base_url": live_server.url, "viewport": {"width": 1280, "height": 900}}


# --- Server ---------------------------------------------------------------------------------


def _app_serves_static(app: Any) -> Any:
    return app


@pytest.fixture(scope="session")
def live_server() -> Iterator[LiveServer]:
    """pytest-django's live server, with static files served by whitenoise as in production.

    pytest-django puts staticfiles' handler in front of the app; it looks files up with the
    finders by their plain names, while with DEBUG off the pages link to the hashed names of
    the manifest, which only whitenoise (reading the collected STATIC_ROOT) knows.

    Secure cookies need no change: Chromium keeps them on http://localhost, which it treats
    as a secure context, so SESSION_COOKIE_SECURE and CSRF_COOKIE_SECURE stay as deployed.
    """
    server = LiveServer(os.getenv("DJANGO_LIVE_TEST_SERVER_ADDRESS", "localhost"), start=False)
    server.thread.static_handler = _app_serves_static
    server.start()
    yield server
    server.stop()


# --- Helpers --------------------------------------------------------------------------------


def sign_in(page: Page, email: str, password: str = PASSWORD) -> None:
    """Sign in through the login form and wait for the overview."""
    page.goto("/login")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"/$"))


def shot(page: Page, name: str) -> None:
    """Save a full-page screenshot to <ARTIFACTS>/<name>.png for review."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=ARTIFACTS / f"{name}.png", full_page=True)


def day_of_checks(
    now: datetime,
    every: int,
    failing: tuple[int, int] | None,
    error: str = "HTTP 503 from upstream",
) -> list[Any]:
    """Checks over the last 24 h every `every` minutes, response times wandering between
    about 70 and 200 ms; from `failing[0]` to `failing[1]` minutes ago, a failure a minute."""
    start, end = failing or (0, 0)
    checks: list[Any] = [
        (now - timedelta(minutes=m), True, 120 + 50 * math.sin(m / 90) + (m * 37) % 30)
        for m in range(24 * 60, 0, -every)
        if not end < m <= start
    ]
    checks += [(now - timedelta(minutes=m), False, 2000.0, error) for m in range(start, end, -1)]
    return sorted(checks, key=lambda check: check[0])


@dataclass
class Watched:
    """Three monitored endpoints: one up after an incident, two down with open incidents."""

    website: Endpoint
    payments: Endpoint
    search: Endpoint
    resolved: Incident


@pytest.fixture
def watched(cast: Any, make_endpoint: Callable[..., Endpoint], record: Any) -> Watched:
    now = timezone.now()
    # Watched since before the first check, or those checks would not move their state.
    with time_machine.travel(now - timedelta(days=1, minutes=5), tick=False):
        website = make_endpoint(cast.project, name="Website")
        payments = make_endpoint(cast.project, name="Payments API", target="https://pay.test")
        search = make_endpoint(cast.project, name="Search", target="https://search.test")
    # Up now; 6 hours ago it failed for 20 minutes: an incident that opened and resolved.
    record(website, day_of_checks(now, 2, failing=(6 * 60, 6 * 60 - 20)))
    # Down now: failing for the last 40 and 15 minutes, so two incidents are open.
    record(payments, day_of_checks(now, 15, failing=(40, 0)))
    record(search, day_of_checks(now, 15, failing=(15, 0)))
    resolved = Incident.objects.get(endpoint=website)
    assert resolved.resolved_at is not None
    for endpoint in (website, payments, search):
        endpoint.refresh_from_db()
    return Watched(website=website, payments=payments, search=search, resolved=resolved)
