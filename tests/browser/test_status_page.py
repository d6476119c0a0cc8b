"""The public status page in Chromium: in each overall state, at 1280 and 390 px, light and
dark, it fits its width, its banner says that state, and its text is readable (dark colours
of its own, contrast of at least 4.5:1 as WCAG AA asks of body text); with scripts its times
read in the reader's zone."""

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
# Each state's banner: its tone class and its words.
BANNERS = {
    "operational": ("tone-ok", "All systems operational"),
    "maintenance": ("tone-maintenance", "Under maintenance"),
    "degraded": ("tone-minor", "Degraded performance"),
    "partial": ("tone-major", "Partial outage"),
    "major": ("tone-critical", "Major outage"),
}
# WCAG AA's least contrast for normal text.
MIN_CONTRAST = 4.5
# The colours of each element the selectors find, with the background behind it (the first
# opaque one up its ancestors), and their contrast ratio (WCAG 2's relative luminance).
COLOURS_JS = """
(selectors) => {
  const rgb = (text) => {
    const parts = text.match(/[\\d.]+/g).map(Number);
    return {r: parts[0], g: parts[1], b: parts[2], a: parts.length > 3 ? parts[3] : 1};
  };
  const behind = (element) => {
    for (let at = element; at; at = at.parentElement) {
      const colour = rgb(getComputedStyle(at).backgroundColor);
      if (colour.a > 0) return getComputedStyle(at).backgroundColor;
    }
    return "rgb(255, 255, 255)";
  };
  const luminance = (text) => {
    const c = rgb(text);
    const lin = (v) => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    };
    return 0.2126 * lin(c.r) + 0.7152 * lin(c.g) + 0.0722 * lin(c.b);
  };
  const found = [];
  for (const selector of selectors) {
    for (const element of document.querySelectorAll(selector)) {
      const fg = getComputedStyle(element).color;
      const bg = behind(element);
      const [hi, lo] = [luminance(fg), luminance(bg)].sort((x, y) => y - x);
      found.push({selector, fg, bg, ratio: (hi + 0.05) / (lo + 0.05)});
    }
  }
  return found;
}
"""
# Text that must stay readable in both schemes.
READ = ["body", ".banner strong", ".component-name", ".component-status", ".muted", "h1"]


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
    tone, words = BANNERS[state]
    for width in (1280, 390):
        seen: dict[str, dict[str, Any]] = {}
        for scheme in ("light", "dark"):
            page.set_viewport_size({"width": width, "height": 900})
            page.emulate_media(color_scheme=scheme)
            response = page.goto(f"{live_server.url}/status/acme")
            assert response is not None
            assert response.status == 200
            assert page.evaluate("matchMedia('(prefers-color-scheme: dark)').matches") == (
                scheme == "dark"
            )
            assert page.evaluate("document.documentElement.scrollWidth") <= width
            banner = page.locator("section.banner")
            assert banner.count() == 1
            assert tone in (banner.get_attribute("class") or "").split(), (width, scheme)
            assert banner.locator("strong").inner_text().strip() == words, (width, scheme)
            assert banner.is_visible()
            colours = page.evaluate(COLOURS_JS, READ)
            assert {found["selector"] for found in colours} == set(READ), (width, scheme)
            unreadable = [found for found in colours if found["ratio"] < MIN_CONTRAST]
            assert unreadable == [], (width, scheme)
            seen[scheme] = {
                "body": page.evaluate(
                    "[getComputedStyle(document.body).color,"
                    " getComputedStyle(document.body).backgroundColor]"
                ),
                "banner": page.evaluate(
                    "(() => { const s = getComputedStyle(document.querySelector('.banner'));"
                    " return [s.color, s.backgroundColor]; })()"
                ),
            }
            shot(page, f"status-page-{state}-{width}-{scheme}")
        # Dark mode is a scheme of its own, not the light page in a dark browser.
        light, dark = seen["light"], seen["dark"]
        assert light["body"][0] != dark["body"][0], width  # text
        assert light["body"][1] != dark["body"][1], width  # background
        assert light["banner"] != dark["banner"], width


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
