"""The probe engine against real local peers.

Every kind is checked up, down (a refused port and a wrong answer) and timing out (a peer
that accepts and never answers), then the options users configure per kind. Targets go
through `validate_target` first, so each one is a target the API would accept.
"""

import time
from urllib.parse import urlsplit

import pytest

from tests.monitoring.peers import (
    ES_NODES,
    GRPC_NAMED_SERVICE,
    MYSQL_URL,
    POSTGRESQL_URL,
    REDIS_URL,
)
from tests.monitoring.probing import leaked, run

SHORT = 1.0  # for checks that must time out
SECRET = "s3cretpw"


@pytest.fixture(autouse=True)
def _allow_loopback(settings):
    """Every peer is on 127.0.0.1, which the network policy refuses unless allowed."""
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = True


def assert_up(result):
    assert result.ok, result
    assert result.error == ""
    assert result.response_time_ms > 0


def assert_down(result):
    """Down with an answer: an error, and not merely a timeout."""
    assert not result.ok, result
    assert result.error
    assert not result.error.startswith("timed out"), result
    assert result.response_time_ms > 0


def assert_refused(result):
    assert_down(result)
    assert "refused" in result.error.lower(), result


# --- Every kind: up, refused, timed out ----------------------------------------------------

REFUSED = [
    pytest.param("http", "http://127.0.0.1:{port}/health", id="http"),
    pytest.param("graphql", "http://127.0.0.1:{port}/graphql", id="graphql"),
    pytest.param("grpc", "grpc://127.0.0.1:{port}", id="grpc"),
    pytest.param("postgresql", "postgresql://postgres@127.0.0.1:{port}/postgres", id="postgresql"),
    pytest.param("mysql", "mysql://root@127.0.0.1:{port}/", id="mysql"),
    pytest.param("redis", "redis://127.0.0.1:{port}/0", id="redis"),
    pytest.param("elasticsearch", "http://127.0.0.1:{port}", id="elasticsearch"),
    pytest.param("websocket", "ws://127.0.0.1:{port}/", id="websocket"),
    pytest.param("custom", "127.0.0.1:{port}", id="custom-host-port"),
    pytest.param("custom", "redis://127.0.0.1:{port}/0", id="custom-url"),
]


@pytest.mark.parametrize(("kind", "target"), REFUSED)
def test_refused_port_is_down(kind, target, closed_port):
    assert_refused(run(kind, target.format(port=closed_port)))


@pytest.mark.parametrize(("kind", "target"), REFUSED)
def test_stalled_peer_times_out_within_the_timeout(kind, target, stall_peer):
    started = time.monotonic()
    result = run(kind, target.format(port=stall_peer.port), timeout=SHORT)
    elapsed = time.monotonic() - started

    assert not result.ok
    assert result.error.startswith("timed out"), result
    assert elapsed < SHORT + 1
    assert result.response_time_ms > 0


def test_http_slow_response_times_out(http_peer):
    started = time.monotonic()
    result = run("http", http_peer.url("/slow"), timeout=SHORT)
    elapsed = time.monotonic() - started

    assert not result.ok
    assert result.error.startswith("timed out"), result
    assert elapsed < SHORT + 1


# --- HTTP ------------------------------------------------------------------------------------


def test_http_up(http_peer):
    result = run("http", http_peer.url("/health"))

    assert_up(result)
    assert result.status_detail == "HTTP 200"
    assert result.detected_type == ""


@pytest.mark.parametrize("method", ["GET", "HEAD", "POST"])
def test_http_methods(http_peer, method):
    assert_up(run("http", http_peer.url("/health"), {"method": method}))


@pytest.mark.parametrize("code", [200, 204])
def test_http_any_expected_status_is_up(http_peer, code):
    result = run("http", http_peer.url(f"/status/{code}"), {"expected_status": [200, 204]})

    assert_up(result)
    assert result.status_detail == f"HTTP {code}"


def test_http_unexpected_status_is_down(http_peer):
    result = run("http", http_peer.url("/status/503"), {"expected_status": [200, 204]})

    assert_down(result)
    assert result.status_detail == "HTTP 503"
    assert "503" in result.error


def test_http_expects_200_by_default(http_peer):
    result = run("http", http_peer.url("/status/201"))

    assert_down(result)
    assert result.status_detail == "HTTP 201"


def test_http_an_error_status_can_be_the_expected_one(http_peer):
    assert_up(run("http", http_peer.url("/status/500"), {"expected_status": [500]}))


def test_http_body_contains_found(http_peer):
    assert_up(run("http", http_peer.url("/health"), {"body_contains": "healthy"}))


def test_http_body_contains_missing(http_peer):
    result = run("http", http_peer.url("/health"), {"body_contains": "database: ok"})

    assert_down(result)
    assert result.status_detail == "HTTP 200"
    assert result.error == "unexpected body"
    assert "expected text" in result.error_detail.lower()


def test_http_custom_headers_reach_the_server(http_peer):
    config = {
        "headers": {"X-Probe-Token": "tok-42"},
        "body_contains": '"x-probe-token": "tok-42"',
    }

    assert_up(run("http", http_peer.url("/echo-headers"), config))


@pytest.mark.parametrize(
    ("host", "secret_follows"),
    [("127.0.0.1", True), ("localhost", False)],  # the same origin, then another one
)
def test_secret_headers_follow_a_redirect_only_within_the_origin(http_peer, host, secret_follows):
    echo = http_peer.url("/echo-headers").replace("127.0.0.1", host)
    target = http_peer.url(f"/redirect?to={echo}")
    headers = {"X-Api-Key": "k-secret-7", "X-Trace": "trace-9"}

    secret = run("http", target, {"headers": headers, "body_contains": "k-secret-7"})
    plain = run("http", target, {"headers": headers, "body_contains": "trace-9"})

    assert secret.ok is secret_follows
    assert_up(plain)


def test_http_follows_five_redirects(http_peer):
    result = run("http", http_peer.url("/redirect-n/5"))

    assert_up(result)
    assert result.status_detail == "HTTP 200"


def test_http_sixth_redirect_is_down(http_peer):
    result = run("http", http_peer.url("/redirect-n/6"))

    assert_down(result)
    assert "redirect" in result.error.lower()


def test_http_redirect_is_followed_to_its_destination(http_peer, closed_port):
    target = http_peer.url(f"/redirect?to=http://127.0.0.1:{closed_port}/health")

    assert_refused(run("http", target))


def test_http_redirect_not_followed_when_disabled(http_peer):
    result = run("http", http_peer.url("/redirect-n/1"), {"follow_redirects": False})

    assert_down(result)
    assert result.status_detail == "HTTP 302"


def test_http_redirect_status_can_be_expected(http_peer):
    config = {"follow_redirects": False, "expected_status": [301, 302]}

    assert_up(run("http", http_peer.url("/redirect-n/1"), config))


def test_https_to_a_plain_http_port_is_down(http_peer):
    assert_down(run("http", http_peer.url("/health", scheme="https")))


def test_https_self_signed_certificate_is_refused_by_default(tls_peer):
    result = run("http", tls_peer.url("/health", scheme="https"))

    assert_down(result)
    assert any(word in result.error.lower() for word in ("certificate", "tls", "ssl")), result


def test_https_self_signed_certificate_accepted_without_verification(tls_peer):
    result = run("http", tls_peer.url("/health", scheme="https"), {"verify_tls": False})

    assert_up(result)
    assert result.status_detail == "HTTP 200"


# --- GraphQL ---------------------------------------------------------------------------------


def test_graphql_default_query_is_up(graphql_peer):
    assert_up(run("graphql", graphql_peer.url("/graphql")))


def test_graphql_query_with_data_is_up(graphql_peer):
    assert_up(run("graphql", graphql_peer.url("/graphql"), {"query": "{ status }"}))


def test_graphql_errors_in_a_200_are_down(graphql_peer):
    result = run("graphql", graphql_peer.url("/graphql"), {"query": "{ status broken }"})

    assert_down(result)
    assert "graphql" in result.error.lower()


def test_graphql_invalid_query_is_down(graphql_peer):
    result = run("graphql", graphql_peer.url("/graphql"), {"query": "{ status"})

    assert_down(result)
    assert "graphql" in result.error.lower()


def test_graphql_data_without_errors_but_not_200_is_down(graphql_peer):
    result = run("graphql", graphql_peer.url("/graphql-503"), {"query": "{ status }"})

    assert_down(result)
    assert "503" in result.error


def test_graphql_non_json_answer_is_down(http_peer):
    assert_down(run("graphql", http_peer.url("/health")))


def test_graphql_custom_headers_reach_the_server(graphql_peer):
    query = '{ header(name: "X-Api-Key") }'
    target = graphql_peer.url("/graphql")

    assert_up(run("graphql", target, {"query": query, "headers": {"X-Api-Key": "k-1"}}))
    assert_down(run("graphql", target, {"query": query}))


# --- gRPC ------------------------------------------------------------------------------------


def test_grpc_whole_server_serving(grpc_peer):
    result = run("grpc", grpc_peer.url())

    assert_up(result)
    assert result.status_detail == "SERVING"


def test_grpc_named_service_serving(grpc_peer):
    result = run("grpc", grpc_peer.url(), {"service": GRPC_NAMED_SERVICE})

    assert_up(result)
    assert result.status_detail == "SERVING"


def test_grpc_whole_server_not_serving(grpc_peer):
    grpc_peer.set("", "NOT_SERVING")

    result = run("grpc", grpc_peer.url())

    assert_down(result)
    assert result.status_detail == "NOT_SERVING"


def test_grpc_named_service_not_serving(grpc_peer):
    grpc_peer.set(GRPC_NAMED_SERVICE, "NOT_SERVING")

    assert_up(run("grpc", grpc_peer.url()))
    result = run("grpc", grpc_peer.url(), {"service": GRPC_NAMED_SERVICE})
    assert_down(result)
    assert result.status_detail == "NOT_SERVING"


def test_grpc_status_changes_are_seen(grpc_peer):
    grpc_peer.set("", "NOT_SERVING")
    assert_down(run("grpc", grpc_peer.url()))

    grpc_peer.set("", "SERVING")
    assert_up(run("grpc", grpc_peer.url()))


def test_grpc_unknown_service_is_down(grpc_peer):
    result = run("grpc", grpc_peer.url(), {"service": "hm.NoSuchService"})

    assert_down(result)
    assert "not found" in result.error.lower()


def test_grpc_against_an_http1_server_is_down(http_peer):
    assert_down(run("grpc", f"grpc://{http_peer.address}"))


def test_grpc_tls_against_a_plaintext_server_is_down(grpc_peer):
    assert_down(run("grpc", grpc_peer.url(), {"tls": True}))


# --- PostgreSQL ------------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["postgresql", "postgres"])
def test_postgresql_up(scheme):
    assert_up(run("postgresql", POSTGRESQL_URL.replace("postgresql", scheme, 1)))


def test_postgresql_unknown_role_is_down():
    assert_down(run("postgresql", "postgresql://nosuchuser@127.0.0.1:5432/postgres"))


def test_postgresql_unknown_database_is_down():
    assert_down(run("postgresql", "postgresql://postgres@127.0.0.1:5432/nosuchdb"))


def test_postgresql_other_protocol_is_down(banner):
    assert_down(run("postgresql", f"postgresql://postgres@{banner.address}/postgres"))


# --- MySQL / MariaDB -------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["mysql", "mariadb"])
def test_mysql_up(scheme):
    assert_up(run("mysql", MYSQL_URL.replace("mysql", scheme, 1)))


def test_mysql_wrong_credentials_are_down():
    assert_down(run("mysql", "mysql://nosuchuser@127.0.0.1:3306/"))


def test_mysql_unknown_database_is_down():
    assert_down(run("mysql", "mysql://root@127.0.0.1:3306/nosuchdb"))


def test_mysql_other_protocol_is_down(banner):
    assert_down(run("mysql", f"mysql://root@{banner.address}/"))


# --- Redis -----------------------------------------------------------------------------------


def test_redis_up():
    result = run("redis", REDIS_URL)

    assert_up(result)
    assert result.status_detail == "PONG"


def test_redis_database_number_in_the_url():
    result = run("redis", "redis://127.0.0.1:6379/3")

    assert_up(result)
    assert result.status_detail == "PONG"


def test_redis_database_out_of_range_is_down():
    # The server has 16 databases: the 16th is there, the 100th fails, so the number is used.
    assert_up(run("redis", "redis://127.0.0.1:6379/15"))
    assert_down(run("redis", "redis://127.0.0.1:6379/99"))


def test_redis_wrong_password_is_down():
    # The local Redis has no password: AUTH with one is an error.
    assert_up(run("redis", REDIS_URL))
    result = run("redis", f"redis://:{SECRET}@127.0.0.1:6379/0")

    assert_down(result)
    assert SECRET not in result.error


def test_redis_error_answer_is_down(redis_wrong):
    assert_down(run("redis", f"redis://{redis_wrong.address}/0"))


# --- Elasticsearch ---------------------------------------------------------------------------


def test_elasticsearch_green(elasticsearch_peer):
    result = run("elasticsearch", elasticsearch_peer.url())

    assert_up(result)
    assert "green" in result.status_detail
    assert str(ES_NODES) in result.status_detail


def test_elasticsearch_yellow_is_up_by_default(elasticsearch_peer):
    elasticsearch_peer.status = "yellow"

    result = run("elasticsearch", elasticsearch_peer.url())

    assert_up(result)
    assert "yellow" in result.status_detail
    assert str(ES_NODES) in result.status_detail


def test_elasticsearch_yellow_below_green_minimum_is_down(elasticsearch_peer):
    elasticsearch_peer.status = "yellow"

    result = run("elasticsearch", elasticsearch_peer.url(), {"min_status": "green"})

    assert_down(result)
    assert "yellow" in result.error


def test_elasticsearch_red_is_down_by_default(elasticsearch_peer):
    elasticsearch_peer.status = "red"

    result = run("elasticsearch", elasticsearch_peer.url())

    assert_down(result)
    assert "red" in result.error


def test_elasticsearch_red_is_up_when_red_is_the_minimum(elasticsearch_peer):
    elasticsearch_peer.status = "red"

    assert_up(run("elasticsearch", elasticsearch_peer.url(), {"min_status": "red"}))


def test_elasticsearch_status_changes_are_seen(elasticsearch_peer):
    assert_up(run("elasticsearch", elasticsearch_peer.url(), {"min_status": "green"}))

    elasticsearch_peer.status = "red"
    assert_down(run("elasticsearch", elasticsearch_peer.url(), {"min_status": "green"}))


def test_elasticsearch_without_cluster_health_is_down(http_peer):
    assert_down(run("elasticsearch", http_peer.url()))


# --- WebSocket -------------------------------------------------------------------------------


def test_websocket_ping_pong_by_default(websocket_peer):
    result = run("websocket", websocket_peer.url())

    assert_up(result)
    assert "pong" in result.status_detail.lower()


def test_websocket_send_and_expected_reply(websocket_peer):
    config = {"send": "hello healthmon", "expect": "hello healthmon"}

    assert_up(run("websocket", websocket_peer.url(), config))


def test_websocket_reply_not_the_expected_one(websocket_peer):
    result = run("websocket", websocket_peer.url(), {"send": "hello", "expect": "goodbye"})

    assert_down(result)
    assert "unexpected reply" in result.error.lower()


def test_websocket_wrong_server_reply(websocket_wrong_peer):
    result = run("websocket", websocket_wrong_peer.url(), {"send": "hello", "expect": "hello"})

    assert_down(result)
    assert "unexpected reply" in result.error.lower()


def test_websocket_against_a_plain_http_server_is_down(http_peer):
    assert_down(run("websocket", http_peer.url("/health", scheme="ws")))


# --- Custom: the protocol detected from the target -----------------------------------------


@pytest.mark.parametrize(
    ("peer", "address", "detected"),
    [
        pytest.param("http_peer", None, "http", id="http"),
        pytest.param(None, "127.0.0.1:5432", "postgresql", id="postgresql"),
        pytest.param(None, "127.0.0.1:3306", "mysql", id="mysql"),
        pytest.param(None, "127.0.0.1:6379", "redis", id="redis"),
        pytest.param("grpc_peer", None, "grpc", id="grpc"),
    ],
)
def test_custom_detects_the_protocol_behind_host_port(request, peer, address, detected):
    target = request.getfixturevalue(peer).address if peer else address

    result = run("custom", target)

    assert_up(result)
    assert result.detected_type == detected


@pytest.mark.parametrize(
    ("peer", "target", "detected"),
    [
        pytest.param("http_peer", "http://{address}/health", "http", id="http"),
        pytest.param("websocket_peer", "ws://{address}/", "websocket", id="websocket"),
        pytest.param("grpc_peer", "grpc://{address}", "grpc", id="grpc"),
        pytest.param(None, POSTGRESQL_URL, "postgresql", id="postgresql"),
        pytest.param(None, MYSQL_URL, "mysql", id="mysql"),
        pytest.param(None, REDIS_URL, "redis", id="redis"),
    ],
)
def test_custom_detects_the_protocol_from_the_scheme(request, peer, target, detected):
    if peer:
        port = request.getfixturevalue(peer).port
        target = target.format(address=f"127.0.0.1:{port}")

    result = run("custom", target)

    assert_up(result)
    assert result.detected_type == detected


def test_custom_watches_an_unrecognized_open_port_as_tcp(banner_peers):
    result = run("custom", banner_peers["unknown"].address)

    assert_up(result)
    assert result.detected_type == "tcp"
    assert result.status_detail == (
        "protocol not recognized; it said: HELLO stranger, what do you want? (connected)"
    )


def test_custom_detected_service_with_a_wrong_answer_is_down(http_peer):
    assert_down(run("custom", http_peer.url("/status/503")))


# --- Secrets never reach error messages ------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "target"),
    [
        pytest.param(
            "postgresql",
            f"postgresql://postgres:{SECRET}@127.0.0.1:{{closed}}/postgres",
            id="postgresql-refused",
        ),
        pytest.param(
            "postgresql",
            f"postgresql://postgres@127.0.0.1:{{closed}}/postgres?password={SECRET}",
            id="postgresql-query-password",
        ),
        pytest.param(
            "postgresql",
            f"postgresql://postgres:{SECRET}@127.0.0.1:5432/nosuchdb",
            id="postgresql-unknown-database",
        ),
        pytest.param(
            "postgresql",
            f"postgresql://postgres:{SECRET}@127.0.0.1:{{stall}}/postgres",
            id="postgresql-timeout",
        ),
        pytest.param("redis", f"redis://:{SECRET}@127.0.0.1:6379/0", id="redis-auth"),
        pytest.param("redis", f"redis://:{SECRET}@127.0.0.1:{{closed}}/0", id="redis-refused"),
        pytest.param("mysql", f"mysql://root:{SECRET}@127.0.0.1:3306/", id="mysql-auth"),
        pytest.param("mysql", f"mysql://root:{SECRET}@127.0.0.1:{{closed}}/", id="mysql-refused"),
        pytest.param(
            "http", f"http://user:{SECRET}@127.0.0.1:{{closed}}/health", id="http-refused"
        ),
        pytest.param(
            "custom",
            f"postgresql://postgres:{SECRET}@127.0.0.1:{{closed}}/postgres",
            id="custom-postgresql",
        ),
        pytest.param("custom", f"redis://:{SECRET}@127.0.0.1:6379/0", id="custom-redis"),
    ],
)
def test_error_never_contains_the_password(kind, target, closed_port, stall_peer):
    target = target.format(closed=closed_port, stall=stall_peer.port)

    result = run(kind, target, timeout=SHORT)

    assert not result.ok
    assert result.error
    user = urlsplit(target).username or ""
    for text in (result.error, result.status_detail, result.error_detail):
        assert SECRET not in text
        assert leaked(text, user, SECRET) == [], text
