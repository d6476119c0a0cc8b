"""The endpoint page of a degraded endpoint: amber bands where it was slow on both charts,
and the assertion results of its latest check."""

import json
import re
from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from monitoring.models import Endpoint, EndpointStatus
from tests.web.conftest import form_values, html, visible_text

T0 = datetime(2026, 11, 2, 12, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)

pytestmark = pytest.mark.django_db


@pytest.fixture
def slow(cast, make_endpoint, record):
    """Fast for 10 minutes, slow for 20, fast again for 30: degraded 12:10-12:30."""
    with time_machine.travel(T0 - MINUTE, tick=False):
        endpoint = make_endpoint(cast.project, name="Checkout", config={"degraded_above_ms": 500})
    checks = [(T0 + m * MINUTE, True, 900.0 if 10 <= m < 30 else 100.0) for m in range(60)]
    record(endpoint, checks)
    return endpoint


def test_the_endpoint_page_draws_amber_bands_on_both_charts(pages, cast, slow, make_endpoint):
    slow.refresh_from_db()
    assert slow.status == EndpointStatus.UP
    with time_machine.travel(T0 + timedelta(hours=1), tick=False):
        html = pages.as_user(cast.member).get(f"/endpoints/{slow.id}?period=24h").content.decode()

    # Each chart is drawn twice (desktop and phone): one band and one legend swatch each.
    assert html.count('class="degraded slow"') == 8
    assert html.count("Degraded from 2026-11-02 12:10") == 4
    assert "degraded (slow)" in html


def test_no_amber_band_when_never_degraded(pages, cast, make_endpoint, record):
    with time_machine.travel(T0 - MINUTE, tick=False):
        endpoint = make_endpoint(cast.project, config={"degraded_above_ms": 500})
    record(endpoint, [(T0 + m * MINUTE, True, 100.0) for m in range(10)])
    with time_machine.travel(T0 + timedelta(hours=1), tick=False):
        html = pages.as_user(cast.member).get(f"/endpoints/{endpoint.id}?period=24h").content
    assert b"degraded slow" not in html


# --- The assertion editor, without JavaScript --------------------------------------------

NEW = "/endpoints/new"


def _new_form(pages, cast):
    response = pages.as_user(cast.owner).get(f"{NEW}?project={cast.project.pk}")
    values = form_values(response, NEW)
    values.update(name="Payments", type="http", target="https://payments.test/health")
    return values


def test_the_form_offers_empty_rows(pages, cast):
    values = _new_form(pages, cast)

    assert values["assertions-shown"] == "1"
    assert [values[f"assertion-{n}-source"] for n in range(3)] == ["", "", ""]
    assert "assertion-3-source" not in values


def test_rows_create_the_assertions_in_order(pages, cast):
    values = _new_form(pages, cast)
    values.update(
        {
            "assertion-0-source": "status_code",
            "assertion-0-comparison": "equals",
            "assertion-0-target": "200",
            # row 1 left empty: dropped
            "assertion-2-source": "json",
            "assertion-2-property": "status",
            "assertion-2-comparison": "equals",
            "assertion-2-target": "ok",
        }
    )

    response = pages.post(NEW, values)

    assert response.status_code == 302, html(response)[:2000]
    endpoint = Endpoint.objects.get()
    assert endpoint.config["assertions"] == [
        {"source": "status_code", "property": "", "comparison": "equals", "target": 200},
        {"source": "json", "property": "status", "comparison": "equals", "target": "ok"},
    ]
    # The edit page shows them as rows, then three empty ones; the options box without them.
    edit = f"/endpoints/{endpoint.pk}/edit"
    again = form_values(pages.get(edit), edit)
    assert [again[f"assertion-{n}-source"] for n in range(5)] == ["status_code", "json", "", "", ""]
    assert "assertions" not in json.loads(again["config"])


def test_a_bad_row_is_named_on_its_row_and_nothing_is_stored(pages, cast):
    values = _new_form(pages, cast)
    values.update(
        {
            "assertion-0-source": "body",
            "assertion-0-comparison": "contains",
            "assertion-0-target": "ok",
            "assertion-1-source": "body",
            "assertion-1-comparison": "less_than",
            "assertion-1-target": "5",
        }
    )

    response = pages.post(NEW, values)

    assert response.status_code == 400
    text = visible_text(response)
    assert "comparison: body supports only: equals, not_equals, contains" in text
    assert "assertions[1].comparison" in text  # in the errors listed at the top
    assert Endpoint.objects.count() == 0
    shown = form_values(response, NEW)
    assert shown["assertion-1-comparison"] == "less_than"  # kept as chosen
    assert shown["config"] == ""  # the options box as typed


def test_emptying_a_row_removes_its_assertion(pages, cast, make_endpoint):
    assertions = [
        {"source": "status_code", "comparison": "equals", "target": 200},
        {"source": "body", "comparison": "contains", "target": "ok"},
    ]
    endpoint = make_endpoint(cast.project, config={"assertions": assertions})
    edit = f"/endpoints/{endpoint.pk}/edit"
    values = form_values(pages.as_user(cast.owner).get(edit), edit)
    for part in ("source", "property", "comparison", "target"):
        values[f"assertion-0-{part}"] = ""

    assert pages.post(edit, values).status_code == 302

    endpoint.refresh_from_db()
    assert endpoint.config["assertions"] == [
        {"source": "body", "property": "", "comparison": "contains", "target": "ok"}
    ]


# --- The latest check's assertion results on the endpoint page ----------------------------


def test_the_endpoint_page_lists_the_latest_checks_assertion_results(
    pages, cast, make_endpoint, record
):
    assertions = [
        {"source": "status_code", "comparison": "equals", "target": 200},
        {"source": "json", "property": "status", "comparison": "equals", "target": "ok"},
        {"source": "response_time", "comparison": "less_than", "target": 500},
    ]
    with time_machine.travel(T0 - MINUTE, tick=False):
        endpoint = make_endpoint(cast.project, config={"assertions": assertions})
    error = 'assertion 2 failed: json status equals "ok", got "degraded"'
    record(endpoint, [(T0, True, 20.0), (T0 + MINUTE, False, 20.0, error)])

    with time_machine.travel(T0 + timedelta(hours=1), tick=False):
        response = pages.as_user(cast.member).get(f"/endpoints/{endpoint.id}")

    table = re.search(r'<table id="assertion-results".*?</table>', html(response), re.S)
    assert table
    rows = re.findall(r"<tr>(.*?)</tr>", table.group(0), re.S)[1:]
    cells = [re.sub(r"<[^>]+>", "", row).split("\n")[0] for row in rows]
    assert len(cells) == 3
    assert "status_code equals 200" in cells[0]
    assert "met" in cells[0]
    assert "json status equals ok" in cells[1]
    assert "failed" in cells[1]
    assert "&quot;degraded&quot;" in cells[1]
    assert "not checked" in cells[2]


def test_no_assertion_results_for_an_endpoint_without_assertions(pages, cast, slow):
    with time_machine.travel(T0 + timedelta(hours=1), tick=False):
        response = pages.as_user(cast.member).get(f"/endpoints/{slow.id}")
    assert 'id="assertion-results"' not in html(response)
