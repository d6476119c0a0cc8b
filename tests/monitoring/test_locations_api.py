"""The probe locations API: `GET /locations`, an endpoint's `locations` and `config.quorum`,
and each check's `location` (with the checks' `?location=` filter).

Locations are global: every member and every key reads them. An endpoint's locations are
its organization's as the endpoint is: a foreign endpoint is a 404 as always.
"""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.urls import reverse

from apikeys.models import Scope
from monitoring.checks import CheckOutcome
from monitoring.models import CheckResult, Endpoint, Location, LocationWorker
from monitoring.probes import ProbeResult
from monitoring.validation.locations import MAX_ENDPOINT_LOCATIONS
from pipeline.checks import checks_record
from tests.helpers import assert_problem
from tests.test_admin_keys_endpoints import NUMS

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
LOCATION_FIELDS = {"id", "slug", "name", "online", "last_seen_at", "workers"}


@pytest.fixture
def places(db):
    """eu-west heard 10 s ago by two workers (one of them silent for 2 minutes), us-east
    last heard 5 minutes ago but still flagged online (the watch loop lags), ap-south never."""
    eu = Location.objects.create(slug="eu-west", name="Europe West")
    us = Location.objects.create(slug="us-east", name="US East")
    Location.objects.create(slug="ap-south", name="Asia South")
    Location.objects.filter(pk=eu.pk).update(last_seen_at=T0 - timedelta(seconds=10), online=True)
    Location.objects.filter(pk=us.pk).update(last_seen_at=T0 - timedelta(minutes=5), online=True)
    LocationWorker.objects.create(
        location=eu, hostname="probe-1.eu.internal", last_seen_at=T0 - timedelta(seconds=10)
    )
    LocationWorker.objects.create(
        location=eu, hostname="probe-2.eu.internal", last_seen_at=T0 - timedelta(minutes=2)
    )
    LocationWorker.objects.create(
        location=us, hostname="probe-1.us.internal", last_seen_at=T0 - timedelta(minutes=5)
    )


@pytest.fixture
def endpoint(cast, make_endpoint):
    return make_endpoint(cast.project)


def _body(cast, **fields):
    return {
        "project": str(cast.project.id),
        "name": "Checkout",
        "type": "http",
        "target": "https://checkout.example.com/health",
        **fields,
    }


# --- GET /locations ----------------------------------------------------------------------


def test_locations_are_listed_by_slug_with_liveness_computed_now(api, cast, places):
    with time_machine.travel(T0, tick=False):
        response = api.as_user(cast.member).get("/api/v1/locations")

    assert response.status_code == 200
    page = response.json()
    assert page["count"] == 3
    rows = {row["slug"]: row for row in page["results"]}
    assert [row["slug"] for row in page["results"]] == ["ap-south", "eu-west", "us-east"]
    assert set(rows["eu-west"]) == LOCATION_FIELDS
    assert rows["eu-west"]["name"] == "Europe West"
    assert rows["eu-west"]["online"] is True
    assert rows["eu-west"]["workers"] == 1  # the other worker is silent for 2 minutes
    assert rows["eu-west"]["last_seen_at"] == "2030-01-01T11:59:50Z"
    # The stored flag says online; five minutes of silence says otherwise.
    assert rows["us-east"]["online"] is False
    assert rows["us-east"]["workers"] == 0
    assert rows["ap-south"] == {**rows["ap-south"], "online": False, "last_seen_at": None}


def test_a_location_never_shows_its_workers_host_names(api, cast, places):
    with time_machine.travel(T0, tick=False):
        listed = api.as_user(cast.owner).get("/api/v1/locations")
        one = api.as_user(cast.owner).get("/api/v1/locations/eu-west")

    assert "internal" not in listed.content.decode()
    assert "internal" not in one.content.decode()


def test_one_location_is_read_by_its_slug(api, cast, places):
    with time_machine.travel(T0, tick=False):
        response = api.as_user(cast.member).get("/api/v1/locations/eu-west")
        unknown = api.get("/api/v1/locations/mars")

    assert response.status_code == 200
    assert response.json()["slug"] == "eu-west"
    assert response.json()["workers"] == 1
    assert_problem(unknown, 404, "not_found")


def test_locations_are_global_every_organization_sees_them_all(api, cast, places):
    mine = api.as_user(cast.owner).get("/api/v1/locations").json()
    theirs = api.as_user(cast.outsider).get("/api/v1/locations").json()

    assert mine == theirs
    assert mine["count"] == 3


def test_locations_are_paginated_like_other_lists(api, cast, places):
    page = api.as_user(cast.member).get("/api/v1/locations?page_size=2").json()

    assert page["count"] == 3
    assert len(page["results"]) == 2
    assert page["next"]
    assert_problem(api.get("/api/v1/locations?page_size=0"), 400, "validation_error")


def test_locations_need_authentication(api, places):
    assert_problem(api.get("/api/v1/locations"), 401, "not_authenticated")
    assert_problem(api.get("/api/v1/locations/eu-west"), 401, "not_authenticated")


@pytest.mark.parametrize("scope", list(Scope.values))
def test_every_key_reads_locations_whatever_its_scope(api, cast, make_key, places, scope):
    api.with_key(make_key(cast.member, scope))

    assert api.get("/api/v1/locations").status_code == 200
    assert api.get("/api/v1/locations/eu-west").status_code == 200


def test_locations_are_read_only(api, cast, places):
    api.as_user(cast.owner)

    assert api.post("/api/v1/locations", {"slug": "x", "name": "X"}).status_code == 405
    assert api.delete("/api/v1/locations/eu-west").status_code == 405
    assert Location.objects.count() == 3


def test_the_location_list_makes_a_fixed_number_of_queries(
    api, cast, places, django_assert_max_num_queries
):
    for n in range(20):
        Location.objects.create(slug=f"extra-{n}", name=f"Extra {n}")
    api.as_user(cast.member)

    with django_assert_max_num_queries(6):
        assert api.get("/api/v1/locations").status_code == 200


# --- An endpoint's locations and quorum -----------------------------------------------------


def test_an_endpoint_is_created_with_locations_and_a_quorum(api, cast, places):
    body = _body(cast, locations=["eu-west", "us-east", "default"], config={"quorum": 2})

    response = api.as_user(cast.member).post("/api/v1/endpoints", body)

    assert response.status_code == 201, response.content
    assert response.json()["locations"] == ["eu-west", "us-east", "default"]
    assert response.json()["config"]["quorum"] == 2
    stored = Endpoint.objects.get()
    assert stored.locations == ["eu-west", "us-east", "default"]
    assert stored.config["quorum"] == 2


def test_without_locations_an_endpoint_uses_the_default_location(api, cast):
    response = api.as_user(cast.member).post("/api/v1/endpoints", _body(cast))

    assert response.status_code == 201, response.content
    assert response.json()["locations"] == []
    # The quorum is stored only when given: its default (majority) is every reader's.
    assert "quorum" not in response.json()["config"]
    listed = api.get("/api/v1/endpoints").json()["results"][0]
    assert listed["locations"] == []


@pytest.mark.parametrize("quorum", ["any", "majority", "all", 1, 2, "2"])
def test_each_form_of_quorum_is_taken(api, cast, places, quorum):
    body = _body(cast, locations=["eu-west", "us-east"], config={"quorum": quorum})

    response = api.as_user(cast.member).post("/api/v1/endpoints", body)

    assert response.status_code == 201, response.content
    expected = int(quorum) if str(quorum).isdecimal() else quorum
    assert Endpoint.objects.get().config["quorum"] == expected


@pytest.mark.parametrize(
    ("locations", "message"),
    [
        (["eu-west", "mars", "venus"], "Unknown locations: mars, venus."),
        (["eu-west", "eu-west"], "Each location once: eu-west given more than once."),
        ("eu-west", 'Expected a list of items but got type "str".'),
        ([""], "This field may not be blank."),
        (
            [f"extra-{n}" for n in range(MAX_ENDPOINT_LOCATIONS + 1)],
            f"Ensure this field has no more than {MAX_ENDPOINT_LOCATIONS} elements.",
        ),
    ],
)
def test_bad_locations_are_refused_naming_the_field(api, cast, places, locations, message):
    for n in range(MAX_ENDPOINT_LOCATIONS + 1):
        Location.objects.create(slug=f"extra-{n}", name=f"Extra {n}")

    response = api.as_user(cast.member).post("/api/v1/endpoints", _body(cast, locations=locations))

    problem = assert_problem(response, 400, "validation_error")
    assert [key.split(".")[0] for key in problem["errors"]] == ["locations"]
    assert message in str(problem["errors"])
    assert Endpoint.objects.count() == 0


@pytest.mark.parametrize("quorum", [0, -1, True, False, "most", "", None, 1.5, [2], {"n": 2}])
def test_a_bad_quorum_is_refused_naming_it(api, cast, places, quorum):
    body = _body(cast, locations=["eu-west", "us-east"], config={"quorum": quorum})

    response = api.as_user(cast.member).post("/api/v1/endpoints", body)

    problem = assert_problem(response, 400, "validation_error")
    assert list(problem["errors"]) == ["config.quorum"]
    assert Endpoint.objects.count() == 0


@pytest.mark.parametrize(
    ("locations", "quorum", "count"),
    [([], 2, 1), (["eu-west", "us-east"], 3, 2), (["default"], 2, 1)],
)
def test_a_quorum_above_the_locations_is_refused(api, cast, places, locations, quorum, count):
    body = _body(cast, locations=locations, config={"quorum": quorum})

    response = api.as_user(cast.member).post("/api/v1/endpoints", body)

    problem = assert_problem(response, 400, "validation_error")
    assert f"locations ({count})" in problem["errors"]["config.quorum"][0]
    assert Endpoint.objects.count() == 0


def test_every_bad_field_is_named_at_once(api, cast, places):
    body = _body(
        cast,
        locations=["mars"],
        config={"quorum": 0, "method": "PUT"},
        interval_seconds=1,
    )

    response = api.as_user(cast.member).post("/api/v1/endpoints", body)

    problem = assert_problem(response, 400, "validation_error")
    assert {"locations", "config.quorum", "config.method", "interval_seconds"} <= set(
        problem["errors"]
    )


def test_changing_the_locations_checks_the_quorum_kept(api, cast, places, make_endpoint):
    endpoint = make_endpoint(
        cast.project, locations=["eu-west", "us-east", "ap-south"], config={"quorum": 3}
    )
    api.as_user(cast.member)

    response = api.patch(f"/api/v1/endpoints/{endpoint.id}", {"locations": ["eu-west"]})

    problem = assert_problem(response, 400, "validation_error")
    assert "locations (1)" in problem["errors"]["config.quorum"][0]
    endpoint.refresh_from_db()
    assert endpoint.locations == ["eu-west", "us-east", "ap-south"]

    both = {"locations": ["eu-west"], "config": {"quorum": "all"}}
    response = api.patch(f"/api/v1/endpoints/{endpoint.id}", both)
    assert response.status_code == 200, response.content
    assert response.json()["locations"] == ["eu-west"]
    assert response.json()["config"]["quorum"] == "all"


def test_a_quorum_alone_is_checked_against_the_locations_kept(api, cast, places, make_endpoint):
    endpoint = make_endpoint(cast.project, locations=["eu-west", "us-east"])
    api.as_user(cast.member)

    refused = api.patch(f"/api/v1/endpoints/{endpoint.id}", {"config": {"quorum": 3}})
    taken = api.patch(f"/api/v1/endpoints/{endpoint.id}", {"config": {"quorum": 2}})

    assert (
        "locations (2)"
        in assert_problem(refused, 400, "validation_error")["errors"]["config.quorum"][0]
    )
    assert taken.status_code == 200, taken.content
    endpoint.refresh_from_db()
    assert endpoint.config["quorum"] == 2


def test_a_change_of_locations_makes_the_endpoint_due_now(api, cast, places, make_endpoint):
    endpoint = make_endpoint(cast.project)
    Endpoint.objects.filter(pk=endpoint.pk).update(next_check_at=T0 + timedelta(hours=1))

    with time_machine.travel(T0, tick=False):
        response = api.as_user(cast.member).patch(
            f"/api/v1/endpoints/{endpoint.id}", {"locations": ["eu-west"]}
        )

    assert response.status_code == 200, response.content
    assert response.json()["next_check_at"] == "2030-01-01T12:00:00Z"


def test_an_unrelated_change_keeps_locations_of_a_since_deleted_location(
    api, cast, places, make_endpoint
):
    endpoint = make_endpoint(cast.project, locations=["eu-west", "ap-south"])
    Location.objects.filter(slug="ap-south").delete()

    response = api.as_user(cast.member).patch(
        f"/api/v1/endpoints/{endpoint.id}", {"name": "Renamed"}
    )

    assert response.status_code == 200, response.content
    assert response.json()["locations"] == ["eu-west", "ap-south"]


def test_heartbeats_take_no_locations_and_no_quorum(api, cast, places):
    body = {
        "project": str(cast.project.id),
        "name": "Nightly",
        "type": "heartbeat",
        "interval_seconds": 3600,
    }
    api.as_user(cast.member)

    refused = api.post("/api/v1/endpoints", {**body, "locations": ["eu-west"]})
    no_quorum = api.post("/api/v1/endpoints", {**body, "config": {"quorum": "any"}})
    taken = api.post("/api/v1/endpoints", {**body, "locations": []})

    problem = assert_problem(refused, 400, "validation_error")
    assert "takes no locations" in problem["errors"]["locations"][0]
    assert "config.quorum" in assert_problem(no_quorum, 400, "validation_error")["errors"]
    assert taken.status_code == 201, taken.content
    assert taken.json()["locations"] == []


def test_an_endpoint_with_locations_becomes_a_heartbeat_only_without_them(
    api, cast, places, make_endpoint
):
    endpoint = make_endpoint(cast.project, locations=["eu-west"])
    api.as_user(cast.member)
    change = {"type": "heartbeat", "target": "", "interval_seconds": 3600}

    refused = api.patch(f"/api/v1/endpoints/{endpoint.id}", change)

    assert "locations" in assert_problem(refused, 400, "validation_error")["errors"]
    endpoint.refresh_from_db()
    assert endpoint.type == "http"


def test_a_foreign_endpoints_locations_are_not_reachable(api, cast, places, make_endpoint):
    theirs = make_endpoint(cast.other_project, locations=["eu-west"])

    response = api.as_user(cast.owner).patch(
        f"/api/v1/endpoints/{theirs.id}", {"locations": ["us-east"]}
    )

    assert_problem(response, 404, "not_found")
    theirs.refresh_from_db()
    assert theirs.locations == ["eu-west"]


# --- Checks carry their location ------------------------------------------------------------


def _checks(endpoint):
    """One check from the default location, two from eu-west, at T0, T0+1m, T0+2m."""
    for n, location in enumerate(["", "eu-west", "eu-west"]):
        at = T0 + timedelta(minutes=n)
        outcome = CheckOutcome(endpoint.pk, at, at, ProbeResult(n != 2, 12.0, "HTTP 200", ""))
        checks_record(outcomes=[outcome])
        CheckResult.objects.filter(endpoint=endpoint, checked_at=at).update(location=location)


def test_each_check_names_its_location(api, cast, places, endpoint):
    _checks(endpoint)

    page = api.as_user(cast.member).get(f"/api/v1/endpoints/{endpoint.id}/checks").json()

    assert [c["location"] for c in page["results"]] == ["eu-west", "eu-west", "default"]


@pytest.mark.parametrize(("slug", "count"), [("eu-west", 2), ("default", 1), ("us-east", 0)])
def test_checks_are_filtered_by_location(api, cast, places, endpoint, slug, count):
    _checks(endpoint)

    response = api.as_user(cast.member).get(
        f"/api/v1/endpoints/{endpoint.id}/checks?location={slug}"
    )

    assert response.status_code == 200
    assert response.json()["count"] == count
    assert {c["location"] for c in response.json()["results"]} <= {slug}


def test_an_unknown_location_filter_is_a_400_named_with_other_bad_filters(
    api, cast, places, endpoint
):
    response = api.as_user(cast.member).get(
        f"/api/v1/endpoints/{endpoint.id}/checks?location=mars&ok=maybe"
    )

    problem = assert_problem(response, 400, "validation_error")
    assert "Unknown location: mars." in problem["errors"]["location"][0]
    assert "ok" in problem["errors"]


def test_a_foreign_endpoints_checks_stay_hidden_with_a_location_filter(
    api, cast, places, make_endpoint
):
    theirs = make_endpoint(cast.other_project)

    response = api.as_user(cast.owner).get(f"/api/v1/endpoints/{theirs.id}/checks?location=eu-west")

    assert_problem(response, 404, "not_found")


# --- The schema --------------------------------------------------------------------------


def test_the_schema_describes_locations_quorum_and_a_checks_location(api, cast):
    schema = api.as_user(cast.owner).get("/api/v1/schema/?format=json").json()

    assert "/api/v1/locations" in schema["paths"]
    one = schema["paths"]["/api/v1/locations/{id}"]["get"]
    assert [(p["name"], p["schema"]["type"]) for p in one["parameters"]] == [("id", "string")]
    location = schema["components"]["schemas"]["Location"]["properties"]
    assert set(location) == LOCATION_FIELDS
    http = schema["components"]["schemas"]["HttpEndpoint"]["properties"]
    assert http["locations"]["type"] == "array"
    quorum = schema["components"]["schemas"]["HttpConfig"]["properties"]["quorum"]
    assert {"type": "string", "enum": ["any", "majority", "all"]} in quorum["oneOf"]
    assert "quorum" not in schema["components"]["schemas"]["HeartbeatConfig"]["properties"]
    checks = schema["components"]["schemas"]["CheckResult"]["properties"]
    assert "location" in checks


# --- The Django admin ---------------------------------------------------------------------


def _admin_form(**fields):
    return {
        "name": "Website",
        "interval_seconds": 60,
        "timeout_seconds": 10,
        "failure_threshold": 2,
        "recovery_threshold": 1,
        "sla_target": "99.9",
        **{f"{inline}-{n}_FORMS": "0" for inline in ("checks", "incidents") for n in NUMS},
        **fields,
    }


def test_the_admin_edits_an_endpoints_locations_as_the_api_checks_them(
    staff_client, cast, places, make_endpoint
):
    endpoint = make_endpoint(cast.project, locations=["eu-west", "us-east"], config={"quorum": 2})
    url = reverse("admin:monitoring_endpoint_change", args=[endpoint.pk])

    page = staff_client.get(url).content.decode()
    unknown = staff_client.post(url, _admin_form(locations="eu-west, mars"))
    below = staff_client.post(url, _admin_form(locations="eu-west"))
    taken = staff_client.post(url, _admin_form(locations="us-east, ap-south, default"))

    assert 'value="eu-west, us-east"' in page
    assert unknown.status_code == 200
    assert "Unknown locations: mars." in unknown.content.decode()
    assert below.status_code == 200
    assert "locations (1)" in below.content.decode()
    assert taken.status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.locations == ["us-east", "ap-south", "default"]


def test_the_admin_shows_and_filters_checks_by_location(staff_client, cast, places, endpoint):
    _checks(endpoint)
    url = reverse("admin:monitoring_checkresult_changelist")

    everything = staff_client.get(url).content.decode()
    europe = staff_client.get(url, {"location": "eu-west"})
    default = staff_client.get(url, {"location": "default"})

    assert "Europe West" in everything  # a filter choice, from the defined locations
    assert europe.status_code == default.status_code == 200
    assert len(europe.context["cl"].result_list) == 2
    assert len(default.context["cl"].result_list) == 1
    assert "eu-west" in europe.content.decode()


def test_the_admin_will_not_delete_a_location_an_endpoint_lists(
    staff_client, cast, places, make_endpoint
):
    make_endpoint(cast.project, locations=["eu-west"])
    listed, unused = (Location.objects.get(slug=slug) for slug in ("eu-west", "us-east"))

    refused = staff_client.post(
        reverse("admin:monitoring_location_delete", args=[listed.pk]), {"post": "yes"}
    )
    allowed = staff_client.post(
        reverse("admin:monitoring_location_delete", args=[unused.pk]), {"post": "yes"}
    )

    assert refused.status_code == 403  # its endpoint would silently stop being probed there
    assert allowed.status_code == 302
    assert set(Location.objects.values_list("slug", flat=True)) >= {"eu-west"}
    assert not Location.objects.filter(slug="us-east").exists()


def test_the_admin_endpoint_page_names_each_latest_checks_location(
    staff_client, cast, places, endpoint
):
    _checks(endpoint)

    page = staff_client.get(reverse("admin:monitoring_endpoint_change", args=[endpoint.pk]))

    cells = page.content.decode()
    assert cells.count(">eu-west<") == 2
    assert cells.count(">default<") >= 1
