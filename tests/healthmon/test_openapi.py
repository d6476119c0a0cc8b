"""The OpenAPI document: a summary on every operation, `config` typed per endpoint type, and
request examples that the API itself accepts."""

import pytest

from monitoring.api.schema import EXAMPLE_PROJECT
from monitoring.models import EndpointType
from monitoring.validation import option_names

SCHEMA = "/api/v1/schema/"
METHODS = {"get", "post", "put", "patch", "delete"}


@pytest.fixture
def document(api, db):
    return api.get(SCHEMA, {"format": "json"}).json()


def operations(document):
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method in METHODS:
                yield path, method, operation


def test_every_operation_has_a_summary(document):
    missing = [
        f"{method.upper()} {path}"
        for path, method, operation in operations(document)
        if not operation.get("summary", "").strip()
    ]

    assert missing == []


def test_auth_operations_are_among_those_summarised(document):
    summaries = {
        path: item["post"]["summary"]
        for path, item in document["paths"].items()
        if "/auth/" in path and "post" in item
    }

    assert "/api/v1/auth/login" in summaries
    assert "JWT" in summaries["/api/v1/auth/login"]


@pytest.mark.parametrize("direction", ["", "Request"])
def test_an_endpoint_is_one_of_a_schema_per_type_chosen_by_type(document, direction):
    schemas = document["components"]["schemas"]
    endpoint = schemas[f"Endpoint{direction}"]

    assert endpoint["discriminator"]["propertyName"] == "type"
    mapping = endpoint["discriminator"]["mapping"]
    assert set(mapping) == set(EndpointType.values)
    assert len(endpoint["oneOf"]) == len(EndpointType.values)
    for endpoint_type, reference in mapping.items():
        variant = schemas[reference.rsplit("/", 1)[1]]
        kind = variant["properties"]["type"]
        type_enum = schemas[(kind.get("$ref") or kind["allOf"][0]["$ref"]).rsplit("/", 1)[1]]
        assert type_enum["enum"] == [endpoint_type]
        config = variant["properties"]["config"]
        reference = config.get("$ref") or config["allOf"][0]["$ref"]
        config_schema = schemas[reference.rsplit("/", 1)[1]]
        assert set(config_schema["properties"]) == option_names(endpoint_type)


def test_config_options_carry_the_validation_bounds_and_defaults(document):
    http = document["components"]["schemas"]["HttpConfigRequest"]["properties"]

    assert http["expected_status"]["items"] == {"type": "integer", "minimum": 100, "maximum": 599}
    assert http["expected_status"]["default"] == [200]
    assert http["degraded_above_ms"]["maximum"] == 600_000
    assert http["follow_redirects"]["default"] is True


def test_the_interval_minimum_is_the_servers(document, settings):
    fields = document["components"]["schemas"]["HttpEndpointRequest"]["properties"]

    assert fields["interval_seconds"]["minimum"] == settings.MIN_CHECK_INTERVAL
    assert fields["interval_seconds"]["default"] == 60


def request_examples(document):
    for path, method, operation in operations(document):
        content = operation.get("requestBody", {}).get("content", {})
        for name, example in content.get("application/json", {}).get("examples", {}).items():
            yield path, method, name, example["value"]


def test_there_are_request_examples_for_the_main_resources(document):
    paths = {path for path, *_ in request_examples(document)}

    assert {
        "/api/v1/endpoints",
        "/api/v1/notification-channels",
        "/api/v1/maintenance-windows",
        "/api/v1/api-keys",
        "/api/v1/projects",
        "/api/v1/users/invite",
        "/api/v1/auth/register",
    } <= paths


def test_every_request_example_is_accepted_as_it_stands(api, cast, document, settings):
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = False
    answered = []
    for path, method, name, value in request_examples(document):
        body = _with_project(value, str(cast.project.id))
        response = getattr(api.as_user(cast.owner), method)(path, body, format="json")
        answered.append((path, name, response.status_code, response.content[:300]))

    refused = [row for row in answered if row[2] not in {200, 201}]
    assert answered
    assert refused == []


def _with_project(value, project_id):
    """The example with its placeholder project id replaced by a real one."""
    if isinstance(value, dict):
        return {key: _with_project(item, project_id) for key, item in value.items()}
    return project_id if value == EXAMPLE_PROJECT else value
