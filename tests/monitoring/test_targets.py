"""Endpoint targets and configs through the API: validation per type, secrets masked on the
way out and encrypted at rest, masked secrets kept on PATCH only for the same service, and
the interval and timeout rules.
"""

import json

import pytest
from django.db import connection

from monitoring.models import Endpoint
from tests.helpers import assert_problem

ENDPOINTS = "/api/v1/endpoints"

PG_TARGET = "postgresql://app:s3cr3t-pw@db.test:5432/app?sslmode=require&password=other-secret"
PG_MASKED = "postgresql://app:****@db.test:5432/app?sslmode=require&password=****"
AUTH_CONFIG = {"headers": {"Authorization": "Bearer tok-123", "X-Trace": "visible"}}


def create(api, cast, **body):
    body.setdefault("project", str(cast.project.id))
    body.setdefault("name", "Service")
    body.setdefault("type", "http")
    body.setdefault("target", "https://example.test/health")
    return api.post(ENDPOINTS, body, format="json")


def created(api, cast, **body):
    response = create(api, cast, **body)
    assert response.status_code == 201, response.content
    return response.json()


def patch(api, endpoint_id, **body):
    return api.patch(f"{ENDPOINTS}/{endpoint_id}", body, format="json")


def raw_rows():
    with connection.cursor() as cursor:
        cursor.execute("SELECT target, target_masked, config FROM monitoring_endpoint")
        return cursor.fetchall()


def assert_invalid(response, *fields):
    body = assert_problem(response, 400, "validation_error")
    for field in fields:
        assert field in body["errors"], body["errors"]
    return body["errors"]


def config_errors(response):
    errors = assert_invalid(response)
    keys = [key for key in errors if key == "config" or key.startswith("config.")]
    assert keys, errors
    return errors


# --- 1. Targets that do not fit -------------------------------------------------------------

BAD_TARGETS = [
    # A scheme of another kind.
    ("http", "ftp://files.test/health"),
    ("graphql", "ws://api.test/graphql"),
    ("grpc", "http://grpc.test:50051"),
    ("postgresql", "mysql://db.test:3306/app"),
    ("mysql", "postgresql://db.test:5432/app"),
    ("redis", "http://cache.test:6379"),
    ("websocket", "https://ws.test/socket"),
    ("elasticsearch", "grpc://es.test:9200"),
    ("custom", "ftp://files.test:21"),
    # Schemes that read files, talk raw TCP or run code.
    ("http", "file:///etc/passwd"),
    ("custom", "file:///etc/passwd"),
    ("http", "gopher://evil.test:70/_SET%20x"),
    ("http", "javascript:alert(1)"),
    ("http", "dict://evil.test:11211/stats"),
    ("http", "example.test/health"),
    # gRPC: host:port and nothing else.
    ("grpc", "grpc://grpc.test"),
    ("grpc", "grpc://grpc.test:50051/pkg.Service/Check"),
    ("grpc", "grpcs://user:pw@grpc.test:443"),
    # Whitespace and control characters.
    ("http", " https://example.test/"),
    ("http", "https://example.test/ "),
    ("http", "https://example.test/a b"),
    ("http", "https://example.test/\tx"),
    ("http", "https://a.test/\r\nX: y"),
    ("http", "https://a.test/\nX: y"),
    ("http", "https://a.test/\x00"),
    ("http", "https://a.test/\x7f"),
    # Length and emptiness.
    ("http", "https://example.test/" + "a" * 5000),
    ("http", ""),
    ("custom", ""),
    # Host.
    ("http", "https:///path"),
    ("http", "https://"),
    ("postgresql", "postgresql://app:pw@/app"),
    ("http", "https://exa_mple-.test/"),
    ("http", "https://ex%61mple.test/"),
    # Port.
    ("http", "https://example.test:0/"),
    ("http", "https://example.test:70000/"),
    ("http", "https://example.test:http/"),
    ("http", "https://example.test:80:81/"),
    ("grpc", "grpc://grpc.test:99999"),
    # Strings that two parsers read differently.
    ("http", "https://evil.test\\@good.test/"),
    ("http", "https://evil.test\\good.test/"),
    ("http", "https://a@evil.test@good.test/"),
    ("http", "https://bücher.test/"),
    ("http", "https://\u0435xample.test/"),  # a Cyrillic e
    ("http", "http://[::1/"),
    ("http", "http://[not-an-ip]/"),
    ("http", "http://[::1]x/"),
    # Custom: host:port when not a URL.
    ("custom", "database"),
    ("custom", "db.test"),
    ("custom", "db.test:99999"),
    ("custom", "db.test:0"),
    ("custom", "db.test:port"),
    ("custom", "[::1]"),
    ("custom", "[zz::1]:6379"),
    ("custom", "db.test:5432/app"),
    # Redis: the path is the database number.
    ("redis", "redis://cache.test:6379/abc"),
    ("redis", "redis://cache.test:6379/0/extra"),
    # Database drivers read hosts and local files from the query: only harmless options.
    ("postgresql", "postgresql://app@good.test/app?host=evil.test"),
    ("postgresql", "postgresql://app@db.test/app?hostaddr=10.0.0.1"),
    ("postgresql", "postgresql://app@db.test/app?sslmode=verify-full&sslkey=/etc/shadow"),
    ("postgresql", "postgresql://app@db.test/app?service=prod"),
    ("mysql", "mysql://app@db.test/app?unix_socket=/run/mysqld.sock"),
    ("redis", "redis://cache.test:6379/0?ssl_certfile=/etc/ssl/private/key.pem"),
    # libpq reads past `#` and `@` where urllib stops: either would hide a second host.
    ("postgresql", "postgresql://app:pw@db.good.test:5432#,evil.test:5432/prod"),
    ("postgresql", "postgresql://app:2024#Winter@db.test/prod"),
    ("postgresql", "postgresql://db.good.test?password=x&sslmode=@evil.test/prod"),
    ("postgresql", "postgresql://app@db.test,evil.test/prod"),
    ("http", "https://example.test/health#section"),
    ("http", "https://example.test/users/@me"),
    ("grpc", "grpc://grpc.test:50051#x"),
]


@pytest.mark.parametrize(("endpoint_type", "target"), BAD_TARGETS)
def test_a_target_that_does_not_fit_is_refused_and_nothing_is_created(
    api, cast, endpoint_type, target
):
    api.as_user(cast.owner)

    response = create(api, cast, type=endpoint_type, target=target)

    errors = assert_invalid(response, "target")
    assert errors["target"][0]
    assert Endpoint.objects.count() == 0


def test_the_target_error_names_the_schemes_the_type_takes(api, cast):
    api.as_user(cast.owner)

    errors = assert_invalid(create(api, cast, type="grpc", target="http://g.test:1"), "target")

    assert "grpc://" in errors["target"][0]
    assert "grpcs://" in errors["target"][0]


def test_a_missing_target_is_refused(api, cast):
    api.as_user(cast.owner)

    body = {"project": str(cast.project.id), "name": "Service", "type": "http"}
    assert_invalid(api.post(ENDPOINTS, body, format="json"), "target")
    assert Endpoint.objects.count() == 0


@pytest.mark.parametrize("target", [None, 42, ["https://example.test/"], {"url": "x"}])
def test_a_target_that_is_not_a_string_is_refused(api, cast, target):
    api.as_user(cast.owner)

    assert_invalid(create(api, cast, target=target), "target")
    assert Endpoint.objects.count() == 0


# --- 2. Targets that fit --------------------------------------------------------------------

GOOD_TARGETS = [
    ("http", "https://ghp_token123@api.test/health", "https://****@api.test/health"),
    (
        "http",
        "https://example.test/h?key=k1&sig=s2&code=c3&env=prod",
        "https://example.test/h?key=****&sig=****&code=****&env=prod",
    ),
    ("postgresql", "postgresql://monitor@db.test/app", "postgresql://monitor@db.test/app"),
    ("http", "https://example.test/users/%40me", "https://example.test/users/%40me"),
    ("http", "https://example.test/health?full=1", "https://example.test/health?full=1"),
    ("http", "http://10.0.0.7:8080/", "http://10.0.0.7:8080/"),
    ("http", "http://[2001:db8::1]:8080/health", "http://[2001:db8::1]:8080/health"),
    ("http", "http://[::1]/", "http://[::1]/"),
    ("http", "HTTPS://example.test/Health", "https://example.test/Health"),
    ("http", "Https://example.test/", "https://example.test/"),
    ("http", "https://example.test/%0d%0a", "https://example.test/%0d%0a"),
    (
        "http",
        "https://hooks.test/ping?token=abc123&api_key=k-9&x=1",
        "https://hooks.test/ping?token=****&api_key=****&x=1",
    ),
    ("http", "https://bot:hunter2@example.test/", "https://bot:****@example.test/"),
    ("http", "https://xn--bcher-kva.test/", "https://xn--bcher-kva.test/"),
    ("graphql", "https://api.test/graphql", "https://api.test/graphql"),
    ("grpc", "grpc://grpc.test:50051", "grpc://grpc.test:50051"),
    ("grpc", "grpcs://grpc.test:443/", "grpcs://grpc.test:443/"),
    ("grpc", "grpc://[::1]:50051", "grpc://[::1]:50051"),
    (
        "postgresql",
        "postgresql://app:pw@db.test:5432/app",
        "postgresql://app:****@db.test:5432/app",
    ),
    ("postgresql", "postgres://app:pw@db.test/app", "postgres://app:****@db.test/app"),
    ("postgresql", "POSTGRES://db.test/app", "postgres://db.test/app"),
    ("mysql", "mysql://root:pw@mysql.test:3306/shop", "mysql://root:****@mysql.test:3306/shop"),
    ("mysql", "mariadb://maria.test/shop", "mariadb://maria.test/shop"),
    ("redis", "redis://:pw@cache.test:6379/0", "redis://:****@cache.test:6379/0"),
    ("redis", "rediss://cache.test:6380/15", "rediss://cache.test:6380/15"),
    ("redis", "redis://cache.test", "redis://cache.test"),
    ("elasticsearch", "https://elastic:pw@es.test:9200", "https://elastic:****@es.test:9200"),
    ("websocket", "ws://ws.test/socket", "ws://ws.test/socket"),
    ("websocket", "wss://ws.test/socket?session=s-1", "wss://ws.test/socket?session=****"),
    ("custom", "db.test:5432", "db.test:5432"),
    ("custom", "[::1]:6379", "[::1]:6379"),
    ("custom", "10.0.0.7:11211", "10.0.0.7:11211"),
    ("custom", "redis://:pw@cache.test:6379", "redis://:****@cache.test:6379"),
    ("custom", "https://example.test/", "https://example.test/"),
]


@pytest.mark.parametrize(("endpoint_type", "target", "shown"), GOOD_TARGETS)
def test_a_target_that_fits_is_created_and_answered_masked(api, cast, endpoint_type, target, shown):
    api.as_user(cast.owner)

    body = created(api, cast, type=endpoint_type, target=target)

    assert body["type"] == endpoint_type
    assert body["target"] == shown
    endpoint = Endpoint.objects.get()
    assert endpoint.target_masked == shown
    assert endpoint.target.lower() == target.lower()
    assert endpoint.target.split("://", 1)[0] == shown.split("://", 1)[0]


def test_a_target_of_exactly_the_maximum_length_is_accepted(api, cast):
    api.as_user(cast.owner)
    target = "https://example.test/"
    target += "a" * (2048 - len(target))

    assert created(api, cast, target=target)["target"] == target


# --- 3. Secrets masked in answers, encrypted at rest ----------------------------------------


def test_a_database_password_is_never_answered_nor_stored_in_clear(api, cast):
    api.as_user(cast.owner)

    response = create(api, cast, type="postgresql", target=PG_TARGET)
    assert response.status_code == 201
    endpoint_id = response.json()["id"]
    detail = api.get(f"{ENDPOINTS}/{endpoint_id}")
    listed = api.get(ENDPOINTS)

    for answer in (response, detail, listed):
        assert answer.status_code in (200, 201)
        assert b"s3cr3t-pw" not in answer.content
        assert b"other-secret" not in answer.content
        assert b"****" in answer.content
    assert detail.json()["target"] == PG_MASKED
    assert listed.json()["results"][0]["target"] == PG_MASKED

    [(target, target_masked, config)] = raw_rows()
    for column in (target, target_masked, config):
        assert "s3cr3t-pw" not in column
        assert "other-secret" not in column
    assert "db.test" not in target  # ciphertext, not the URL
    assert target_masked == PG_MASKED
    assert Endpoint.objects.get().target == PG_TARGET


def test_an_authorization_header_is_never_answered_nor_stored_in_clear(api, cast):
    api.as_user(cast.owner)

    response = create(api, cast, config=AUTH_CONFIG)
    assert response.status_code == 201
    endpoint_id = response.json()["id"]
    detail = api.get(f"{ENDPOINTS}/{endpoint_id}")
    listed = api.get(ENDPOINTS)

    for answer in (response, detail, listed):
        assert answer.status_code in (200, 201)
        assert b"tok-123" not in answer.content
        assert b"visible" in answer.content
    assert detail.json()["config"]["headers"] == {"Authorization": "****", "X-Trace": "visible"}
    assert listed.json()["results"][0]["config"]["headers"]["Authorization"] == "****"

    [(_, _, config)] = raw_rows()
    assert "tok-123" not in config
    assert "visible" not in config  # the whole document is ciphertext
    assert "Authorization" not in config
    assert Endpoint.objects.get().config["headers"] == AUTH_CONFIG["headers"]


@pytest.mark.parametrize(
    "header", ["Authorization", "Proxy-Authorization", "X-Api-Key", "Cookie", "X-Auth-Token"]
)
def test_secret_named_headers_are_masked(api, cast, header):
    api.as_user(cast.owner)

    body = created(api, cast, config={"headers": {header: "hidden-value", "Accept": "text/html"}})

    assert body["config"]["headers"] == {header: "****", "Accept": "text/html"}
    assert b"hidden-value" not in api.get(f"{ENDPOINTS}/{body['id']}").content


# --- 4. Masked secrets sent back on PATCH ---------------------------------------------------


@pytest.fixture
def pg_endpoint(api, cast):
    api.as_user(cast.owner)
    return created(api, cast, type="postgresql", target=PG_TARGET)


def test_sending_the_masked_target_back_keeps_the_stored_secrets(api, pg_endpoint):
    shown = api.get(f"{ENDPOINTS}/{pg_endpoint['id']}").json()["target"]
    assert shown == PG_MASKED

    response = patch(api, pg_endpoint["id"], name="Primary DB", target=shown)

    assert response.status_code == 200, response.content
    assert response.json()["name"] == "Primary DB"
    assert response.json()["target"] == PG_MASKED
    assert Endpoint.objects.get().target == PG_TARGET


def test_the_masked_target_may_change_its_path_and_plain_parameters(api, pg_endpoint):
    target = "postgresql://app:****@db.test:5432/reports?sslmode=verify-full&password=****"

    response = patch(api, pg_endpoint["id"], target=target)

    assert response.status_code == 200, response.content
    assert Endpoint.objects.get().target == (
        "postgresql://app:s3cr3t-pw@db.test:5432/reports?sslmode=verify-full&password=other-secret"
    )


@pytest.mark.parametrize(
    "target",
    [
        "postgresql://app:****@evil.test:5432/app?sslmode=require&password=****",
        "postgresql://app:****@db.test:6543/app?sslmode=require&password=****",
        "postgresql://app:****@db.test/app?sslmode=require&password=****",
        "postgresql://admin:****@db.test:5432/app?sslmode=require&password=****",
        "postgres://app:****@db.test:5432/app?sslmode=require&password=****",
        "postgresql://app:pw@evil.test:5432/app?sslmode=require&password=****",
    ],
)
def test_a_masked_secret_is_not_kept_for_another_service_or_user(api, pg_endpoint, target):
    response = patch(api, pg_endpoint["id"], target=target)

    assert_invalid(response, "target")
    endpoint = Endpoint.objects.get()
    assert endpoint.target == PG_TARGET
    assert endpoint.target_masked == PG_MASKED


@pytest.mark.parametrize(
    "target",
    [
        "postgresql://app:****@db.test:99999/app",
        "postgresql://app:****@db.test:port/app",
        "postgresql://app:****@[::1/app",
    ],
)
def test_a_masked_target_that_cannot_be_parsed_is_a_validation_error(api, pg_endpoint, target):
    response = patch(api, pg_endpoint["id"], target=target)

    assert_invalid(response, "target")
    assert Endpoint.objects.get().target == PG_TARGET


def test_a_masked_token_user_name_is_kept_on_patch(api, cast):
    api.as_user(cast.owner)
    endpoint = created(api, cast, target="https://ghp_token123@api.test/health")

    response = patch(api, endpoint["id"], target="https://****@api.test/healthz")

    assert response.status_code == 200, response.content
    assert Endpoint.objects.get().target == "https://ghp_token123@api.test/healthz"


def test_a_hidden_second_host_cannot_take_the_stored_password(api, pg_endpoint):
    for target in (
        "postgresql://app:****@db.test:5432#,evil.test:5432/app?sslmode=require&password=****",
        "postgresql://db.test?password=****&sslmode=@evil.test/app",
    ):
        response = patch(api, pg_endpoint["id"], target=target)
        assert "target" in assert_problem(response, 400, "validation_error")["errors"]
    assert Endpoint.objects.get().target == PG_TARGET


def test_a_new_target_resets_the_status_to_pending(api, pg_endpoint):
    Endpoint.objects.update(status="up")

    assert patch(api, pg_endpoint["id"], name="Renamed").json()["status"] == "up"
    response = patch(api, pg_endpoint["id"], target="postgresql://app:new@db2.test/app")

    assert response.json()["status"] == "pending"


def test_a_masked_password_with_none_stored_is_refused(api, cast):
    api.as_user(cast.owner)
    endpoint = created(api, cast, type="postgresql", target="postgresql://app@db.test/app")

    for target in (
        "postgresql://app:****@db.test/app",
        "postgresql://app@db.test/app?password=****",
    ):
        response = patch(api, endpoint["id"], target=target)
        assert "target" in assert_problem(response, 400, "validation_error")["errors"]
    assert Endpoint.objects.get().target == "postgresql://app@db.test/app"


def test_a_new_clear_password_replaces_the_stored_one(api, pg_endpoint):
    target = "postgresql://app:n3w-pw@db.test:5432/app?sslmode=require&password=n3w-other"

    response = patch(api, pg_endpoint["id"], target=target)

    assert response.status_code == 200, response.content
    assert response.json()["target"] == PG_MASKED
    assert b"n3w-pw" not in response.content
    assert Endpoint.objects.get().target == target


def test_a_new_host_with_a_clear_password_is_accepted(api, pg_endpoint):
    target = "postgresql://app:n3w-pw@replica.test:5432/app"

    response = patch(api, pg_endpoint["id"], target=target)

    assert response.status_code == 200, response.content
    assert response.json()["target"] == "postgresql://app:****@replica.test:5432/app"
    assert Endpoint.objects.get().target == target


@pytest.fixture
def auth_endpoint(api, cast):
    api.as_user(cast.owner)
    return created(api, cast, config=AUTH_CONFIG)


def test_sending_a_masked_header_back_keeps_the_stored_value(api, auth_endpoint):
    config = {"headers": {"Authorization": "****", "X-Trace": "changed"}}

    response = patch(api, auth_endpoint["id"], config=config)

    assert response.status_code == 200, response.content
    assert response.json()["config"]["headers"] == {"Authorization": "****", "X-Trace": "changed"}
    assert Endpoint.objects.get().config["headers"] == {
        "Authorization": "Bearer tok-123",
        "X-Trace": "changed",
    }


def test_the_config_answered_by_get_can_be_sent_back_as_is(api, auth_endpoint):
    shown = api.get(f"{ENDPOINTS}/{auth_endpoint['id']}").json()

    response = patch(api, auth_endpoint["id"], target=shown["target"], config=shown["config"])

    assert response.status_code == 200, response.content
    assert Endpoint.objects.get().config["headers"]["Authorization"] == "Bearer tok-123"


def test_a_new_header_value_replaces_the_stored_one(api, auth_endpoint):
    response = patch(api, auth_endpoint["id"], config={"headers": {"Authorization": "Bearer t2"}})

    assert response.status_code == 200, response.content
    assert Endpoint.objects.get().config["headers"] == {"Authorization": "Bearer t2"}


def test_a_masked_header_that_was_never_stored_is_refused(api, auth_endpoint):
    response = patch(api, auth_endpoint["id"], config={"headers": {"X-Api-Key": "****"}})

    config_errors(response)
    assert Endpoint.objects.get().config["headers"] == AUTH_CONFIG["headers"]


def test_a_masked_header_is_not_kept_when_the_host_changes(api, auth_endpoint):
    response = patch(
        api,
        auth_endpoint["id"],
        target="https://evil.test/health",
        config={"headers": {"Authorization": "****"}},
    )

    config_errors(response)
    endpoint = Endpoint.objects.get()
    assert endpoint.target == "https://example.test/health"
    assert endpoint.config["headers"] == AUTH_CONFIG["headers"]


def test_a_config_secret_with_an_unparsable_new_target_is_a_validation_error(api, auth_endpoint):
    response = patch(
        api,
        auth_endpoint["id"],
        target="https://example.test:99999/health",
        config={"headers": {"Authorization": "****"}},
    )

    assert_invalid(response, "target")
    assert Endpoint.objects.get().target == "https://example.test/health"


@pytest.mark.parametrize(
    "changes",
    [
        {"target": "https://evil.test/collect"},
        {"target": "http://example.test/health"},
        {"type": "websocket", "target": "wss://evil.test/collect"},
    ],
)
def test_a_stored_header_does_not_follow_the_target_to_another_service(api, auth_endpoint, changes):
    """A new origin without the config must not get the stored Authorization header.

    Either the change is refused (enter the secret again) or the secret is dropped; what
    must never happen is the new origin stored with the old credential, as the masked
    `****` rule already promises for secrets sent back.
    """
    response = patch(api, auth_endpoint["id"], **changes)

    endpoint = Endpoint.objects.get()
    if response.status_code == 200:
        assert endpoint.target == changes["target"]
        assert "tok-123" not in json.dumps(endpoint.config)
    else:
        assert_invalid(response)
        assert endpoint.target == "https://example.test/health"


# --- 5. Config per type ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("endpoint_type", "target", "config", "key"),
    [
        ("http", None, {"expected_staus": [200]}, "config.expected_staus"),
        ("http", None, {"expected_status": [99]}, "config.expected_status"),
        ("http", None, {"expected_status": [600]}, "config.expected_status"),
        ("http", None, {"expected_status": [200, 600]}, "config.expected_status"),
        ("http", None, {"expected_status": []}, "config.expected_status"),
        ("http", None, {"expected_status": 200}, "config.expected_status"),
        ("http", None, {"method": "DELETE"}, "config.method"),
        ("http", None, {"verify_tls": "maybe"}, "config.verify_tls"),
        ("http", None, {"degraded_above_ms": 0}, "config.degraded_above_ms"),
        ("http", None, {"headers": {"X Trace": "1"}}, "config.headers"),
        ("http", None, {"headers": {"X-Trace:": "1"}}, "config.headers"),
        ("http", None, {"headers": {"": "1"}}, "config.headers"),
        ("http", None, {"headers": {"X-Trace": "a\r\nSet-Cookie: x=1"}}, "config.headers"),
        ("http", None, {"headers": {"X-Trace": "a\nb"}}, "config.headers"),
        ("http", None, {"headers": {"X-Trace": "é"}}, "config.headers"),
        ("http", None, {"headers": {f"X-H{i}": "v" for i in range(51)}}, "config.headers"),
        ("http", None, {"headers": ["Authorization: x"]}, "config.headers"),
        ("http", None, {"headers": {"Content-Length": "0"}}, "config.headers"),
        ("http", None, {"headers": {"transfer-encoding": "chunked"}}, "config.headers"),
        ("websocket", "wss://ws.test/", {"headers": {"Connection": "close"}}, "config.headers"),
        (
            "redis",
            "redis://cache.test:6379/0",
            {"expected_status": [200]},
            "config.expected_status",
        ),
        ("redis", "redis://cache.test:6379/0", {"headers": {"A": "b"}}, "config.headers"),
        ("postgresql", "postgresql://db.test/app", {"method": "GET"}, "config.method"),
        ("grpc", "grpc://g.test:50051", {"query": "{ x }"}, "config.query"),
        (
            "graphql",
            "https://api.test/graphql",
            {"follow_redirects": False},
            "config.follow_redirects",
        ),
        ("elasticsearch", "https://es.test:9200", {"min_status": "purple"}, "config.min_status"),
        ("websocket", "wss://ws.test/", {"min_status": "green"}, "config.min_status"),
    ],
)
def test_a_bad_option_is_refused_under_its_config_key(
    api, cast, endpoint_type, target, config, key
):
    api.as_user(cast.owner)

    response = create(
        api, cast, type=endpoint_type, target=target or "https://example.test/", config=config
    )

    errors = config_errors(response)
    assert any(name == key or name.startswith(f"{key}.") for name in errors), errors
    assert Endpoint.objects.count() == 0


def test_fifty_headers_are_accepted(api, cast):
    api.as_user(cast.owner)
    headers = {f"X-H{i}": "v" for i in range(50)}

    assert created(api, cast, config={"headers": headers})["config"]["headers"] == headers


@pytest.mark.parametrize("config", [[], [{"method": "GET"}], "method=GET", 42, True])
def test_a_config_that_is_not_an_object_is_refused_under_config(api, cast, config):
    api.as_user(cast.owner)

    errors = assert_invalid(create(api, cast, config=config))

    assert "config" in errors, errors
    assert Endpoint.objects.count() == 0


def test_http_defaults_are_filled_in(api, cast):
    api.as_user(cast.owner)

    config = created(api, cast)["config"]

    assert config["expected_status"] == [200]
    assert config["method"] == "GET"
    assert config["verify_tls"] is True
    assert config["follow_redirects"] is True
    assert config["headers"] == {}
    assert config["body_contains"] == ""
    assert config["degraded_above_ms"] is None
    assert Endpoint.objects.get().config == config


def test_given_options_are_kept_and_the_rest_defaulted(api, cast):
    api.as_user(cast.owner)

    config = created(api, cast, config={"method": "HEAD", "expected_status": [200, 204]})["config"]

    assert config["method"] == "HEAD"
    assert config["expected_status"] == [200, 204]
    assert config["verify_tls"] is True


@pytest.mark.parametrize(
    ("endpoint_type", "target", "defaults"),
    [
        ("graphql", "https://api.test/graphql", {"query": "{ __typename }", "headers": {}}),
        ("elasticsearch", "https://es.test:9200", {"min_status": "yellow", "verify_tls": True}),
        ("grpc", "grpc://g.test:50051", {"service": "", "tls": False}),
        ("websocket", "wss://ws.test/", {"send": "", "expect": ""}),
        ("redis", "redis://cache.test:6379/0", {"verify_tls": True}),
        ("postgresql", "postgresql://db.test/app", {"verify_tls": True}),
        ("mysql", "mysql://db.test/app", {"verify_tls": True}),
        ("custom", "db.test:5432", {"verify_tls": True, "headers": {}}),
    ],
)
def test_each_type_fills_in_its_defaults(api, cast, endpoint_type, target, defaults):
    api.as_user(cast.owner)

    config = created(api, cast, type=endpoint_type, target=target)["config"]

    assert config.items() >= defaults.items(), config
    assert "expected_status" not in config


# --- 6. Interval and timeout ----------------------------------------------------------------


def test_interval_and_timeout_default_to_60_and_10(api, cast):
    api.as_user(cast.owner)

    body = created(api, cast)

    assert (body["interval_seconds"], body["timeout_seconds"]) == (60, 10)


def test_the_shortest_interval_gets_a_timeout_below_it(api, cast):
    api.as_user(cast.owner)

    body = created(api, cast, interval_seconds=10)

    assert (body["interval_seconds"], body["timeout_seconds"]) == (10, 9)


@pytest.mark.parametrize(
    ("timing", "field"),
    [
        ({"interval_seconds": 9}, "interval_seconds"),
        ({"interval_seconds": 0}, "interval_seconds"),
        ({"interval_seconds": -60}, "interval_seconds"),
        ({"interval_seconds": 86401}, "interval_seconds"),
        ({"interval_seconds": "often"}, "interval_seconds"),
        ({"interval_seconds": 30, "timeout_seconds": 30}, "timeout_seconds"),
        ({"interval_seconds": 30, "timeout_seconds": 31}, "timeout_seconds"),
        ({"timeout_seconds": 60}, "timeout_seconds"),
        ({"interval_seconds": 120, "timeout_seconds": 61}, "timeout_seconds"),
        ({"timeout_seconds": 0}, "timeout_seconds"),
    ],
)
def test_bad_timing_is_refused(api, cast, timing, field):
    api.as_user(cast.owner)

    assert_invalid(create(api, cast, **timing), field)
    assert Endpoint.objects.count() == 0


def test_the_longest_interval_and_timeout_are_accepted(api, cast):
    api.as_user(cast.owner)

    body = created(api, cast, interval_seconds=86400, timeout_seconds=60)

    assert (body["interval_seconds"], body["timeout_seconds"]) == (86400, 60)


def test_patching_the_interval_below_the_stored_timeout_is_refused(api, cast):
    api.as_user(cast.owner)
    endpoint = created(api, cast, interval_seconds=120, timeout_seconds=30)

    assert_invalid(patch(api, endpoint["id"], interval_seconds=30), "timeout_seconds")
    assert_invalid(patch(api, endpoint["id"], timeout_seconds=120), "timeout_seconds")
    stored = Endpoint.objects.get()
    assert (stored.interval_seconds, stored.timeout_seconds) == (120, 30)

    response = patch(api, endpoint["id"], interval_seconds=31)
    assert response.status_code == 200, response.content
    assert response.json()["timeout_seconds"] == 30


def test_the_minimum_interval_follows_the_setting(api, cast, settings):
    settings.MIN_CHECK_INTERVAL = 30
    api.as_user(cast.owner)

    errors = assert_invalid(create(api, cast, interval_seconds=20), "interval_seconds")
    assert "30" in errors["interval_seconds"][0]
    assert Endpoint.objects.count() == 0

    assert created(api, cast, interval_seconds=30)["interval_seconds"] == 30


# --- 7. Changing the type -------------------------------------------------------------------


def test_http_to_graphql_keeps_the_target_and_the_shared_options(api, cast):
    api.as_user(cast.owner)
    config = {**AUTH_CONFIG, "expected_status": [204], "verify_tls": False}
    endpoint = created(api, cast, target="https://api.test/graphql", config=config)

    response = patch(api, endpoint["id"], type="graphql")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["type"] == "graphql"
    assert body["target"] == "https://api.test/graphql"
    assert body["config"]["headers"] == {"Authorization": "****", "X-Trace": "visible"}
    assert body["config"]["verify_tls"] is False
    assert body["config"]["query"] == "{ __typename }"
    assert "expected_status" not in body["config"]
    stored = Endpoint.objects.get()
    assert stored.target == "https://api.test/graphql"
    assert stored.config["headers"] == AUTH_CONFIG["headers"]
    assert "expected_status" not in stored.config


def test_http_to_redis_without_a_new_target_is_refused(api, cast):
    api.as_user(cast.owner)
    endpoint = created(api, cast)

    assert_invalid(patch(api, endpoint["id"], type="redis"), "target")
    stored = Endpoint.objects.get()
    assert stored.type == "http"
    assert stored.target == "https://example.test/health"


def test_http_to_redis_with_a_redis_target_is_accepted(api, cast):
    api.as_user(cast.owner)
    endpoint = created(api, cast, config=AUTH_CONFIG)

    response = patch(api, endpoint["id"], type="redis", target="redis://:pw@cache.test:6379/1")

    assert response.status_code == 200, response.content
    assert response.json()["target"] == "redis://:****@cache.test:6379/1"
    stored = Endpoint.objects.get()
    assert stored.target == "redis://:pw@cache.test:6379/1"
    assert "headers" not in stored.config


def test_a_new_target_alone_is_checked_against_the_stored_type(api, cast):
    api.as_user(cast.owner)
    endpoint = created(api, cast, type="redis", target="redis://cache.test:6379/0")

    assert_invalid(patch(api, endpoint["id"], target="https://example.test/"), "target")
    assert Endpoint.objects.get().target == "redis://cache.test:6379/0"
