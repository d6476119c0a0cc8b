"""One request with several bad fields answers all of them at once, on every resource that
takes more than one field: the field checks and the rules across fields together."""

import pytest

from tests.helpers import assert_problem

ENDPOINTS = "/api/v1/endpoints"


def bad_fields(response):
    return set(assert_problem(response, 400, "validation_error")["errors"])


def test_an_endpoint_with_a_blank_name_a_bad_target_and_a_short_interval_names_all_three(api, cast):
    body = {
        "project": str(cast.project.id),
        "name": "",
        "type": "http",
        "target": "ftp://checkout.example.com",
        "interval_seconds": 1,
    }

    response = api.as_user(cast.owner).post(ENDPOINTS, body, format="json")

    assert bad_fields(response) == {"name", "target", "interval_seconds"}
    errors = response.json()["errors"]
    assert errors["interval_seconds"] == ["Ensure this value is greater than or equal to 10."]
    assert errors["target"] == ["A http target must start with http:// or https://."]


def test_field_errors_and_rules_across_fields_come_in_one_answer(api, cast):
    body = {
        "project": "not-a-uuid",
        "name": "x" * 201,
        "type": "http",
        "target": "https://checkout.example.com/health",
        "interval_seconds": 30,
        "timeout_seconds": 30,
        "config": {"method": "BREW", "colour": "red"},
        "failure_threshold": 0,
    }

    response = api.as_user(cast.owner).post(ENDPOINTS, body, format="json")

    assert bad_fields(response) == {
        "project",
        "name",
        "timeout_seconds",
        "config.method",
        "config.colour",
        "failure_threshold",
    }
    assert response.json()["errors"]["timeout_seconds"] == [
        "Must be less than the interval (30 s)."
    ]


def test_bad_locations_and_quorum_come_with_the_other_bad_fields(api, cast):
    body = {
        "project": str(cast.project.id),
        "name": "",
        "type": "http",
        "target": "https://checkout.example.com/health",
        "locations": ["nowhere", "nowhere"],
        "config": {"quorum": 0, "method": "BREW"},
        "interval_seconds": 1,
    }

    response = api.as_user(cast.owner).post(ENDPOINTS, body, format="json")

    assert bad_fields(response) == {
        "name",
        "locations",
        "config.quorum",
        "config.method",
        "interval_seconds",
    }
    assert response.json()["errors"]["locations"] == [
        "Each location once: nowhere given more than once.",
        "Unknown locations: nowhere.",
    ]


def test_a_quorum_above_the_locations_comes_with_the_other_bad_fields(api, cast):
    body = {
        "project": str(cast.project.id),
        "name": "Checkout",
        "type": "http",
        "target": "ftp://checkout.example.com",
        "config": {"quorum": 2},
        "failure_threshold": 0,
    }

    response = api.as_user(cast.owner).post(ENDPOINTS, body, format="json")

    assert bad_fields(response) == {"target", "failure_threshold", "config.quorum"}


def test_a_change_names_every_bad_field_too(api, cast, make_endpoint):
    endpoint = make_endpoint(cast.project)
    body = {"name": " ", "interval_seconds": 5, "target": "redis://cache:6379/0"}

    response = api.as_user(cast.owner).patch(f"{ENDPOINTS}/{endpoint.pk}", body, format="json")

    assert bad_fields(response) == {"name", "interval_seconds", "target"}


def test_a_bad_type_leaves_out_the_rules_that_need_it(api, cast):
    body = {"project": str(cast.project.id), "name": "", "type": "gopher", "target": "x"}

    response = api.as_user(cast.owner).post(ENDPOINTS, body, format="json")

    assert bad_fields(response) == {"name", "type"}


def test_an_omitted_timeout_is_derived_and_the_schema_says_how(api, cast):
    body = {
        "project": str(cast.project.id),
        "name": "Short",
        "type": "http",
        "target": "https://checkout.example.com/health",
        "interval_seconds": 10,
    }

    created = api.as_user(cast.owner).post(ENDPOINTS, body, format="json").json()
    schema = api.get("/api/v1/schema/", {"format": "json"}).json()

    assert created["timeout_seconds"] == 9
    timeout = schema["components"]["schemas"]["HttpEndpointRequest"]["properties"][
        "timeout_seconds"
    ]
    assert "interval_seconds - 1" in timeout["description"]
    assert "never changed" in timeout["description"]


def test_a_timeout_sent_is_refused_rather_than_changed(api, cast):
    body = {
        "project": str(cast.project.id),
        "name": "Short",
        "type": "http",
        "target": "https://checkout.example.com/health",
        "interval_seconds": 10,
        "timeout_seconds": 10,
    }

    response = api.as_user(cast.owner).post(ENDPOINTS, body, format="json")

    assert bad_fields(response) == {"timeout_seconds"}


@pytest.mark.parametrize(
    ("kind", "config", "bad_config"),
    [("email", {"addresses": ["nobody"]}, "config.addresses.0"), ("slack", {}, "config.url")],
)
def test_a_channel_names_every_bad_field(api, cast, kind, config, bad_config):
    body = {"name": "", "kind": kind, "config": config, "endpoints": ["not-a-uuid"]}

    response = api.as_user(cast.owner).post("/api/v1/notification-channels", body, format="json")

    assert bad_fields(response) == {"name", bad_config, "endpoints.0"}


def test_a_maintenance_window_names_every_bad_field(api, cast):
    body = {
        "name": "x" * 201,
        "starts_at": "2030-05-01T10:00:00Z",
        "ends_at": "2030-05-01T09:00:00Z",
        "recurrence": "daily",
        "projects": ["not-a-uuid"],
    }

    response = api.as_user(cast.owner).post("/api/v1/maintenance-windows", body, format="json")

    assert bad_fields(response) == {"name", "ends_at", "recurrence", "projects.0"}


def test_an_api_key_names_every_bad_field(api, cast):
    body = {"name": "", "scopes": ["endpoint:write"], "expires_at": "2001-01-01T00:00:00Z"}

    response = api.as_user(cast.owner).post("/api/v1/api-keys", body, format="json")

    assert bad_fields(response) == {"name", "scopes.0", "expires_at"}


def test_an_invitation_names_every_bad_field(api, cast):
    body = {"email": "not-an-address", "role": "boss", "projects": ["not-a-uuid"]}

    response = api.as_user(cast.owner).post("/api/v1/users/invite", body, format="json")

    assert bad_fields(response) == {"email", "role", "projects.0"}


def test_a_project_names_its_bad_name(api, cast):
    response = api.as_user(cast.owner).post("/api/v1/projects", {"name": ""}, format="json")

    assert bad_fields(response) == {"name"}


def test_a_user_role_change_names_its_bad_role(api, cast):
    url = f"/api/v1/users/{cast.member.pk}/role"

    response = api.as_user(cast.owner).patch(url, {"role": "boss"}, format="json")

    assert bad_fields(response) == {"role"}
