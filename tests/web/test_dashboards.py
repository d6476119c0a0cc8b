"""The overview, the endpoint page and the comparison: what they show, and that each figure
equals the analytics API's (formatted as the pages format it)."""

import re
import uuid
from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from accounts.models import Project
from healthmon.templatetags.healthmon import duration, ms, pct, signed, uptime
from monitoring.models import EndpointStatus
from tests.web.conftest import Markup, cells, endpoint_row, fragment, html, visible_text

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
T0 = NOW - timedelta(days=3)
STEP = timedelta(minutes=10)
PERIODS = ["24h", "7d", "30d"]


@pytest.fixture
def clock():
    """Time stands still at NOW while the pages and the API are read."""
    with time_machine.travel(NOW, tick=False):
        yield


def series(start, end, ok=lambda at: True, slow=lambda at: 100.0, error="HTTP 503"):
    """Checks every 10 minutes in [start, end)."""
    checks, at = [], start
    while at < end:
        good = ok(at)
        checks.append((at, good, slow(at), "" if good else error))
        at += STEP
    return checks


@pytest.fixture
def fleet(cast, make_endpoint, record):
    """Two projects with endpoints up, down (an open incident), and never checked.

    `Alpha web` is up: 300 ms until a day ago, 100 ms since, failing once an hour (at :30)
    since and with a resolved outage from 07:00 to 07:40;
    `Zulu db` (same project) went down 20 minutes ago; `Cache` in Beta is up; `Fresh` in
    Beta has no check yet.
    """
    beta = Project.objects.create(organization=cast.org, name="Beta")
    with time_machine.travel(T0, tick=False):
        web = make_endpoint(cast.project, name="Alpha web")
        db = make_endpoint(
            cast.project, name="Zulu db", type="postgresql", target="postgresql://mon@db.test/app"
        )
        cache = make_endpoint(beta, name="Cache", type="redis", target="redis://cache.test:6379/0")
        fresh = make_endpoint(beta, name="Fresh")
    day_ago = NOW - timedelta(days=1)
    outage = (NOW - timedelta(hours=5), NOW - timedelta(hours=4, minutes=30))
    record(
        web,
        series(
            T0,
            NOW,
            ok=lambda at: (not (outage[0] <= at < outage[1]) and at.minute != 30) or at < day_ago,
            slow=lambda at: 300.0 if at < day_ago else 100.0,
        ),
    )
    record(
        db,
        series(T0, NOW, ok=lambda at: at < NOW - timedelta(minutes=20), error="connection refused"),
    )
    record(cache, series(NOW - timedelta(hours=30), NOW, slow=lambda at: 2.5))
    return {"web": web, "db": db, "cache": cache, "fresh": fresh, "beta": beta}


def rows_of(response):
    """The endpoint ids of the overview's rows, in page order."""
    return re.findall(r'<tr data-endpoint="([0-9a-f-]{36})">', html(response))


def ids(*endpoints):
    return [str(endpoint.pk) for endpoint in endpoints]


def api_figures(api, route, endpoint, **params):
    response = api.get(f"/api/v1/analytics/{route}", {"endpoint": str(endpoint.pk), **params})
    assert response.status_code == 200, response.content
    (row,) = response.json()["results"]
    return row


# --- Overview ---------------------------------------------------------------------------------


def test_overview_groups_by_project_worst_status_first(pages, cast, fleet, clock):
    response = pages.as_user(cast.owner).get("/")

    assert response.status_code == 200
    markup = Markup(html(response))
    headings = [
        attrs["id"] for attrs in markup.find("h2") if (attrs.get("id") or "").startswith("project-")
    ]
    assert headings == [f"project-{fleet['beta'].pk}", f"project-{cast.project.pk}"]
    beta_section = fragment(response, f'id="project-{fleet["beta"].pk}"', "</section>")
    default_section = fragment(response, f'id="project-{cast.project.pk}"', "</section>")
    assert ">Beta<" in beta_section
    assert ">Default<" in default_section
    assert rows_of(response) == ids(fleet["fresh"], fleet["cache"], fleet["db"], fleet["web"])
    assert str(fleet["db"].pk) in default_section
    assert str(fleet["web"].pk) in default_section


def test_overview_rows_escape_the_endpoint_name(pages, cast, make_endpoint, clock):
    endpoint = make_endpoint(cast.project, name='<b>"Tom" & Jerry</b>')

    response = pages.as_user(cast.owner).get("/")

    row = fragment(response, f'<tr data-endpoint="{endpoint.pk}">')
    escaped = "&lt;b&gt;&quot;Tom&quot; &amp; Jerry&lt;/b&gt;"
    assert f'href="/endpoints/{endpoint.pk}" title="{escaped}">{escaped}</a>' in row
    assert "<b>" not in row
    assert endpoint_row(response, endpoint)[0] == '<b>"Tom" & Jerry</b> HTTP(S)'


def test_overview_rows_show_status_last_check_uptime_avg_and_a_sparkline(pages, cast, fleet, clock):
    response = pages.as_user(cast.owner).get("/")

    web, db, fresh = (endpoint_row(response, fleet[k]) for k in ("web", "db", "fresh"))
    assert web[0] == "Alpha web HTTP(S)"
    assert web[1] == "Up"
    assert web[2] == "10 min ago"
    assert db[1] == "Down"
    assert fresh[1] == "Pending (no check yet)"
    assert fresh[2] == "never"
    assert fresh[6] == "—"  # no response time without a check
    assert web[6] == "100 ms"  # the last 24 hours were all 100 ms
    for key in ("web", "db", "cache"):
        row = fragment(response, f'<tr data-endpoint="{fleet[key].pk}">')
        assert "<svg" in row
        assert "<path" in row  # a drawn line, not an empty frame
        assert all(cell.endswith("%") for cell in cells(row)[3:6]), key


def test_overview_figures_equal_the_analytics_api(pages, api, cast, fleet, clock):
    pages.as_user(cast.owner)
    api.as_user(cast.owner)
    for period in PERIODS:
        response = pages.get("/", {"period": period})
        for key in ("web", "db", "cache", "fresh"):
            row = endpoint_row(response, fleet[key])
            figures = api_figures(api, "summary", fleet[key], period=period)
            assert row[3:7] == [
                visible_text(uptime(figures["uptime_24h"])),
                visible_text(uptime(figures["uptime_7d"])),
                visible_text(uptime(figures["uptime_30d"])),
                ms(figures["avg_ms"]),
            ], (period, key)


def test_the_period_selector_changes_the_average(pages, cast, fleet, clock):
    pages.as_user(cast.owner)

    day = pages.get("/", {"period": "24h"})
    week = pages.get("/", {"period": "7d"})

    assert "Avg (24h)" in visible_text(day)
    assert "Avg (7d)" in visible_text(week)
    assert endpoint_row(day, fleet["web"])[6] == "100 ms"
    assert endpoint_row(week, fleet["web"])[6] not in ("100 ms", "300 ms", "—")
    assert 'value="7d" selected' in html(week)


def test_open_incidents_come_first_with_their_cause(pages, cast, fleet, clock):
    response = pages.as_user(cast.owner).get("/")

    source = html(response)
    panel = fragment(response, 'id="incidents"', "</section>")
    assert source.index('id="incidents"') < source.index('<tr data-endpoint="')
    assert "Zulu db" in panel
    assert "connection refused" in panel
    assert "Alpha web" not in panel  # its incident is resolved
    assert panel.count("<tr>") == 2  # header and one incident


def test_filter_by_project(pages, cast, fleet, clock):
    response = pages.as_user(cast.owner).get("/", {"project": str(fleet["beta"].pk)})

    assert rows_of(response) == ids(fleet["fresh"], fleet["cache"])
    assert "Zulu db" not in fragment(response, 'id="incidents"', "</section>")


def test_filter_by_status(pages, cast, fleet, clock):
    pages.as_user(cast.owner)

    assert rows_of(pages.get("/", {"status": "down"})) == ids(fleet["db"])
    assert rows_of(pages.get("/", {"status": "pending"})) == ids(fleet["fresh"])
    assert rows_of(pages.get("/", {"status": "paused"})) == []


def test_the_open_incidents_follow_the_filters(pages, cast, fleet, clock):
    pages.as_user(cast.owner)

    def listed(**query):
        return "Zulu db" in fragment(pages.get("/", query), 'id="incidents"', "</section>")

    assert listed(status="down")
    assert listed(type="postgresql")
    assert listed(project=str(cast.project.pk))
    assert not listed(status="up")
    assert not listed(type="redis")
    assert not listed(project=str(fleet["beta"].pk))


def test_filter_by_type(pages, cast, fleet, clock):
    pages.as_user(cast.owner)

    assert rows_of(pages.get("/", {"type": "redis"})) == ids(fleet["cache"])
    assert rows_of(pages.get("/", {"type": "http"})) == ids(fleet["fresh"], fleet["web"])


def test_filters_combine(pages, cast, fleet, clock):
    response = pages.as_user(cast.owner).get(
        "/", {"project": str(cast.project.pk), "status": "up", "type": "http"}
    )

    assert rows_of(response) == ids(fleet["web"])


@pytest.mark.parametrize(
    "query",
    [
        {"project": "not-a-uuid"},
        {"project": "1"},
        {"status": "exploded"},
        {"type": "<script>"},
        {"period": "1y"},
        {"page": "abc"},
        {"page": "-1"},
        {"page": "99999"},
        {"status": "", "type": "", "project": ""},
    ],
)
def test_garbage_filters_are_ignored(pages, cast, fleet, clock, query):
    response = pages.as_user(cast.owner).get("/", query)

    assert response.status_code == 200
    assert sorted(rows_of(response)) == sorted(
        ids(fleet["web"], fleet["db"], fleet["cache"], fleet["fresh"])
    )
    assert "<script>" not in html(response)


def test_an_unknown_or_foreign_project_filter_shows_nothing(pages, cast, fleet, clock):
    pages.as_user(cast.owner)

    unknown = pages.get("/", {"project": str(uuid.uuid4())})
    foreign = pages.get("/", {"project": str(cast.other_project.pk)})

    assert unknown.status_code == foreign.status_code == 200
    assert rows_of(unknown) == rows_of(foreign) == []
    assert "No endpoints match these filters." in visible_text(unknown)


def test_overview_pages_beyond_100_endpoints(pages, cast, make_endpoint):
    made = [make_endpoint(cast.project, name=f"svc {n:03}") for n in range(101)]
    pages.as_user(cast.owner)

    first = pages.get("/")
    second = pages.get("/", {"page": "2", "status": "pending"})

    assert len(rows_of(first)) == 100
    assert "Page 1 of 2 (101 endpoints)" in visible_text(first)
    assert 'href="?page=2"' in html(first)
    assert rows_of(second) == ids(made[-1])
    assert "Page 2 of 2 (101 endpoints)" in visible_text(second)
    assert 'href="?status=pending&amp;page=1"' in html(second)  # filters survive paging


def test_overview_without_endpoints_invites_to_add_one(pages, cast):
    response = pages.as_user(cast.owner).get("/")

    assert response.status_code == 200
    assert "No endpoints. Monitor one ." in visible_text(response)


def test_overview_refreshes_itself_without_script(pages, cast):
    markup = Markup(html(pages.as_user(cast.member).get("/")))

    assert markup.find("meta", http_equiv="refresh", content="30")


def test_pages_need_a_session(pages, cast, fleet):
    for url in ["/", f"/endpoints/{fleet['web'].pk}", "/compare", "/endpoints/new"]:
        response = pages.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/login?next=")


# --- Endpoint page ----------------------------------------------------------------------------


def test_endpoint_page_shows_the_three_sla_tiers_like_the_api(pages, api, cast, fleet, clock):
    pages.as_user(cast.owner)
    api.as_user(cast.owner)
    for period in PERIODS:
        response = pages.get(f"/endpoints/{fleet['web'].pk}", {"period": period})
        sla = api_figures(api, "sla", fleet["web"], period=period)
        assert [tier["target"] for tier in sla["tiers"]] == [99.9, 99.95, 99.99]
        for tier in sla["tiers"]:
            row = cells(fragment(response, f'<tr data-tier="{tier["target"]}">'))
            assert row[:5] == [
                tier["tier"] + (" (target)" if tier["target"] == 99.9 else ""),
                f"{tier['target']} %",
                f"{duration(tier['allowed_downtime_s'])} "
                f"({duration(tier['allowed_downtime_month_s'])} a month)",
                duration(tier["downtime_s"]),
                duration(tier["budget_remaining_s"]),
            ], (period, tier["target"])
            assert row[5] == ("Met" if tier["compliant"] else "Missed")


def test_endpoint_page_sla_standing_met_and_missed(pages, cast, fleet, clock):
    pages.as_user(cast.owner)

    web = pages.get(f"/endpoints/{fleet['web'].pk}")
    cache = pages.get(f"/endpoints/{fleet['cache'].pk}")

    web_tiers = [cells(fragment(web, f'<tr data-tier="{t}">'))[5] for t in (99.9, 99.95, 99.99)]
    cache_tiers = [cells(fragment(cache, f'<tr data-tier="{t}">'))[5] for t in (99.9, 99.95, 99.99)]
    assert web_tiers == ["Missed"] * 3
    assert cache_tiers == ["Met"] * 3


def test_endpoint_page_shows_error_rate_and_its_change_like_the_api(pages, api, cast, fleet, clock):
    pages.as_user(cast.owner)
    api.as_user(cast.owner)
    # The 24 h before have checks; the 7 days before have none ("no checks in the 7d before").
    for period in ("24h", "7d"):
        text = visible_text(pages.get(f"/endpoints/{fleet['web'].pk}", {"period": period}))
        errors = api_figures(api, "errors", fleet["web"], period=period)
        summary = api_figures(api, "summary", fleet["web"], period=period)
        before = (
            f"no checks in the {period} before"
            if errors["previous_error_rate"] is None
            else f"{signed(errors['error_rate_change'])} vs the {period} before: "
            f"{pct(errors['previous_error_rate'])}"
        )
        assert (
            f"error rate {pct(errors['error_rate'])} ({before}) · "
            f"{errors['failures']} of {errors['checks']} checks failed"
        ) in text
        assert f"Success rate {pct(summary['success_rate'])}" in text
    day = api_figures(api, "errors", fleet["web"], period="24h")
    assert day["error_rate_change"] is not None
    assert day["error_rate_change"] > 0


def test_endpoint_page_shows_top_errors_like_the_api(pages, api, cast, fleet, clock):
    response = pages.as_user(cast.owner).get(f"/endpoints/{fleet['db'].pk}")

    errors = api_figures(api.as_user(cast.owner), "errors", fleet["db"], period="24h")
    table = fragment(response, 'id="top-errors"', "</table>")
    shown = [cells(row) for row in re.findall(r"<tr>.*?</tr>", table, flags=re.S)[1:]]
    assert shown == [[cause["error"], str(cause["count"])] for cause in errors["top_errors"]]
    assert shown == [["connection refused", "2"]]


def test_endpoint_page_shows_recent_checks_newest_first(pages, cast, fleet, clock):
    response = pages.as_user(cast.owner).get(f"/endpoints/{fleet['db'].pk}")

    table = fragment(response, 'id="check-list"', "</table>")
    rows = [cells(row) for row in re.findall(r"<tr>.*?</tr>", table, flags=re.S)[1:]]
    assert len(rows) == 20
    assert rows[0] == ["2026-11-20 11:50:00", "failed", "100 ms", "", "connection refused"]
    assert rows[1][:2] == ["2026-11-20 11:40:00", "failed"]
    assert rows[2][:2] == ["2026-11-20 11:30:00", "ok"]


def test_endpoint_page_lists_incidents_with_cause_and_duration(pages, cast, fleet, clock):
    pages.as_user(cast.owner)

    web = fragment(pages.get(f"/endpoints/{fleet['web'].pk}"), 'id="incident-list"', "</table>")
    db = fragment(pages.get(f"/endpoints/{fleet['db'].pk}"), 'id="incident-list"', "</table>")

    assert "ongoing" in visible_text(db)
    assert "connection refused" in visible_text(db)
    assert "ongoing" not in visible_text(web)
    assert "2026-11-20 07:00:00 2026-11-20 07:40:00 40 min HTTP 503" in visible_text(web)


def test_endpoint_page_draws_both_charts(pages, cast, fleet, clock):
    for period in PERIODS:
        response = pages.as_user(cast.owner).get(f"/endpoints/{fleet['web'].pk}?period={period}")
        for chart in ("response-chart", "availability-chart"):
            assert "<svg" in fragment(response, f'id="{chart}"', "</div>"), (period, chart)
        assert f"Availability, last {period}" in visible_text(response)


def test_endpoint_page_figures_equal_the_summary(pages, api, cast, fleet, clock):
    api.as_user(cast.owner)
    for period in PERIODS:
        text = visible_text(
            pages.as_user(cast.owner).get(f"/endpoints/{fleet['web'].pk}", {"period": period})
        )
        figures = api_figures(api, "summary", fleet["web"], period=period)
        assert f"Last {period} Uptime (24 h / 7 d / 30 d) {pct(figures['uptime_24h'])}" in text
        assert f"Average response {ms(figures['avg_ms'])}" in text
        assert f"p95 / p99 {ms(figures['p95_ms'])}" in text


@pytest.mark.parametrize("period", ["1y", "", "24H", "<b>"])
def test_a_garbage_period_falls_back_to_24h(pages, cast, fleet, clock, period):
    pages.as_user(cast.owner)
    url = f"/endpoints/{fleet['web'].pk}"

    garbage = pages.get(url, {"period": period})
    day = pages.get(url, {"period": "24h"})

    assert garbage.status_code == 200
    assert "Last 24h" in visible_text(garbage)
    assert visible_text(garbage) == visible_text(day)


def test_the_endpoint_page_of_a_never_checked_endpoint(pages, cast, fleet, clock):
    response = pages.as_user(cast.owner).get(f"/endpoints/{fleet['fresh'].pk}")

    text = visible_text(response)
    assert response.status_code == 200
    assert "No checks yet." in text
    assert "No incidents." in text
    assert "No failed checks." in text


def test_the_paused_endpoint_page_offers_resume_not_check_now(pages, cast, make_endpoint):
    paused = make_endpoint(cast.project, name="Paused", enabled=False)

    source = html(pages.as_user(cast.owner).get(f"/endpoints/{paused.pk}"))

    assert f"/endpoints/{paused.pk}/resume" in source
    assert f"/endpoints/{paused.pk}/check-now" not in source
    assert paused.status == EndpointStatus.PAUSED


# --- No data yet ------------------------------------------------------------------------------


def test_the_overview_shows_no_data_yet_for_a_pending_endpoint(pages, cast, fleet, clock):
    response = pages.as_user(cast.owner).get("/")

    fresh = endpoint_row(response, fleet["fresh"])
    assert fresh[1] == "Pending (no check yet)"
    assert fresh[3:6] == ["No data yet"] * 3
    assert not any("100" in cell or "%" in cell for cell in fresh)
    assert endpoint_row(response, fleet["cache"])[3] == "100.00 %"  # checked: a figure


@pytest.mark.parametrize("period", PERIODS)
def test_the_page_of_a_pending_endpoint_claims_no_uptime_and_no_standing(
    pages, cast, fleet, clock, period
):
    response = pages.as_user(cast.owner).get(f"/endpoints/{fleet['fresh'].pk}", {"period": period})

    text = visible_text(response)
    assert "Uptime (24 h / 7 d / 30 d) No data yet until the first check" in text
    assert f"Availability, last {period}: No data yet" in text
    assert "No data yet: the first check has not run." in text
    assert "100.00" not in text
    assert "watched" not in text  # no "downtime 0 s of 0 s watched"
    sla = visible_text(fragment(response, 'id="sla"', "</section>"))
    assert "Met" not in sla
    assert "Missed" not in sla
    for target in (99.9, 99.95, 99.99):
        tier = cells(fragment(response, f'<tr data-tier="{target}">'))
        assert tier[2].startswith("— (")  # nothing allowed yet; the month's allowance stays
        assert tier[3:] == ["—", "—", "No data yet"], target


def test_compare_shows_no_data_yet_beside_a_measured_endpoint(pages, cast, fleet, clock):
    response = compare(pages.as_user(cast.owner), [fleet["fresh"].pk, fleet["cache"].pk])

    fresh, cache = endpoint_row(response, fleet["fresh"]), endpoint_row(response, fleet["cache"])
    assert fresh[6] == "No data yet"
    assert fresh[8:] == ["0", "99.9 %: No data yet"]
    assert "met" not in fresh[9]
    assert (cache[6], cache[9]) == ("100.000 %", "99.9 %: met")


def test_minutes_of_watching_show_budgets_in_tenths_of_seconds(pages, cast, make_endpoint, record):
    with time_machine.travel(NOW - timedelta(minutes=10), tick=False):
        young = make_endpoint(cast.project, name="Young")
    record(young, [(NOW - timedelta(minutes=10 - k), True, 20.0) for k in range(10)])

    with time_machine.travel(NOW, tick=False):
        response = pages.as_user(cast.owner).get(f"/endpoints/{young.pk}")

    text = visible_text(response)
    assert "Uptime 100.0000 %, downtime 0 s of 10 min watched (10 checks)." in text
    shown = [cells(fragment(response, f'<tr data-tier="{t}">')) for t in (99.9, 99.95, 99.99)]
    assert [row[2] for row in shown] == [
        "0.6 s (43 min 12 s a month)",
        "0.3 s (21 min 36 s a month)",
        "0.06 s (4 min 19 s a month)",
    ]
    assert [row[4] for row in shown] == ["0.6 s", "0.3 s", "0.06 s"]
    assert [row[5] for row in shown] == ["Met"] * 3


# --- Comparison -------------------------------------------------------------------------------


@pytest.fixture
def many(cast, make_endpoint, record):
    """Eleven endpoints with a few checks each."""
    with time_machine.travel(T0, tick=False):
        made = [make_endpoint(cast.project, name=f"svc {n:02}") for n in range(11)]
    for n, endpoint in enumerate(made):
        record(endpoint, series(NOW - timedelta(hours=2), NOW, slow=lambda at, n=n: 10.0 * n + 10))
    return made


def compare(pages, endpoints, **params):
    query = "&".join(f"endpoints={endpoint}" for endpoint in endpoints)
    extra = "".join(f"&{name}={value}" for name, value in params.items())
    return pages.get(f"/compare?{query}{extra}")


def compared(response):
    return re.findall(r'<tr data-endpoint="([0-9a-f-]{36})">', html(response))


@pytest.mark.parametrize("count", [1, 2, 5, 10])
def test_compare_renders_up_to_10(pages, cast, many, clock, count):
    chosen = [endpoint.pk for endpoint in many[:count]]

    response = compare(pages.as_user(cast.owner), chosen)

    assert response.status_code == 200
    assert compared(response) == [str(pk) for pk in chosen]
    assert "<svg" in fragment(response, 'id="compare-chart"', "</div>")
    for pk in chosen:
        assert f'value="{pk}" checked' in html(response)


def test_compare_figures_equal_the_api(pages, api, cast, many, clock):
    chosen = many[:3]

    response = compare(pages.as_user(cast.owner), [e.pk for e in chosen], period="7d")

    body = api.as_user(cast.owner).get(
        "/api/v1/analytics/compare",
        {"endpoints": ",".join(str(e.pk) for e in chosen), "period": "7d"},
    )
    assert body.status_code == 200, body.content
    rows = body.json()["results"]
    for endpoint, row in zip(chosen, rows, strict=True):
        shown = endpoint_row(response, endpoint)
        assert shown[2:6] == [
            ms(row["avg_ms"]),
            ms(row["p95_ms"]),
            ms(row["min_ms"]),
            ms(row["max_ms"]),
        ]
        assert shown[8] == str(row["checks"])


def test_compare_refuses_11_with_a_message(pages, cast, many, clock):
    response = compare(pages.as_user(cast.owner), [e.pk for e in many])

    assert response.status_code == 400
    assert "Pick at most 10 endpoints." in visible_text(response)
    assert compared(response) == []


def test_compare_collapses_duplicates(pages, cast, many, clock):
    first, second = many[0].pk, many[1].pk

    response = compare(pages.as_user(cast.owner), [first, second, first, str(first).upper()])

    assert response.status_code == 200
    assert compared(response) == [str(first), str(second)]


def test_eleven_mentions_of_ten_endpoints_are_fine(pages, cast, many, clock):
    chosen = [e.pk for e in many[:10]]

    response = compare(pages.as_user(cast.owner), [*chosen, chosen[0], str(chosen[1]).upper()])

    assert response.status_code == 200
    assert "Pick at most" not in visible_text(response)
    assert compared(response) == [str(pk) for pk in chosen]


@pytest.mark.parametrize(
    "bad", ["not-a-uuid", "1", "<script>", pytest.param(str(uuid.uuid4()), id="unknown-uuid")]
)
def test_compare_with_a_malformed_or_unknown_id_is_404(pages, cast, many, bad):
    response = compare(pages.as_user(cast.owner), [many[0].pk, bad])

    assert response.status_code == 404


def listed(response):
    return re.findall(r'name="endpoints" value="([0-9a-f-]{36})"', html(response))


def test_the_picker_lists_at_most_its_limit_and_says_how_many_match(pages, cast, many, monkeypatch):
    monkeypatch.setattr("monitoring.selectors.PICKER_LIMIT", 4)

    response = pages.as_user(cast.owner).get("/compare")

    assert response.status_code == 200
    assert listed(response) == [str(e.pk) for e in many[:4]]
    assert "Showing 4 of 11 endpoints: find by name to narrow them." in visible_text(response)


def test_a_picked_endpoint_past_the_limit_stays_listed_and_checked(
    pages, cast, many, clock, monkeypatch
):
    monkeypatch.setattr("monitoring.selectors.PICKER_LIMIT", 4)

    response = compare(pages.as_user(cast.owner), [many[10].pk])

    assert compared(response) == [str(many[10].pk)]
    assert listed(response) == [str(e.pk) for e in [*many[:4], many[10]]]
    assert f'value="{many[10].pk}" checked' in html(response)


def test_the_picker_finds_by_name_within_the_organization_only(pages, cast, many, make_endpoint):
    make_endpoint(cast.other_project, name="svc 10 of Globex")

    response = pages.as_user(cast.owner).get("/compare", {"q": "VC 1"})

    assert response.status_code == 200
    assert listed(response) == [str(many[10].pk)]
    assert "Globex" not in html(response)
    assert 'name="q" value="VC 1"' in html(response)
    nothing = pages.as_user(cast.owner).get("/compare", {"q": "no such name"})
    assert listed(nothing) == []
    assert 'No endpoint\'s name holds "no such name".' in visible_text(nothing)


def test_compare_without_a_choice_shows_the_picker(pages, cast, many):
    response = pages.as_user(cast.owner).get("/compare")

    assert response.status_code == 200
    assert compared(response) == []
    assert all(f'value="{e.pk}"' in html(response) for e in many)
