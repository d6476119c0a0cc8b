"""The dashboard pages of an endpoint probed from several places: a line per location with
the band across them, a per-location table, and the comparison of its locations; an
endpoint probed from one place looks as it always did."""

import re
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext

from monitoring.models import Endpoint, Location
from tests.analytics.test_by_location import seed

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


@pytest.fixture
def located(cast, make_endpoint):
    """An endpoint probed from the default location and eu-west (3 checks, 1 failure)."""
    Location.objects.create(slug="eu-west", name="Frankfurt")
    with time_machine.travel(NOW - timedelta(days=3), tick=False):
        endpoint = make_endpoint(cast.project, name="Shop")
    Endpoint.objects.filter(pk=endpoint.pk).update(locations=["default", "eu-west"])
    seed(endpoint, "eu-west", [(True, 100.0), (False, None), (True, 200.0)])
    seed(endpoint, "", [(True, 10.0), (True, 20.0), (True, 30.0), (True, 40.0)])
    return endpoint


@pytest.fixture
def signed_in(client, cast):
    client.force_login(cast.owner)
    return client


def page(client, url):
    with time_machine.travel(NOW, tick=False):
        response = client.get(url)
    assert response.status_code == 200, response.content[:500]
    return response.content.decode()


def table(html, table_id):
    found = re.search(rf'<table id="{table_id}".*?</table>', html, re.S)
    assert found, table_id
    return found.group(0)


def row(html, location):
    found = re.search(rf'<tr data-location="{location}">(.*?)</tr>', html, re.S)
    assert found, location
    return re.sub(r"<[^>]+>", " ", found.group(1)).split()


def test_a_two_location_endpoint_draws_a_line_per_location_and_the_band(signed_in, located):
    html = page(signed_in, f"/endpoints/{located.pk}")

    chart = re.search(
        r'<div class="chart-wrap chart-wide" id="response-chart">(.*?)</div>', html, re.S
    )
    assert chart
    svg = chart.group(1)
    assert 'data-label="default"' in svg
    assert 'data-label="eu-west"' in svg
    assert svg.count('data-series="compare"') == 2
    assert 'class="band spread"' in svg  # the band across them
    legend = re.search(r'<g class="legend">(.*?)</g></svg>', svg, re.S)
    assert legend
    assert ">default<" in legend.group(1)
    assert ">eu-west<" in legend.group(1)
    assert "average across locations" in legend.group(1)
    assert 'aria-labelledby="' in svg
    assert "by location" in svg


def test_a_two_location_endpoint_has_a_per_location_table(signed_in, located):
    html = page(signed_in, f"/endpoints/{located.pk}")

    locations = table(html, "location-table")
    assert locations.count("<tr data-location=") == 2
    west = row(locations, "eu-west")
    assert west[:3] == ["eu-west", "66.67", "%"]  # uptime 24 h
    assert west[5:7] == ["3", "1"]  # checks, failures
    assert "ok" in west  # its last result
    assert row(locations, "default")[:3] == ["default", "100.00", "%"]
    assert "Compare locations" in html
    recent = table(html, "check-list")
    assert ">eu-west<" in recent
    assert ">default<" in recent  # each recent check names where it ran


def test_checks_from_several_places_show_the_table_even_unlisted(signed_in, located):
    Endpoint.objects.filter(pk=located.pk).update(locations=[])

    html = page(signed_in, f"/endpoints/{located.pk}")

    assert table(html, "location-table").count("<tr data-location=") == 2


def test_a_single_location_endpoint_looks_as_before(signed_in, cast, make_endpoint):
    with time_machine.travel(NOW - timedelta(days=3), tick=False):
        endpoint = make_endpoint(cast.project, name="Blog")
    seed(endpoint, "", [(True, 10.0), (False, None)])

    html = page(signed_in, f"/endpoints/{endpoint.pk}")

    assert 'id="location-table"' not in html
    assert "Compare locations" not in html
    assert ">Location<" not in table(html, "check-list")
    assert "chart-response" in html
    assert 'data-series="compare"' not in html


def test_the_page_reads_no_query_per_location(signed_in, located):
    def queries():
        with time_machine.travel(NOW, tick=False), CaptureQueriesContext(connection) as found:
            assert signed_in.get(f"/endpoints/{located.pk}").status_code == 200
        return len(found)

    two = queries()
    for slug in ("us-east", "ap-south", "sa-east"):
        Location.objects.create(slug=slug, name=slug)
        seed(located, slug, [(True, 50.0), (False, None)])
    Endpoint.objects.filter(pk=located.pk).update(
        locations=["default", "eu-west", "us-east", "ap-south", "sa-east"]
    )

    assert queries() == two


def test_compare_by_location_puts_the_locations_side_by_side(signed_in, located):
    html = page(signed_in, f"/compare?by=location&endpoint={located.pk}&period=24h")

    side = table(html, "location-compare-table")
    assert side.count("<tr data-location=") == 2
    west = row(side, "eu-west")
    assert west[0] == "eu-west"
    assert west[1:3] == ["150", "ms"]  # average of the successes
    assert west[3:5] == ["195", "ms"]  # p95
    assert west[-3:-1] == ["3", "1"]  # checks, failures
    assert 'data-label="eu-west"' in html
    assert 'class="band spread"' in html


def test_compare_by_location_of_a_foreign_or_bad_endpoint_is_a_404(
    client, cast, located, make_endpoint
):
    client.force_login(cast.outsider)
    with time_machine.travel(NOW, tick=False):
        assert client.get(f"/compare?by=location&endpoint={located.pk}").status_code == 404
        assert client.get("/compare?by=location&endpoint=nope").status_code == 404


def test_compare_by_location_reads_no_query_per_location(signed_in, located):
    url = f"/compare?by=location&endpoint={located.pk}"
    with time_machine.travel(NOW, tick=False), CaptureQueriesContext(connection) as before:
        signed_in.get(url)
    Location.objects.create(slug="us-east", name="Virginia")
    seed(located, "us-east", [(True, 50.0)])
    with time_machine.travel(NOW, tick=False), CaptureQueriesContext(connection) as after:
        html = signed_in.get(url).content.decode()

    assert html.count("<tr data-location=") == 3
    assert len(after) == len(before)
