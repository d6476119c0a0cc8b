"""The dashboards in a real browser: overview, an endpoint's graphs and SLA, the comparison."""

import re

from playwright.sync_api import Page

from tests.browser.conftest import shot, sign_in


def path_data(page: Page, selector: str) -> list[str]:
    """The `d` attribute of every element matching the selector."""
    return page.locator(selector).evaluate_all("(els) => els.map((el) => el.getAttribute('d'))")


def test_overview_endpoint_page_graphs_and_sla(page: Page, cast, watched):
    sign_in(page, cast.owner.email)
    assert page.get_by_role("heading", name="Overview").is_visible()
    group = page.locator("section.project-group")
    for endpoint in (watched.website, watched.payments, watched.search):
        row = group.locator(f'tr[data-endpoint="{endpoint.pk}"]')
        assert row.count() == 1
        assert row.locator("svg").count() == 1  # the 24 h sparkline
    # Down endpoints lead the project's list; the open incidents are newest first and
    # the resolved one is not among them.
    rows = group.locator("tbody tr")
    assert rows.nth(2).get_attribute("data-endpoint") == str(watched.website.pk)
    incidents = page.locator("#incidents tbody tr")
    assert incidents.count() == 2
    assert incidents.nth(0).get_by_role("link").inner_text() == "Search"
    assert incidents.nth(1).get_by_role("link").inner_text() == "Payments API"
    assert "HTTP 503 from upstream" in incidents.nth(0).inner_text()
    shot(page, "overview")

    group.get_by_role("link", name="Website", exact=True).click()
    page.wait_for_url(f"**/endpoints/{watched.website.pk}")
    assert page.get_by_role("heading", level=1).inner_text().startswith("Website")
    for series in ("band", "min", "max", "avg", "p95"):
        drawn = path_data(page, f'#response-chart svg [data-series="{series}"]')
        assert drawn, series
        assert all(d and d.startswith("M") for d in drawn), (series, drawn)
    band = page.locator(
        f'#availability-chart svg rect.incident[data-incident="{watched.resolved.pk}"]'
    )
    assert band.count() == 1
    assert float(band.get_attribute("width")) >= 2
    sla = page.locator("#sla")
    for tier in ("99.9", "99.95", "99.99"):
        row = sla.locator(f'tr[data-tier="{tier}"]')
        assert row.count() == 1, tier
        cells = row.locator("td.num")
        assert cells.count() == 4  # target, allowed, used, remaining
    assert "20 min" in sla.locator('tr[data-tier="99.9"] td.num').nth(2).inner_text()
    assert "HTTP 503 from upstream" in page.locator("#top-errors").inner_text()
    assert page.locator("#incident-list tbody tr").count() == 1
    shot(page, "endpoint")

    page.get_by_role("navigation", name="Period").get_by_role("link", name="7 days").click()
    page.wait_for_url(re.compile(r"period=7d"))
    assert page.locator(f'#availability-chart [data-incident="{watched.resolved.pk}"]').count() == 1
    assert page.locator("#sla tr[data-tier]").count() == 3
    shot(page, "endpoint-7d")

    page.goto(f"/endpoints/{watched.payments.pk}")
    assert "HTTP 503 from upstream" in page.locator("#latest-error").inner_text()
    assert page.locator("#incident-list").get_by_text("ongoing").count() == 1
    shot(page, "endpoint-down")


def test_compare_three_endpoints_picked_in_the_form(page: Page, cast, watched):
    sign_in(page, cast.owner.email)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Compare").click()
    page.wait_for_url("**/compare")
    picker = page.locator("#compare-form")
    names = ["Website", "Payments API", "Search"]
    for name in names:
        picker.get_by_label(name, exact=True).check()
    picker.get_by_role("button", name="Compare").click()
    # The form sends its search box first (empty here), then the picked endpoints.
    page.wait_for_url(re.compile(r"/compare\?q=&endpoints="))

    series = page.locator('#compare-chart svg [data-series="compare"]')
    assert series.count() == 3
    assert sorted(series.evaluate_all("(els) => els.map((el) => el.dataset.label)")) == sorted(
        names
    )
    assert all(
        d and d.startswith("M") for d in path_data(page, '#compare-chart [data-series="compare"]')
    )
    legend = page.locator("#compare-chart svg .legend").text_content()
    for name in names:
        assert name in legend
    rows = page.locator("#compare-table tbody tr[data-endpoint]")
    assert rows.count() == 3
    assert {rows.nth(i).get_attribute("data-endpoint") for i in range(3)} == {
        str(e.pk) for e in (watched.website, watched.payments, watched.search)
    }
    for name in names:
        assert picker.get_by_label(name, exact=True).is_checked()
    shot(page, "compare")


def test_pages_work_without_javascript(new_context, cast, watched):
    page = new_context(java_script_enabled=False).new_page()
    sign_in(page, cast.member.email)
    assert page.locator("section.project-group tr[data-endpoint]").count() == 3
    assert page.locator("#incidents tbody tr").count() == 2
    page.get_by_role("link", name="Website", exact=True).click()
    page.wait_for_url(f"**/endpoints/{watched.website.pk}")
    for series in ("band", "min", "max", "avg"):
        assert path_data(page, f'#response-chart [data-series="{series}"]'), series
    assert page.locator("#availability-chart rect.incident[data-incident]").count() == 1
    assert page.locator("#sla tbody tr[data-tier]").count() == 3
    page.goto(f"/compare?endpoints={watched.website.pk}&endpoints={watched.search.pk}")
    assert page.locator('#compare-chart [data-series="compare"]').count() == 2
    shot(page, "endpoint-no-js")
