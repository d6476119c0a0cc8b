"""Limits: oversized, overlong, overdeep, overlong-listed, overflowing and ill-encoded input.

Every such request answers a 4xx problem document within a second or two (the bound only
catches hangs), never a 500, and changes no row. The operations that take a body and the
query parameters are read from the OpenAPI schema, so a new route is covered the day it
appears (or fails, asking for a valid body to start from).
"""

import json
import uuid
from urllib.parse import quote, urlencode

import pytest
from django.conf import settings

from accounts.models import Project, Role
from monitoring.targets import MAX_TARGET_LENGTH
from tests.helpers import PASSWORD, assert_problem
from tests.routes import api_routes

MAX_PAGE_SIZE = 500
HUGE = (2**63, -(2**63), 10**100)
# Raw JSON numbers Python reads as inf, nan or a float, none of them an integer.
# (1e2 is 100: JSON has one number type, and DRF takes an integral float as an integer.)
NON_INTEGERS = ("1e400", "-1e400", "NaN", "Infinity", "1.5")
NOT_JSON = ("NaN", "Infinity")  # refused by the parser, before any field sees them
BAD_STRINGS = {"NUL": "a\x00b", "lone surrogate": "a\ud800b"}


@pytest.fixture(autouse=True)
def _no_auth_throttle(settings):
    """The auth routes are probed many times here; their throttle has tests of its own."""
    settings.AUTH_THROTTLE_RATE = "100000/minute"


@pytest.fixture
def owner(api, world):
    """A's owner, sending to A's own objects: only the input itself can be refused."""
    api.as_user(world.cast.owner)
    return world


def valid_bodies(world):
    """A body each operation would accept from A's owner (or, for the mailed-token routes,
    refuse for the token alone); the limit tests change one field of it."""
    project = str(world.cast.project.id)
    return {
        ("POST", "/api/v1/projects"): {"name": "Fresh"},
        ("PATCH", "/api/v1/projects/{id}"): {"name": "Fresh"},
        ("POST", "/api/v1/endpoints"): {
            "project": project,
            "name": "Fresh",
            "type": "http",
            "target": "https://x.test/",
            "config": {"headers": {"X-Probe": "1"}, "expected_status": [200]},
        },
        ("PATCH", "/api/v1/endpoints/{id}"): {"name": "Fresh"},
        ("POST", "/api/v1/api-keys"): {"name": "Fresh", "scopes": ["admin"]},
        ("POST", "/api/v1/users/invite"): {
            "email": "fresh@acme.test",
            "role": Role.MEMBER,
            "projects": [project],
        },
        ("PUT", "/api/v1/users/{id}/projects"): {"projects": [project]},
        ("PATCH", "/api/v1/users/{id}/role"): {"role": Role.ADMIN},
        ("POST", "/api/v1/auth/register"): {
            "email": "fresh@new.test",
            "password": PASSWORD,
            "organization_name": "Fresh",
        },
        ("POST", "/api/v1/auth/login"): {"email": "owner@acme.test", "password": PASSWORD},
        ("POST", "/api/v1/auth/forgot-password"): {"email": "owner@acme.test"},
        ("POST", "/api/v1/auth/reset-password"): {"token": "t", "password": PASSWORD},
        ("POST", "/api/v1/auth/accept-invite"): {"token": "t", "password": PASSWORD},
        ("POST", "/api/v1/auth/change-password"): {
            "current_password": PASSWORD,
            "new_password": "n3w-Pa55word!",
        },
        ("POST", "/api/v1/auth/verify-email"): {"token": "t"},
        ("POST", "/api/v1/notification-channels"): {
            "name": "Fresh",
            "kind": "email",
            "config": {"addresses": ["ops@acme.test"]},
            "projects": [project],
        },
        ("PATCH", "/api/v1/notification-channels/{id}"): {"name": "Fresh"},
        ("POST", "/api/v1/maintenance-windows"): {
            "name": "Fresh",
            "starts_at": "2030-05-01T10:00:00Z",
            "ends_at": "2030-05-01T12:00:00Z",
            "projects": [project],
        },
        ("PATCH", "/api/v1/maintenance-windows/{id}"): {"name": "Fresh"},
        ("POST", "/api/v1/escalation-policies"): {
            "name": "Fresh",
            "steps": [
                {"after_minutes": 0, "channels": [str(world.targets["notification-channel"].pk)]}
            ],
            "projects": [project],
        },
        ("PATCH", "/api/v1/escalation-policies/{id}"): {"name": "Fresh"},
        ("POST", "/api/v1/incidents"): {
            "title": "Fresh",
            "endpoints": [str(world.targets["endpoint"].id)],
            "impact": "major_outage",
            "message": "Fresh",
        },
        ("PATCH", "/api/v1/incidents/{id}"): {"title": "Fresh"},
        ("POST", "/api/v1/incidents/{id}/updates"): {"status": "identified", "message": "Fresh"},
        ("POST", "/api/v1/incidents/{id}/notes"): {"text": "Fresh"},
        ("POST", "/api/v1/status-pages"): {
            "name": "Fresh",
            "slug": "fresh",
            "sections": [{"name": "Core", "endpoints": [str(world.targets["endpoint"].pk)]}],
        },
        ("PATCH", "/api/v1/status-pages/{id}"): {"name": "Fresh"},
    }


def fill(world, template):
    """The path of a template, its `{id}` one of A's objects."""
    if "{id}" not in template:
        return template
    owned = {"endpoints": world.targets["endpoint"], "projects": world.cast.project}
    owned["users"] = world.cast.member
    owned["notification-channels"] = world.targets["notification-channel"]
    owned["maintenance-windows"] = world.targets["maintenance-window"]
    owned["incidents"] = world.targets["incident"]
    owned["status-pages"] = world.targets["status-page"]
    owned["escalation-policies"] = world.targets["escalation-policy"]
    return template.format(id=owned[template.removeprefix("/api/v1/").split("/")[0]].pk)


def body_operations(schema, world):
    """(METHOD, path, valid body, request schema) of every operation that takes a body."""
    operations, resolve = schema
    bodies = valid_bodies(world)
    found = []
    for method, template, operation in operations:
        if "requestBody" in operation:
            assert (method, template) in bodies, f"add a valid body for {method} {template}"
            request_schema = resolve(
                operation["requestBody"]["content"]["application/json"]["schema"]
            )
            found.append(
                (method, fill(world, template), bodies[(method, template)], request_schema)
            )
    assert len(found) >= 15
    return found


def refused(response, *statuses):
    """A 4xx problem document with one of these statuses; returns the body."""
    assert response.status_code in statuses, response.content[:500]
    assert response["Content-Type"] == "application/problem+json"
    return response.json()


def errors_of(response):
    return refused(response, 400)["errors"]


def names(field, errors):
    """Whether the errors name this field or something inside it (`config.headers`)."""
    return any(key == field or key.startswith(f"{field}.") for key in errors)


def page_of(response):
    """The page of a 200."""
    assert response.status_code == 200, response.content[:500]
    return response.json()


def refused_page_size(response):
    """A 400 naming `page_size`: a size over the contract's 500 is refused, not clamped, so
    a client that asked for more learns it at once rather than missing rows."""
    assert response.status_code == 400, response.content[:500]
    assert names("page_size", errors_of(response))


# --- Paging ---------------------------------------------------------------------------------


def test_page_size_is_capped_at_500(owner, send, unchanged):
    Project.objects.bulk_create(
        Project(organization=owner.cast.org, name=f"P{n:04}") for n in range(MAX_PAGE_SIZE + 20)
    )
    with unchanged():
        largest = page_of(send("GET", f"/api/v1/projects?page_size={MAX_PAGE_SIZE}"))
        for size in (MAX_PAGE_SIZE + 1, 100_000):
            refused_page_size(send("GET", f"/api/v1/projects?page_size={size}"))
    assert len(largest["results"]) == MAX_PAGE_SIZE
    assert largest["count"] == MAX_PAGE_SIZE + 21  # and the default project
    assert "page=2" in largest["next"]


def test_every_list_caps_page_size(owner, send, unchanged):
    # `me` is one object and `compare` the endpoints asked for (at most 10): neither is paged.
    unpaged = ("me", "compare")
    lists = [
        r for r in api_routes() if r.method == "GET" and not r.has_pk and r.action not in unpaged
    ]
    with unchanged():
        for route in lists:
            query = {"page_size": 100_000}
            refused_page_size(send("GET", f"{route.path()}?{urlencode(query)}"))


@pytest.mark.parametrize("value", [*map(str, HUGE), *NON_INTEGERS, "0", "-1", "abc", "\x00"])
def test_a_bad_page_size_is_a_400(owner, send, unchanged, value):
    with unchanged():
        refused_page_size(send("GET", f"/api/v1/projects?{urlencode({'page_size': value})}"))


@pytest.mark.parametrize("value", [*map(str, HUGE), *NON_INTEGERS, "0", "-1", "abc", "\x00"])
def test_a_bad_or_missing_page_is_refused(owner, send, unchanged, value):
    """A malformed page is a 400 (or DRF's 404 `Invalid page.`), a page past the last a 404."""
    with unchanged():
        for path in ("/api/v1/projects", "/api/v1/endpoints", "/api/v1/analytics/summary"):
            refused(send("GET", f"{path}?{urlencode({'page': value})}"), 400, 404)


# --- Body size ------------------------------------------------------------------------------


def test_a_2_mb_body_is_413_on_every_operation_that_takes_one(owner, schema, send, unchanged):
    with unchanged():
        for method, path, body, _ in body_operations(schema, owner):
            padded = {**body, "padding": "x" * 2_000_000}
            assert_problem(send(method, path, padded), 413, "payload_too_large")


def test_the_body_limit_is_exactly_the_setting(owner, send):
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    body = b'{"name": "Edge"}'

    over = send("POST", "/api/v1/projects", raw=body + b" " * (limit + 1 - len(body)))
    at = send("POST", "/api/v1/projects", raw=body + b" " * (limit - len(body)))

    assert_problem(over, 413, "payload_too_large")
    assert at.status_code == 201


# --- String lengths -------------------------------------------------------------------------

LONG_EMAIL = "a" * 64 + "@" + "b" * 63 + "." + "c" * 63 + "." + "d" * 56 + ".test"  # 254
OVER_LIMIT = {
    "name": ("x" * 200, "x" * 201),
    "organization_name": ("x" * 200, "x" * 201),
    "target": ("https://x.test/" + "a" * (MAX_TARGET_LENGTH - 15), "https://x.test/" + "a" * 2034),
    "email": (LONG_EMAIL, "a" + LONG_EMAIL),
    "password": ("p4" * 512, "p4" * 512 + "x"),
    "new_password": ("p4" * 512, "p4" * 512 + "x"),
    "current_password": ("p4" * 512, "p4" * 512 + "x"),
    "token": ("t" * 512, "t" * 513),
}


def test_strings_over_their_limit_are_refused_on_every_operation(owner, schema, send, unchanged):
    checked = set()
    with unchanged():
        for method, path, body, request_schema in body_operations(schema, owner):
            for field in request_schema["properties"]:
                if field not in OVER_LIMIT:
                    continue
                for value in (OVER_LIMIT[field][1], OVER_LIMIT[field][1] * 200):
                    response = send(method, path, {**body, field: value})
                    assert names(field, errors_of(response)), (method, path, field)
                checked.add(field)
    assert checked == set(OVER_LIMIT)


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/api/v1/projects", "name"),
        ("/api/v1/endpoints", "target"),
        ("/api/v1/users/invite", "email"),
        ("/api/v1/auth/register", "password"),
    ],
)
def test_strings_at_their_limit_are_accepted(owner, send, path, field):
    """The control: the limits are where they are documented, not below."""
    body = valid_bodies(owner)[("POST", path)]
    response = send("POST", path, {**body, field: OVER_LIMIT[field][0]})
    assert response.status_code == 201, response.content


# --- Nesting, long lists, many parameters ---------------------------------------------------


def nested(depth, leaf="1"):
    """`depth` arrays, one in the other."""
    return "[" * depth + leaf + "]" * depth


def nested_objects(depth, leaf="1"):
    """`depth` objects, one in the other."""
    return '{"a":' * depth + leaf + "}" * depth


def with_raw(body, field, raw_value):
    """The body as JSON bytes, one field's value given as raw JSON text."""
    rest = json.dumps({k: v for k, v in body.items() if k != field})
    return f'{rest[:-1]}{", " if len(rest) > 2 else ""}"{field}": {raw_value}}}'.encode()


@pytest.mark.parametrize("depth", [10_000, 1_000, 990, 900, 500, 100, 33])
def test_json_nested_deeper_than_32_levels_is_a_400_on_every_operation(
    owner, schema, send, unchanged, depth
):
    """Refused by the parser: walking it would crash code that recurses (a PATCH of an
    endpoint's config did, from about 450 levels on)."""
    with unchanged():
        for method, path, body, request_schema in body_operations(schema, owner):
            refused(send(method, path, raw=nested(depth).encode()), 400)
            for field in request_schema["properties"]:
                for value in (nested(depth - 1), nested_objects(depth - 1)):
                    response = send(method, path, raw=with_raw(body, field, value))
                    assert list(errors_of(response)) == ["non_field_errors"]
                    assert "nested too deeply" in response.json()["detail"]


def test_json_nested_32_levels_deep_reaches_the_fields(owner, send, unchanged):
    body = valid_bodies(owner)[("POST", "/api/v1/endpoints")]
    endpoint = f"/api/v1/endpoints/{owner.targets['endpoint'].id}"
    with unchanged():
        for method, path in (("POST", "/api/v1/endpoints"), ("PATCH", endpoint)):
            for value in (nested(31), nested_objects(31)):
                errors = errors_of(send(method, path, raw=with_raw(body, "config", value)))
                assert names("config", errors), errors


@pytest.mark.parametrize("depth", [10_000, 950, 500, 30])
def test_deeply_nested_config_is_a_400(owner, send, unchanged, depth):
    body = valid_bodies(owner)[("POST", "/api/v1/endpoints")]
    endpoint = f"/api/v1/endpoints/{owner.targets['endpoint'].id}"
    with unchanged():
        for config in (
            '{"headers": {"X": ' + nested(depth, '"v"') + "}}",
            '{"expected_status": ' + nested(depth) + "}",
            '{"headers": ' + nested_objects(depth, '"v"') + "}",
        ):
            for method, path in (("POST", "/api/v1/endpoints"), ("PATCH", endpoint)):
                refused(send(method, path, raw=with_raw(body, "config", config)), 400)


def test_lists_of_10000_items_are_refused(owner, send, unchanged):
    bodies = valid_bodies(owner)
    many_ids = [str(uuid.uuid4()) for _ in range(10_000)]
    member = owner.cast.member.id
    cases = [
        (
            "POST",
            "/api/v1/users/invite",
            {**bodies[("POST", "/api/v1/users/invite")], "projects": many_ids},
            "projects",
        ),
        ("PUT", f"/api/v1/users/{member}/projects", {"projects": many_ids}, "projects"),
        ("POST", "/api/v1/api-keys", {"name": "k", "scopes": ["admin"] * 10_000}, "scopes"),
        (
            "POST",
            "/api/v1/endpoints",
            endpoint_with(bodies, headers={f"X-H{i}": "v" for i in range(10_000)}),
            "config",
        ),
        (
            "POST",
            "/api/v1/endpoints",
            endpoint_with(bodies, expected_status=[200] * 10_000),
            "config",
        ),
    ]
    with unchanged():
        for method, path, body, field in cases:
            assert names(field, errors_of(send(method, path, body))), path


def test_a_body_that_is_an_array_of_10000_items_is_a_400(owner, schema, send, unchanged):
    with unchanged():
        for method, path, body, _ in body_operations(schema, owner):
            for items in ([body] * 10_000, [{}] * 10_000, list(range(10_000))):
                refused(send(method, path, items), 400, 413)  # 413: the body passed 1 MiB


def endpoint_with(bodies, **config):
    return {**bodies[("POST", "/api/v1/endpoints")], "config": config}


@pytest.mark.parametrize("count", [1_001, 10_000])
def test_a_query_with_thousands_of_parameters_is_a_400(owner, send, unchanged, count):
    lists = [r for r in api_routes() if r.method == "GET" and not r.has_pk]
    project = owner.cast.project.id
    with unchanged():
        for route in lists:
            query = "&".join([f"project={project}"] * count)
            refused(send("GET", f"{route.path()}?{query}"), 400)
        ids = ",".join(str(uuid.uuid4()) for _ in range(count))
        assert "endpoints" in errors_of(send("GET", f"/api/v1/analytics/compare?endpoints={ids}"))


# --- Numbers --------------------------------------------------------------------------------

INTEGER_FIELDS = ("interval_seconds", "timeout_seconds", "failure_threshold", "recovery_threshold")


def test_huge_and_non_integer_numbers_are_400s(owner, send, unchanged):
    body = valid_bodies(owner)[("POST", "/api/v1/endpoints")]
    endpoint = f"/api/v1/endpoints/{owner.targets['endpoint'].id}"
    with unchanged():
        for number in [*map(str, HUGE), *NON_INTEGERS]:
            field_named = number not in NOT_JSON
            for field in (*INTEGER_FIELDS, "sla_target"):
                raw = with_raw(body, field, number)
                assert field_named <= (
                    field in errors_of(send("POST", "/api/v1/endpoints", raw=raw))
                )
                raw = f'{{"{field}": {number}}}'.encode()
                assert field_named <= (field in errors_of(send("PATCH", endpoint, raw=raw)))
            for config in (
                f'{{"expected_status": [{number}]}}',
                f'{{"degraded_above_ms": {number}}}',
            ):
                raw = with_raw(body, "config", config)
                errors = errors_of(send("POST", "/api/v1/endpoints", raw=raw))
                assert field_named <= names("config", errors), errors
            raw = f'{{"name": "k", "scopes": ["admin"], "expires_at": {number}}}'.encode()
            assert field_named <= (
                "expires_at" in errors_of(send("POST", "/api/v1/api-keys", raw=raw))
            )


@pytest.mark.parametrize(
    "value", ["99999-01-01T00:00:00Z", "0000-01-01T00:00:00Z", "1e400", "\x00"]
)
def test_times_out_of_the_calendar_are_400s(owner, send, unchanged, value):
    endpoint = owner.targets["endpoint"].id
    with unchanged():
        for path in (f"/api/v1/endpoints/{endpoint}/checks", "/api/v1/analytics/summary"):
            assert "from" in errors_of(send("GET", f"{path}?{urlencode({'from': value})}"))
        body = {"name": "k", "scopes": ["admin"], "expires_at": value}
        assert "expires_at" in errors_of(send("POST", "/api/v1/api-keys", body))


# --- Encoding -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", BAD_STRINGS)
def test_nul_bytes_and_lone_surrogates_are_400s_in_every_body_string(
    owner, schema, send, unchanged, kind
):
    bad = BAD_STRINGS[kind]
    _, resolve = schema
    checked = 0
    with unchanged():
        for method, path, body, request_schema in body_operations(schema, owner):
            for field, prop in request_schema["properties"].items():
                prop = resolve(prop)
                items = resolve(prop.get("items", {}))
                if prop.get("type") == "string" or items.get("type") == "string":
                    value = [bad] if prop.get("type") == "array" else bad
                    refused(send(method, path, {**body, field: value}), 400)
                    checked += 1
            if kind == "lone surrogate":  # not even in the name of a field nobody reads
                refused(send(method, path, {**body, bad: "value"}), 400)
    assert checked >= 25


@pytest.mark.parametrize("kind", BAD_STRINGS)
def test_nul_bytes_and_lone_surrogates_are_400s_in_endpoint_config(owner, send, unchanged, kind):
    bad = BAD_STRINGS[kind]
    bodies = valid_bodies(owner)
    with unchanged():
        for config in (
            {"headers": {"X-Probe": bad}},
            {"headers": {bad: "v"}},
            {"body_contains": bad},
            {"method": bad},
            {bad: 1},
        ):
            refused(send("POST", "/api/v1/endpoints", endpoint_with(bodies, **config)), 400)


@pytest.mark.parametrize("encoded", ["%00", "a%00b", "%ED%A0%80", "%C0%80", "%FF"])
def test_nul_bytes_and_bad_utf8_in_query_parameters_never_fail(
    owner, schema, send, unchanged, encoded
):
    operations, _ = schema
    endpoint = owner.targets["endpoint"].id
    with unchanged():
        for method, template, operation in operations:
            if method != "GET" or ("{id}" in template and "checks" not in template):
                continue
            path = template.format(id=endpoint)
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "query":
                    response = send("GET", f"{path}?{quote(parameter['name'])}={encoded}")
                    assert response.status_code in (200, 400, 404), (path, parameter["name"])


def test_invalid_utf8_in_a_body_is_a_400(owner, send, unchanged):
    with unchanged():
        for raw in (
            b'{"name": "\xff\xfe"}',
            b'{"name": "\xed\xa0\x80"}',
            b"\xef\xbb\xbf{}",
            b"\x00",
        ):
            refused(send("POST", "/api/v1/projects", raw=raw), 400)
