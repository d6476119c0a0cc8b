"""The endpoint form's locations (a box per defined location) and quorum, checked as the API
checks them."""

import pytest

from monitoring.models import Endpoint, Location
from tests.web.conftest import Markup, html, visible_text
from tests.web.test_manage_pages import browser_form

SHOWN = {"locations-shown": "1", "quorum": "majority"}


@pytest.fixture
def places(db):
    Location.objects.create(slug="eu-west", name="Europe West")
    Location.objects.create(slug="us-east", name="US East")


def _boxes(response):
    """{slug: ticked} of the location boxes."""
    markup = Markup(html(response))
    return {tag["value"]: "checked" in tag for tag in markup.find("input", name="locations")}


def test_the_new_form_offers_a_box_per_location_and_the_default_quorum(pages, cast, places):
    response = pages.as_user(cast.member).get("/endpoints/new")

    assert response.status_code == 200
    assert _boxes(response) == {"default": False, "eu-west": False, "us-east": False}
    assert 'name="quorum" id="quorum" value="majority"' in html(response)
    assert "Europe West (eu-west)" in visible_text(response)


def test_the_form_saves_locations_and_a_quorum(pages, cast, places):
    form = {**browser_form(cast.project), **SHOWN, "quorum": "2"}
    form["locations"] = ["eu-west", "us-east"]

    response = pages.as_user(cast.member).post("/endpoints/new", form)

    assert response.status_code == 302, visible_text(response)
    endpoint = Endpoint.objects.get()
    assert endpoint.locations == ["eu-west", "us-east"]
    assert endpoint.config["quorum"] == 2


def test_the_default_quorum_is_not_stored(pages, cast, places):
    form = {**browser_form(cast.project), **SHOWN, "locations": ["eu-west"]}

    response = pages.as_user(cast.member).post("/endpoints/new", form)

    assert response.status_code == 302
    assert "quorum" not in Endpoint.objects.get().config


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"locations": ["eu-west", "mars"]}, "Unknown locations: mars."),
        ({"locations": ["eu-west"], "quorum": "2"}, "locations (1)"),
        ({"quorum": "0"}, "greater than or equal to 1"),
        ({"quorum": "most"}, "Must be one of"),
    ],
)
def test_bad_locations_or_quorum_show_the_form_again(pages, cast, places, changes, message):
    form = {**browser_form(cast.project), **SHOWN, **changes}

    response = pages.as_user(cast.member).post("/endpoints/new", form)

    assert response.status_code == 400
    assert message in visible_text(response)
    assert Endpoint.objects.count() == 0
    ticked = {slug for slug, on in _boxes(response).items() if on}
    assert ticked == set(changes.get("locations", [])) - {"mars"}  # as posted; mars has none


def test_the_edit_form_shows_and_changes_the_saved_locations(pages, cast, places, make_endpoint):
    endpoint = make_endpoint(cast.project, locations=["eu-west", "us-east"], config={"quorum": 2})
    pages.as_user(cast.member)

    page = pages.get(f"/endpoints/{endpoint.pk}/edit")
    # Every box unticked, and a quorum the default location alone can meet.
    form = {**browser_form(cast.project, enabled=None), **SHOWN, "quorum": "all"}
    saved = pages.post(f"/endpoints/{endpoint.pk}/edit", form)

    assert _boxes(page) == {"default": False, "eu-west": True, "us-east": True}
    assert 'name="quorum" id="quorum" value="2"' in html(page)
    assert saved.status_code == 302, visible_text(saved)
    endpoint.refresh_from_db()
    assert endpoint.locations == []
    assert endpoint.config["quorum"] == "all"


def test_an_edit_keeping_every_box_keeps_the_options(pages, cast, places, make_endpoint):
    endpoint = make_endpoint(
        cast.project, locations=["eu-west"], config={"quorum": 1, "method": "HEAD"}
    )
    form = {**browser_form(cast.project, enabled=None, name="Renamed"), **SHOWN, "quorum": "1"}
    form["locations"] = ["eu-west"]

    response = pages.as_user(cast.member).post(f"/endpoints/{endpoint.pk}/edit", form)

    assert response.status_code == 302, visible_text(response)
    endpoint.refresh_from_db()
    assert endpoint.name == "Renamed"
    assert endpoint.locations == ["eu-west"]
    assert (endpoint.config["quorum"], endpoint.config["method"]) == (1, "HEAD")


def test_a_bad_quorum_is_shown_once_at_its_own_box_and_summed_up_pointing_there(
    pages, cast, places
):
    form = {**browser_form(cast.project), **SHOWN, "locations": ["eu-west"], "quorum": "2"}

    response = pages.as_user(cast.member).post("/endpoints/new", form)

    body = html(response)
    assert response.status_code == 400
    assert 'href="#quorum"' in body
    assert 'href="#config"' not in body
    assert visible_text(response).count("locations (1)") == 2  # the summary and the box
    assert "quorum: " not in visible_text(response)
