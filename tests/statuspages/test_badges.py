"""Badges, no login (API-CONTRACT.md, "Status pages and badges"): `/badge/<badge_key>/...`
for an endpoint and for a public status page, as SVG and as shields.io endpoint JSON."""

import re
from datetime import UTC, datetime, timedelta
from typing import Any
from xml.etree import ElementTree

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils.http import http_date, parse_http_date

from alerts.models import MaintenanceWindow
from monitoring.models import Endpoint, Incident, IncidentKind
from statuspages.badge_figures import uptime_colour, uptime_text
from statuspages.badges import Badge, text_width
from statuspages.models import Component, Section, StatusPage, Visibility
from statuspages.views import badges as badge_views

T0 = datetime(2030, 5, 1, 8, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
NOW = T0 + 100 * MINUTE
SVG_NS = "{http://www.w3.org/2000/svg}"
KINDS = ("status", "uptime", "response-time")
SECRET_NAME = "Billing Core Zephyr"
SECRET_HOST = "db-7.internal.acme-corp.test"
SECRET_ERROR = "password authentication failed for user zephyr_admin"


def at(moment: datetime) -> Any:
    return time_machine.travel(moment, tick=False)


@pytest.fixture
def checked(cast, make_endpoint, record):
    """Make an endpoint at T0 checked every minute to NOW, 120 ms each, failing at the
    given minutes (one failure opens an incident, one success closes it)."""

    def build(fails: range = range(0), project=None, **fields):
        fields.setdefault("name", SECRET_NAME)
        fields.setdefault("target", f"https://{SECRET_HOST}:8443/health")
        with at(T0):
            endpoint = make_endpoint(
                project or cast.project, failure_threshold=1, recovery_threshold=1, **fields
            )
        checks = [
            (T0 + i * MINUTE, i not in fails, 120.0, SECRET_ERROR if i in fails else "")
            for i in range(100)
        ]
        record(endpoint, checks)
        return Endpoint.objects.get(pk=endpoint.pk)

    return build


@pytest.fixture
def page(cast):
    """Make a status page of some endpoints (public unless told otherwise)."""

    def build(*endpoints: Endpoint, **fields) -> StatusPage:
        fields.setdefault("name", "Acme Secret Page")
        fields.setdefault("slug", f"acme-{StatusPage.objects.count()}")
        made = StatusPage.objects.create(organization=cast.org, **fields)
        section = Section.objects.create(page=made, name="Core")
        for position, endpoint in enumerate(endpoints):
            Component.objects.create(
                page=made, section=section, endpoint=endpoint, position=position
            )
        return made

    return build


def svg(client, key: str, kind: str = "status", **query: str) -> str:
    response = client.get(f"/badge/{key}/{kind}.svg", query)
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "image/svg+xml"
    return response.content.decode()


def shield(client, key: str, kind: str = "status", **query: str) -> dict[str, Any]:
    response = client.get(f"/badge/{key}/{kind}.json", query)
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/json"
    return response.json()


def set_status(endpoint: Endpoint, status: str) -> None:
    Endpoint.objects.filter(pk=endpoint.pk).update(status=status)


# --- Endpoint badges -----------------------------------------------------------------------


def test_an_endpoint_status_badge_is_an_svg_badge_and_a_shields_endpoint_json(client, checked):
    endpoint = checked()

    with at(NOW):
        drawn = svg(client, endpoint.badge_key)
        assert shield(client, endpoint.badge_key) == {
            "schemaVersion": 1,
            "label": "status",
            "message": "up",
            "color": "brightgreen",
        }

    assert drawn.startswith('<svg xmlns="http://www.w3.org/2000/svg"')
    assert "<title>status: up</title>" in drawn
    assert 'aria-label="status: up"' in drawn
    assert 'fill="#4c1"' in drawn


@pytest.mark.parametrize(
    ("status", "message", "colour"),
    [
        ("up", "up", "brightgreen"),
        ("degraded", "degraded", "yellow"),
        ("late", "late", "orange"),
        ("down", "down", "red"),
        ("paused", "paused", "lightgrey"),
        ("pending", "pending", "lightgrey"),
    ],
)
def test_an_endpoint_status_badge_says_its_status_in_its_colour(
    client, checked, status, message, colour
):
    endpoint = checked()
    set_status(endpoint, status)

    with at(NOW):
        assert shield(client, endpoint.badge_key)["message"] == message
        assert shield(client, endpoint.badge_key)["color"] == colour


def test_an_endpoint_in_a_maintenance_window_shows_maintenance(client, cast, checked):
    endpoint, other = checked(), checked()
    set_status(endpoint, "down")
    window = MaintenanceWindow.objects.create(
        organization=cast.org, starts_at=NOW - MINUTE, ends_at=NOW + MINUTE
    )
    window.endpoints.set([endpoint])

    with at(NOW):
        assert shield(client, endpoint.badge_key)["message"] == "maintenance"
        assert shield(client, endpoint.badge_key)["color"] == "blue"
        assert shield(client, other.badge_key)["message"] == "up"
    with at(NOW + 2 * MINUTE):
        assert shield(client, endpoint.badge_key)["message"] == "down"


def test_an_endpoint_uptime_badge_is_time_weighted_over_the_period(client, checked):
    endpoint = checked(fails=range(50, 52))  # down 2 of the 100 minutes watched

    with at(NOW):
        assert shield(client, endpoint.badge_key, "uptime") == {
            "schemaVersion": 1,
            "label": "uptime 30d",
            "message": "98.00%",
            "color": "yellow",
        }
        for period in ("24h", "7d", "30d", "90d"):
            found = shield(client, endpoint.badge_key, "uptime", period=period)
            assert (found["label"], found["message"]) == (f"uptime {period}", "98.00%")
        assert "98.00%" in svg(client, endpoint.badge_key, "uptime", period="90d")


def test_an_endpoint_without_failures_has_full_uptime_and_none_checked_has_no_data(
    client, cast, checked, make_endpoint
):
    perfect = checked()
    with at(T0):
        fresh = make_endpoint(cast.project)

    with at(NOW):
        assert shield(client, perfect.badge_key, "uptime")["message"] == "100%"
        assert shield(client, perfect.badge_key, "uptime")["color"] == "brightgreen"
        assert shield(client, fresh.badge_key, "uptime")["message"] == "no data"
        assert shield(client, fresh.badge_key, "uptime")["color"] == "lightgrey"
        assert shield(client, fresh.badge_key, "response-time")["message"] == "no data"


@pytest.mark.parametrize(
    ("uptime", "text", "colour"),
    [
        (100.0, "100%", "brightgreen"),
        (99.999, "99.99%", "brightgreen"),
        (99.95, "99.95%", "brightgreen"),
        (99.9, "99.90%", "brightgreen"),
        (99.89, "99.89%", "green"),
        (99.0, "99.00%", "green"),
        (98.99, "98.99%", "yellow"),
        (95.0, "95.00%", "yellow"),
        (94.9, "94.90%", "orange"),
        (90.0, "90.00%", "orange"),
        (89.99, "89.99%", "red"),
        (0.0, "0.00%", "red"),
    ],
)
def test_uptime_is_cut_to_two_decimals_and_coloured_by_thresholds(uptime, text, colour):
    assert uptime_text(uptime) == text
    assert uptime_colour(uptime) == colour


def test_an_endpoint_response_time_badge_is_the_24_hour_mean(client, checked):
    endpoint = checked(fails=range(50, 52))

    with at(NOW):
        assert shield(client, endpoint.badge_key, "response-time") == {
            "schemaVersion": 1,
            "label": "response time",
            "message": "120 ms",
            "color": "brightgreen",
        }
        assert ">120 ms</text>" in svg(client, endpoint.badge_key, "response-time")
    # A day later the checks have left the span.
    with at(NOW + timedelta(hours=25)):
        assert shield(client, endpoint.badge_key, "response-time")["message"] == "no data"


# --- Status page badges ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("statuses", "message", "colour"),
    [
        (("up", "up"), "operational", "brightgreen"),
        (("up", "pending"), "operational", "brightgreen"),
        (("up", "degraded"), "degraded", "yellow"),
        (("up", "down"), "partial outage", "orange"),
        (("down", "down"), "major outage", "red"),
    ],
)
def test_a_page_status_badge_follows_the_page_overall_state(
    client, checked, page, statuses, message, colour
):
    endpoints = [checked() for _ in statuses]
    for endpoint, status in zip(endpoints, statuses, strict=True):
        set_status(endpoint, status)
    made = page(*endpoints)

    with at(NOW):
        assert shield(client, made.badge_key) == {
            "schemaVersion": 1,
            "label": "status",
            "message": message,
            "color": colour,
        }


def test_a_page_status_badge_counts_maintenance_and_public_declared_incidents(
    client, cast, checked, page
):
    first, second = checked(), checked()
    made = page(first, second)
    window = MaintenanceWindow.objects.create(
        organization=cast.org, starts_at=NOW - MINUTE, ends_at=NOW + MINUTE
    )
    with at(NOW):
        assert shield(client, made.badge_key)["message"] == "maintenance"

    window.delete()
    hidden = Incident.objects.create(
        organization=cast.org,
        kind=IncidentKind.MANUAL,
        title="Internal",
        impact="major_outage",
        public=False,
        started_at=NOW - MINUTE,
    )
    hidden.endpoints.set([first])
    with at(NOW + 20 * MINUTE):  # past the badge cache
        assert shield(client, made.badge_key)["message"] == "operational"

    told = Incident.objects.create(
        organization=cast.org,
        kind=IncidentKind.MANUAL,
        title="Slow logins",
        impact="degraded_performance",
        started_at=NOW - MINUTE,
    )
    told.endpoints.set([second])
    with at(NOW + 40 * MINUTE):
        assert shield(client, made.badge_key)["message"] == "degraded"


def test_a_page_uptime_badge_adds_up_its_components_watched_time(client, checked, page):
    # Down 4 of 100 minutes and 0 of 100: 4 of 200 watched minutes, 98%.
    made = page(checked(fails=range(50, 54)), checked())

    with at(NOW):
        assert shield(client, made.badge_key, "uptime", period="7d") == {
            "schemaVersion": 1,
            "label": "uptime 7d",
            "message": "98.00%",
            "color": "yellow",
        }


def test_a_page_response_time_badge_is_served_only_when_the_page_shows_response_times(
    client, checked, page
):
    endpoint = checked()
    showing = page(endpoint, show_response_times=True)
    hiding = page(endpoint, show_response_times=False)

    with at(NOW):
        assert shield(client, showing.badge_key, "response-time")["message"] == "120 ms"
        assert client.get(f"/badge/{hiding.badge_key}/response-time.svg").status_code == 404
        assert client.get(f"/badge/{hiding.badge_key}/response-time.json").status_code == 404
        assert shield(client, hiding.badge_key)["message"] == "operational"


def test_a_page_without_components_is_operational_with_no_data(client, page):
    made = page()

    assert shield(client, made.badge_key)["message"] == "operational"
    assert shield(client, made.badge_key, "uptime")["message"] == "no data"


# --- Refusals --------------------------------------------------------------------------------


@pytest.mark.parametrize("visibility", [Visibility.PRIVATE, Visibility.PASSWORD])
def test_a_page_that_is_not_public_has_badges_answering_as_an_unknown_key(
    client, checked, page, visibility
):
    made = page(checked(), visibility=visibility, show_response_times=True)

    for kind in KINDS:
        for fmt in ("svg", "json"):
            hidden = client.get(f"/badge/{made.badge_key}/{kind}.{fmt}")
            unknown = client.get(f"/badge/{'x' * 22}/{kind}.{fmt}")
            assert hidden.status_code == unknown.status_code == 404
            assert hidden.content == unknown.content
            assert hidden["Content-Type"] == unknown["Content-Type"]


def test_an_unknown_key_is_404_a_not_found_image_or_problem_details(client, db):
    image = client.get("/badge/AAAAAAAAAAAAAAAAAAAAAA/status.svg")
    data = client.get("/badge/AAAAAAAAAAAAAAAAAAAAAA/uptime.json")

    assert image.status_code == 404
    assert image["Content-Type"] == "image/svg+xml"
    assert "<title>badge: not found</title>" in image.content.decode()
    assert data.status_code == 404
    assert data["Content-Type"] == "application/problem+json"
    assert data.json()["code"] == "not_found"


@pytest.mark.parametrize("key", ["a" * 65, "key.with.dots", "k%20ey", "%3Cscript%3E"])
def test_a_key_of_the_wrong_shape_is_404_without_a_query(client, db, key):
    with CaptureQueriesContext(connection) as queries:
        response = client.get(f"/badge/{key}/status.svg")

    assert response.status_code == 404
    assert len(queries) == 0


def test_an_unknown_kind_or_format_is_no_badge_route(client, checked):
    endpoint = checked()

    assert client.get(f"/badge/{endpoint.badge_key}/name.svg").status_code == 404
    assert client.get(f"/badge/{endpoint.badge_key}/status.png").status_code == 404


@pytest.mark.parametrize("period", ["1y", "", "30D", "24h ", "1h"])
def test_a_bad_period_is_400_problem_details_naming_it(client, checked, period):
    endpoint = checked()

    for fmt in ("svg", "json"):
        response = client.get(f"/badge/{endpoint.badge_key}/uptime.{fmt}", {"period": period})
        assert response.status_code == 400
        assert response["Content-Type"] == "application/problem+json"
        body = response.json()
        assert body["code"] == "validation_error"
        assert list(body["errors"]) == ["period"]


def test_every_bad_parameter_is_named_at_once_and_period_only_matters_to_uptime(client, checked):
    endpoint = checked()

    response = client.get(
        f"/badge/{endpoint.badge_key}/uptime.json", {"period": "1y", "label": "x" * 41}
    )
    assert response.status_code == 400
    assert set(response.json()["errors"]) == {"period", "label"}
    assert client.get(f"/badge/{endpoint.badge_key}/status.json", {"period": "1y"}).status_code == (
        200
    )


def test_only_get_and_head_are_allowed(client, checked):
    endpoint = checked()
    url = f"/badge/{endpoint.badge_key}/status.svg"

    assert client.head(url).status_code == 200
    assert client.post(url).status_code == 405
    assert client.delete(url).status_code == 405


# --- Labels ----------------------------------------------------------------------------------


def test_a_label_of_ones_own_replaces_the_default_in_both_formats(client, checked):
    endpoint = checked()

    with at(NOW):
        assert shield(client, endpoint.badge_key, label="My API")["label"] == "My API"
        assert shield(client, endpoint.badge_key, "uptime", label="SLA")["label"] == "SLA"
        drawn = svg(client, endpoint.badge_key, label="My API")
        assert "<title>My API: up</title>" in drawn
        # Blank is the default.
        assert shield(client, endpoint.badge_key, label="  ")["label"] == "status"


XSS = [
    "<script>alert(1)</script>",
    '"><svg onload=alert(1)>',
    "' onmouseover='alert(1)",
    "</text><a href='javascript:x'>x</a>",
    "&lt;already&gt; & <b>",
]


@pytest.mark.parametrize("label", XSS)
def test_a_label_is_escaped_in_the_svg_and_plain_data_in_the_json(client, checked, label):
    endpoint = checked()

    with at(NOW):
        drawn = svg(client, endpoint.badge_key, label=label)
        data = shield(client, endpoint.badge_key, label=label)

    assert data["label"] == label
    assert "<script" not in drawn
    assert "<a" not in drawn
    assert "<svg onload" not in drawn
    assert "<b>" not in drawn
    tree = ElementTree.fromstring(drawn)  # noqa: S314 - our own answer, parsed to inspect it
    elements = [element.tag.removeprefix(SVG_NS) for element in tree.iter()]
    assert elements == [
        "svg", "title", "linearGradient", "stop", "stop", "clipPath", "rect", "g", "rect",
        "rect", "rect", "g", "text", "text", "text", "text",
    ]  # fmt: skip
    attributes = {name for element in tree.iter() for name in element.attrib}
    assert not [name for name in attributes if name.lower().startswith("on")]
    assert tree.find(f"{SVG_NS}title").text == f"{label}: up"
    assert [text.text for text in tree.iter(f"{SVG_NS}text")][::2] == [label, "up"]


@pytest.mark.parametrize("label", ["x" * 41, "tab\there", "null\x00", "bidi\u202eflip", "bell\x07"])
def test_a_label_too_long_or_with_control_characters_is_400(client, checked, label):
    endpoint = checked()

    response = client.get(f"/badge/{endpoint.badge_key}/status.svg", {"label": label})

    assert response.status_code == 400
    assert list(response.json()["errors"]) == ["label"]


def test_a_label_of_40_letters_from_any_script_is_drawn(client, checked):
    endpoint = checked()

    with at(NOW):
        assert shield(client, endpoint.badge_key, label="é" * 40)["label"] == "é" * 40
        assert "状态" in svg(client, endpoint.badge_key, label="状态")


# --- The drawing -----------------------------------------------------------------------------


def test_the_svg_has_no_script_style_link_or_external_resource(client, checked):
    endpoint = checked()

    with at(NOW):
        for kind in KINDS:
            drawn = svg(client, endpoint.badge_key, kind)
            for forbidden in ("<script", "<style", "style=", "href", "<image", "<foreignObject"):
                assert forbidden not in drawn
            assert re.findall(r"https?://[^\"]+", drawn) == ["http://www.w3.org/2000/svg"]
            assert all(ref.startswith("#") for ref in re.findall(r"url\(([^)]*)\)", drawn))


def test_the_badge_width_follows_the_text_width_table():
    narrow = Badge("status", "up", "brightgreen").as_svg()
    wide = Badge("status", "major outage", "red").as_svg()

    def width(drawn: str) -> float:
        found = re.match(r'<svg [^>]*width="([0-9.]+)"', drawn)
        assert found
        return float(found.group(1))

    assert width(wide) - width(narrow) == pytest.approx(
        text_width("major outage") - text_width("up"), abs=0.1
    )
    assert width(narrow) == pytest.approx(text_width("status") + text_width("up") + 20, abs=0.1)
    # Verdana's figures share one width, so an uptime keeps its size as it moves.
    assert text_width("99.95%") == text_width("11.11%")
    assert text_width("W") > text_width("i")
    assert text_width("状") > text_width("a")


# --- Caching -----------------------------------------------------------------------------------


def test_badges_carry_cache_headers_and_an_etag_answered_with_304(client, checked):
    endpoint = checked()
    url = f"/badge/{endpoint.badge_key}/status.svg"

    with at(NOW):
        first = client.get(url)
        again = client.get(url, HTTP_IF_NONE_MATCH=first["ETag"])
        other = client.get(url, HTTP_IF_NONE_MATCH='"something-else"')

    assert first["Cache-Control"] == f"public, max-age={badge_views.MAX_AGE}"
    assert first["X-Content-Type-Options"] == "nosniff"
    assert first["ETag"].startswith('"')
    assert again.status_code == 304
    assert again.content == b""
    assert again["ETag"] == first["ETag"]
    assert again["Cache-Control"] == f"public, max-age={badge_views.MAX_AGE}"
    assert other.status_code == 200


def test_the_json_twin_has_its_own_etag_and_may_be_read_from_any_origin(client, checked):
    endpoint = checked()

    with at(NOW):
        image = client.get(f"/badge/{endpoint.badge_key}/status.svg")
        data = client.get(f"/badge/{endpoint.badge_key}/status.json")
        again = client.get(
            f"/badge/{endpoint.badge_key}/status.json", HTTP_IF_NONE_MATCH=data["ETag"]
        )

    assert data["ETag"] != image["ETag"]
    assert data["Access-Control-Allow-Origin"] == "*"
    assert data["X-Content-Type-Options"] == "nosniff"
    assert again.status_code == 304


@pytest.mark.parametrize("fmt", ["svg", "json"])
def test_badges_carry_last_modified_answered_with_304(client, checked, fmt):
    endpoint = checked()
    url = f"/badge/{endpoint.badge_key}/status.{fmt}"

    with at(NOW):
        first = client.get(url)
        since = first["Last-Modified"]
        held = client.get(url, HTTP_IF_MODIFIED_SINCE=since)
        later = client.get(url, HTTP_IF_MODIFIED_SINCE=http_date(NOW.timestamp() + 60))
        older = client.get(url, HTTP_IF_MODIFIED_SINCE=http_date(NOW.timestamp() - 60))
        # If-None-Match, when sent, is the one judged (RFC 9110 13.2.2).
        stale_tag = client.get(
            url, HTTP_IF_MODIFIED_SINCE=since, HTTP_IF_NONE_MATCH='"something-else"'
        )

    assert first.status_code == 200
    assert parse_http_date(since) == int(NOW.timestamp())
    assert held.status_code == 304
    assert held.content == b""
    assert held["Last-Modified"] == since
    assert held["ETag"] == first["ETag"]
    assert later.status_code == 304
    assert older.status_code == 200
    assert older.content == first.content
    assert stale_tag.status_code == 200


def test_a_badge_keeps_its_last_modified_until_it_says_something_else(client, checked):
    endpoint = checked()
    url = f"/badge/{endpoint.badge_key}/status.svg"
    fresh = badge_views.CACHE_SECONDS

    with at(NOW):
        first = client.get(url)
    # Computed again past its cache period, saying the same: still the first's date.
    with at(NOW + timedelta(seconds=3 * fresh)):
        same = client.get(url, HTTP_IF_MODIFIED_SINCE=first["Last-Modified"])
        again = client.get(url)
    set_status(endpoint, "down")
    with at(NOW + timedelta(seconds=6 * fresh)):
        changed = client.get(url, HTTP_IF_MODIFIED_SINCE=first["Last-Modified"])

    assert same.status_code == 304
    assert again["Last-Modified"] == first["Last-Modified"]
    assert changed.status_code == 200
    assert ">down<" in changed.content.decode()
    assert parse_http_date(changed["Last-Modified"]) == int(NOW.timestamp()) + 6 * fresh
    assert changed["ETag"] != first["ETag"]


def test_a_badge_is_computed_once_per_cache_period_and_then_follows_the_state(client, checked):
    endpoint = checked()
    url = f"/badge/{endpoint.badge_key}/status.json"
    fresh = badge_views.CACHE_SECONDS
    assert fresh + badge_views.MAX_AGE <= 10  # a change shows within 10 s, as on the page

    with at(NOW):
        assert client.get(url).json()["message"] == "up"
    set_status(endpoint, "down")
    with at(NOW + timedelta(seconds=fresh - 1)), CaptureQueriesContext(connection) as queries:
        assert client.get(url).json()["message"] == "up"
        # A label of one's own is drawn over the cached figure, not computed again.
        assert client.get(url, {"label": "api"}).json()["message"] == "up"
    assert len(queries) == 0
    with at(NOW + timedelta(seconds=fresh + 1)):
        assert client.get(url).json()["message"] == "down"


class _ReadsFail:
    def get(self, *args: Any, **kwargs: Any) -> None:
        raise ConnectionError("cache down")

    set = get


class _WritesFail(_ReadsFail):
    def get(self, *args: Any, **kwargs: Any) -> None:
        return None


@pytest.mark.parametrize("broken", [_ReadsFail, _WritesFail])
def test_a_badge_still_answers_while_the_cache_is_down(client, checked, monkeypatch, broken):
    endpoint = checked()
    monkeypatch.setattr("statuspages.views.badges.cache", broken())

    with at(NOW):
        assert shield(client, endpoint.badge_key)["message"] == "up"


def test_unknown_keys_are_not_cached(client, checked, page):
    made = page(checked(), visibility=Visibility.PRIVATE)
    url = f"/badge/{made.badge_key}/status.json"

    with at(NOW):
        assert client.get(url).status_code == 404
        StatusPage.objects.filter(pk=made.pk).update(visibility=Visibility.PUBLIC)
        assert client.get(url).status_code == 200


# --- Queries -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_a_page_badge_costs_the_same_queries_for_one_component_or_six(
    client, cast, checked, page, kind
):
    small = page(checked(), show_response_times=True)
    big = page(*[checked() for _ in range(6)], show_response_times=True)
    window = MaintenanceWindow.objects.create(  # so that maintenance is read in full
        organization=cast.org, starts_at=T0, ends_at=NOW + MINUTE
    )
    window.endpoints.set([small.components.get().endpoint])

    counts = []
    with at(NOW):
        for made in (small, big):
            with CaptureQueriesContext(connection) as queries:
                shield(client, made.badge_key, kind)
            counts.append(len(queries))

    assert counts[0] == counts[1]
    assert counts[0] <= 9


# --- Nothing private ---------------------------------------------------------------------------


def test_no_badge_reveals_name_target_host_or_error_text(client, cast, checked, page):
    endpoint = checked(fails=range(50, 52))
    set_status(endpoint, "down")
    made = page(endpoint, show_response_times=True)
    secrets = [SECRET_NAME, SECRET_HOST, "8443", SECRET_ERROR, "zephyr", made.name, cast.org.name]
    secrets += [str(endpoint.pk), str(made.pk), made.slug, "Acme"]

    with at(NOW):
        for key in (endpoint.badge_key, made.badge_key):
            for kind in KINDS:
                for fmt in ("svg", "json"):
                    response = client.get(f"/badge/{key}/{kind}.{fmt}", {"period": "24h"})
                    assert response.status_code == 200
                    # The ETag is a hash of the body: hex digits that may spell a port.
                    headers = {k: v for k, v in response.headers.items() if k != "ETag"}
                    text = response.content.decode() + str(headers)
                    for secret in secrets:
                        assert secret.lower() not in text.lower(), (key, kind, fmt, secret)


# --- The endpoint API shows the URLs -------------------------------------------------------------


def test_the_endpoint_api_shows_its_badge_urls_which_answer(api, client, cast, checked, settings):
    endpoint = checked()
    settings.WEB_BASE_URL = "https://hm.example.test"

    response = api.as_user(cast.member).get(f"/api/v1/endpoints/{endpoint.pk}")

    assert response.status_code == 200, response.content
    badges = response.json()["badges"]
    base = f"https://hm.example.test/badge/{endpoint.badge_key}"
    assert badges == {
        "status_svg": f"{base}/status.svg",
        "status_json": f"{base}/status.json",
        "uptime_svg": f"{base}/uptime.svg",
        "uptime_json": f"{base}/uptime.json",
        "response_time_svg": f"{base}/response-time.svg",
        "response_time_json": f"{base}/response-time.json",
    }
    with at(NOW):
        for url in badges.values():
            assert client.get(url.removeprefix("https://hm.example.test")).status_code == 200
