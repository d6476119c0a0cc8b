"""Probe errors are short fixed phrases; what the driver or server said is in error_detail.

Per kind, the main ways a check fails, against real local peers (and the machine's own
PostgreSQL, MariaDB and Redis): the stored `error` is exactly the phrase of
monitoring/probes/phrases.py, the raw text lands in `error_detail`, and the password in the
target is in neither, nor in `status_detail`, in any encoding.
"""

import re
import ssl
from concurrent import futures
from pathlib import Path
from urllib.parse import quote

import grpc
import psycopg
import pytest
from django.test import Client
from django.utils.html import escape

from monitoring.models import CheckResult, EndpointType, Incident
from monitoring.probes import phrases
from monitoring.probes.base import describe_error
from monitoring.probes.phrases import PHRASES
from tests.monitoring.peers import GRPC_NAMED_SERVICE, HOST, POSTGRESQL_URL, ReplyPeer
from tests.monitoring.probing import is_phrase, leaked, run

SHORT = 1.0  # for checks that must time out
USER = "probe"
PASSWORD = "Ph!r@se/9 pw:%k"
PW = quote(PASSWORD, safe="")
README = Path(__file__).resolve().parents[2] / "README.md"


@pytest.fixture(autouse=True)
def _allow_loopback(settings):
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = True


@pytest.fixture
def peers(request, closed_port, stall_peer, http_peer, tls_peer, graphql_peer, banner, redis_wrong):
    """Where each peer listens, by the names the cases' targets use; the others are asked
    for only by the cases that need them."""
    lazily = {
        "grpc": "grpc_peer",
        "ws": "websocket_peer",
        "ws_wrong": "websocket_wrong_peer",
        "es": "elasticsearch_peer",
    }
    return {
        "closed": f"{HOST}:{closed_port}",
        "stall": stall_peer.address,
        "http": http_peer.address,
        "tls": tls_peer.address,
        "graphql": graphql_peer.address,
        "banner": banner.address,
        "redis_wrong": redis_wrong.address,
        **{
            name: f"{HOST}:{request.getfixturevalue(fixture).port}"
            for name, fixture in lazily.items()
            if f"{{{name}}}" in request.node.callspec.params.get("target", "")
        },
    }


def assert_fails_with(result, kind, phrase, detail=""):
    """Failed with exactly this phrase, the raw text holding `detail`, no password shown."""
    assert not result.ok, result
    assert result.error == phrase, result
    assert is_phrase(kind, result.error), result
    assert detail in result.error_detail, result
    for text in (result.error, result.status_detail, result.error_detail):
        assert leaked(text, USER, PASSWORD) == [], (text, leaked(text, USER, PASSWORD))
        assert leaked(text, "postgres", PASSWORD) == leaked(text, "root", PASSWORD) == []


def case(kind, target, phrase, detail="", config=None, *, id):
    return pytest.param(kind, target, config or {}, phrase, detail, id=id)


TIMED_OUT = phrases.TIMED_OUT.format(seconds="1")
U = f"{USER}:{PW}@"  # userinfo for the URL kinds

CASES = [
    # --- HTTP
    case(
        "http",
        f"http://{U}{{closed}}/health",
        "connection refused",
        "Cannot connect",
        id="http-refused",
    ),
    case("http", f"http://{U}{{stall}}/health", TIMED_OUT, id="http-timeout"),
    case("http", f"http://{U}{{http}}/status/503", "HTTP 503", id="http-status"),
    case(
        "http",
        f"http://{U}{{http}}/health",
        "unexpected body",
        "expected text not found",
        {"body_contains": "db: ok"},
        id="http-body",
    ),
    case(
        "http",
        f"http://{U}{{http}}/redirect-n/6",
        "too many redirects",
        "more than 5",
        id="http-redirects",
    ),
    case(
        "http",
        f"https://{U}{{tls}}/health",
        "TLS certificate not trusted",
        "self-signed certificate",
        id="http-untrusted",
    ),
    case(
        "http",
        f"https://{U}{{http}}/health",
        "TLS handshake failed",
        "WRONG_VERSION_NUMBER",
        id="http-tls-failed",
    ),
    case(
        "http",
        f"http://{U}{{banner}}/",
        "invalid HTTP response",
        "Bad status line",
        id="http-not-http",
    ),
    case(
        "http",
        f"http://{U}{{http}}/redirect-quoting-auth",
        "invalid HTTP response",
        "Location is not a valid URL",
        id="http-bad-location",
    ),
    # --- GraphQL
    case(
        "graphql",
        f"http://{U}{{graphql}}/graphql",
        "GraphQL error",
        "backend unreachable",
        {"query": "{ broken }"},
        id="graphql-error",
    ),
    case(
        "graphql",
        f"http://{U}{{graphql}}/graphql-503",
        "HTTP 503",
        config={"query": "{ status }"},
        id="graphql-status",
    ),
    case(
        "graphql",
        f"http://{U}{{http}}/health",
        "not a GraphQL response",
        "not JSON",
        id="graphql-not-json",
    ),
    case(
        "graphql",
        f"http://{U}{{closed}}/graphql",
        "connection refused",
        "Cannot connect",
        id="graphql-refused",
    ),
    # --- gRPC (no userinfo in its targets)
    case("grpc", "grpc://{closed}", "connection refused", "Connection refused", id="grpc-refused"),
    case("grpc", "grpc://{stall}", TIMED_OUT, id="grpc-timeout"),
    case(
        "grpc",
        "grpc://{grpc}",
        "service not found",
        "NOT_FOUND",
        {"service": "hm.Nope"},
        id="grpc-unknown-service",
    ),
    case("grpc", "grpc://{http}", "protocol error", "HTTP/2", id="grpc-not-http2"),
    case(
        "grpc",
        "grpc://{grpc}",
        "TLS handshake failed",
        "Tls handshake failed",
        {"tls": True},
        id="grpc-tls-failed",
    ),
    case(
        "grpc",
        "grpcs://{tls}",
        "TLS certificate not trusted",
        "CERTIFICATE_VERIFY_FAILED",
        id="grpc-untrusted",
    ),
    # --- PostgreSQL (the local server trusts every connection: a password is never checked)
    case(
        "postgresql",
        f"postgresql://postgres:{PW}@{{closed}}/postgres",
        "connection refused",
        "Connection refused",
        id="postgresql-refused",
    ),
    case(
        "postgresql",
        f"postgresql://postgres:{PW}@{{stall}}/postgres",
        TIMED_OUT,
        id="postgresql-timeout",
    ),
    case(
        "postgresql",
        f"postgresql://nosuchuser:{PW}@127.0.0.1:5432/postgres",
        "authentication failed",
        'role "nosuchuser" does not exist',
        id="postgresql-unknown-role",
    ),
    case(
        "postgresql",
        f"postgresql://postgres:{PW}@127.0.0.1:5432/nosuchdb",
        "database does not exist",
        'database "nosuchdb" does not exist',
        id="postgresql-no-database",
    ),
    case(
        "postgresql",
        f"postgresql://postgres:{PW}@127.0.0.1:5432/postgres?sslmode=require",
        "TLS not supported by the server",
        "server does not support SSL",
        id="postgresql-no-tls",
    ),
    case(
        "postgresql",
        f"postgresql://postgres:{PW}@{{banner}}/postgres",
        "protocol error",
        "expected authentication request",
        id="postgresql-not-postgresql",
    ),
    # --- MySQL / MariaDB (root has no password here: sending one is refused)
    case(
        "mysql",
        f"mysql://root:{PW}@{{closed}}/",
        "connection refused",
        "Connect call failed",
        id="mysql-refused",
    ),
    case("mysql", f"mysql://root:{PW}@{{stall}}/", TIMED_OUT, id="mysql-timeout"),
    case(
        "mysql",
        f"mysql://root:{PW}@127.0.0.1:3306/",
        "authentication failed",
        "ERROR 1045: Access denied",
        id="mysql-wrong-password",
    ),
    case(
        "mysql",
        "mysql://root@127.0.0.1:3306/nosuchdb",
        "database does not exist",
        "ERROR 1049: Unknown database",
        id="mysql-no-database",
    ),
    case(
        "mysql",
        "mysql://root@127.0.0.1:3306/?ssl_mode=required",
        "TLS not supported by the server",
        "ERROR 2026",
        id="mysql-no-tls",
    ),
    case(
        "mysql",
        f"mysql://root:{PW}@{{banner}}/",
        "protocol error",
        "Packet sequence number wrong",
        id="mysql-not-mysql",
    ),
    # --- Redis (the local server has no password: AUTH with one is refused)
    case(
        "redis",
        f"redis://:{PW}@{{closed}}/0",
        "connection refused",
        "Connect call failed",
        id="redis-refused",
    ),
    case("redis", f"redis://:{PW}@{{stall}}/0", TIMED_OUT, id="redis-timeout"),
    case(
        "redis",
        f"redis://:{PW}@127.0.0.1:6379/0",
        "authentication failed",
        "ERR AUTH",
        id="redis-auth",
    ),
    case(
        "redis",
        "redis://127.0.0.1:6379/99",
        "database does not exist",
        "DB index is out of range",
        id="redis-no-database",
    ),
    case(
        "redis",
        f"redis://:{PW}@{{redis_wrong}}/0",
        "authentication failed",
        "ERR nope",
        id="redis-auth-refused",
    ),
    case(
        "redis", "redis://{redis_wrong}/0", "unexpected reply", "ERR nope", id="redis-error-reply"
    ),
    case(
        "redis",
        f"redis://:{PW}@{{banner}}/0",
        "unexpected reply",
        "expected +OK, got SSH-2.0",
        id="redis-not-redis",
    ),
    case(
        "redis",
        f"rediss://:{PW}@{{http}}/0",
        "TLS handshake failed",
        "WRONG_VERSION_NUMBER",
        id="redis-tls-failed",
    ),
    case(
        "redis",
        f"rediss://:{PW}@{{tls}}/0",
        "TLS certificate not trusted",
        "self-signed certificate",
        id="redis-untrusted",
    ),
    # --- Elasticsearch
    case(
        "elasticsearch",
        f"http://{U}{{closed}}",
        "connection refused",
        "Cannot connect",
        id="elasticsearch-refused",
    ),
    case("elasticsearch", f"http://{U}{{stall}}", TIMED_OUT, id="elasticsearch-timeout"),
    case("elasticsearch", f"http://{U}{{http}}", "HTTP 404", id="elasticsearch-no-health"),
    case(
        "elasticsearch",
        f"https://{U}{{es}}",
        "TLS handshake failed",
        "WRONG_VERSION_NUMBER",
        id="elasticsearch-tls-failed",
    ),
    # --- WebSocket
    case(
        "websocket",
        f"ws://{U}{{closed}}/",
        "connection refused",
        "Connect call failed",
        id="websocket-refused",
    ),
    case("websocket", f"ws://{U}{{stall}}/", TIMED_OUT, id="websocket-timeout"),
    case(
        "websocket",
        f"ws://{U}{{http}}/health",
        "handshake failed",
        "did not receive a valid HTTP response",
        id="websocket-not-websocket",
    ),
    case(
        "websocket",
        f"ws://{U}{{ws_wrong}}/",
        "unexpected reply",
        "reply: something else",
        {"send": "hello", "expect": "hello"},
        id="websocket-reply",
    ),
    case(
        "websocket",
        f"wss://{U}{{http}}/",
        "TLS handshake failed",
        "WRONG_VERSION_NUMBER",
        id="websocket-tls-failed",
    ),
    case(
        "websocket",
        f"wss://{U}{{tls}}/",
        "TLS certificate not trusted",
        "self-signed certificate",
        id="websocket-untrusted",
    ),
    # --- TCP
    case("tcp", "tcp://{closed}", "connection refused", "Connect call failed", id="tcp-refused"),
    case("tcp", "tcp://{stall}", TIMED_OUT, config={"expect": "220"}, id="tcp-timeout"),
    case(
        "tcp",
        "tcp://{banner}",
        'expected "220" not received',
        "received: SSH-2.0-OpenSSH",
        {"expect": "220"},
        id="tcp-wrong-banner",
    ),
    # --- SMTP
    case("smtp", "smtp://{closed}", "connection refused", "Connect call failed", id="smtp-refused"),
    case("smtp", "smtp://{stall}", TIMED_OUT, id="smtp-timeout"),
    case("smtp", "smtp://{banner}", "protocol error", "not an SMTP reply", id="smtp-not-smtp"),
    case(
        "smtp", "smtps://{http}", "TLS handshake failed", "WRONG_VERSION_NUMBER", id="smtps-plain"
    ),
    # --- Custom: before the protocol is known, then as the kind found
    case("custom", "smtp://{banner}", "protocol error", "not an SMTP reply", id="custom-smtp"),
    case("custom", "{closed}", "connection refused", "Connect call failed", id="custom-refused"),
    case(
        "custom",
        f"redis://:{PW}@127.0.0.1:6379/0",
        "authentication failed",
        "ERR AUTH",
        id="custom-redis-auth",
    ),
    case(
        "custom",
        f"postgresql://postgres:{PW}@127.0.0.1:5432/nosuchdb",
        "database does not exist",
        'database "nosuchdb"',
        id="custom-postgresql-no-database",
    ),
]


@pytest.mark.parametrize(("kind", "target", "config", "phrase", "detail"), CASES)
def test_a_failed_check_gives_the_fixed_phrase_and_the_raw_text_apart(
    peers, kind, target, config, phrase, detail
):
    timeout = SHORT if phrase == TIMED_OUT else 5.0

    result = run(kind, target.format(**peers), config, timeout=timeout)

    assert_fails_with(result, kind, phrase, detail)
    if kind == "custom" and "://" in target:
        assert result.detected_type == target.split("://")[0]


def test_grpc_service_not_serving(grpc_peer):
    grpc_peer.set(GRPC_NAMED_SERVICE, "NOT_SERVING")

    result = run("grpc", grpc_peer.url(), {"service": GRPC_NAMED_SERVICE})

    assert_fails_with(result, "grpc", "service not serving")
    assert result.status_detail == "NOT_SERVING"


def test_grpc_server_without_a_health_service():
    pool = futures.ThreadPoolExecutor(max_workers=2)
    server = grpc.server(pool)
    port = server.add_insecure_port(f"{HOST}:0")
    server.start()
    try:
        result = run("grpc", f"grpc://{HOST}:{port}")
    finally:
        server.stop(grace=None).wait()
        pool.shutdown(wait=True)

    assert_fails_with(result, "grpc", "no health service", "UNIMPLEMENTED")


def test_elasticsearch_below_its_minimum_status(elasticsearch_peer):
    elasticsearch_peer.status = "yellow"
    target = elasticsearch_peer.url().replace("://", f"://{U}")

    result = run("elasticsearch", target, {"min_status": "green"})

    assert_fails_with(result, "elasticsearch", "cluster status yellow (minimum green)")
    assert result.status_detail == "cluster yellow, 3 nodes"


@pytest.mark.parametrize("database", ["0", "3"])
def test_redis_asking_for_a_password(database):
    peer = ReplyPeer(reply=b"-NOAUTH Authentication required.\r\n")
    try:
        result = run("redis", f"redis://{peer.address}/{database}")
    finally:
        peer.stop()

    assert_fails_with(result, "redis", "authentication required", "NOAUTH")


@pytest.fixture
def role_without_connections():
    """A PostgreSQL role that may log in but has no connection slot (CONNECTION LIMIT 0)."""
    name = "hm_phrases_no_slots"
    with psycopg.connect(POSTGRESQL_URL, autocommit=True) as admin:
        admin.execute(f"DROP ROLE IF EXISTS {name}")
        admin.execute(f"CREATE ROLE {name} LOGIN CONNECTION LIMIT 0")
        try:
            yield name
        finally:
            admin.execute(f"DROP ROLE IF EXISTS {name}")


def test_postgresql_without_a_free_connection(role_without_connections):
    target = f"postgresql://{role_without_connections}:{PW}@127.0.0.1:5432/postgres"

    result = run("postgresql", target)

    assert_fails_with(result, "postgresql", "too many connections", "too many connections")


# --- The phrases themselves ------------------------------------------------------------------


def test_every_kind_has_its_phrases():
    assert set(PHRASES) == set(EndpointType.values)
    for kind, listed in PHRASES.items():
        assert len(listed) == len(set(listed)), kind
        assert all(len(phrase) <= 60 for phrase in listed), kind


def test_the_readme_lists_every_phrase():
    readme = README.read_text()
    listed = {phrase for kind in PHRASES.values() for phrase in kind}

    missing = {phrase for phrase in listed if f"`{phrase}`" not in readme}

    assert missing == set()


@pytest.mark.parametrize(
    ("kind", "error", "expected"),
    [
        ("http", "HTTP 503", True),
        ("http", "timed out after 2.5 s", True),
        ("http", "connection refused", True),
        ("http", "unexpected status 503", False),
        ("http", "HTTP 503: Service Unavailable", False),
        ("http", "authentication failed", False),  # a database's phrase, not HTTP's
        ("grpc", "gRPC UNAVAILABLE", True),
        ("postgresql", "authentication failed", True),
        ("postgresql", 'FATAL: role "x" does not exist', False),
        ("custom", "authentication failed", True),
        ("custom", "protocol not recognized", True),
    ],
)
def test_is_phrase(kind, error, expected):
    assert is_phrase(kind, error) is expected


@pytest.mark.parametrize(
    ("verify_code", "phrase"),
    [
        (10, "TLS certificate expired"),
        (62, "TLS certificate does not match the host"),
        (64, "TLS certificate does not match the host"),
        (18, "TLS certificate not trusted"),
        (20, "TLS certificate not trusted"),
    ],
)
def test_certificate_failures_by_their_verify_code(verify_code, phrase):
    error = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] verify failed")
    error.verify_code = verify_code

    assert describe_error(error)[0] == phrase


def test_an_unknown_failure_is_an_unexpected_error_with_its_text():
    phrase, detail = describe_error(RuntimeError("something\n  odd"))

    assert (phrase, detail) == ("unexpected error", "RuntimeError: something odd")
    assert re.fullmatch(r"[\w ]+", phrase)


# --- Stored, served and shown ----------------------------------------------------------------


def test_a_check_stores_the_phrase_and_the_detail_which_the_api_and_page_show(
    api, cast, closed_port
):
    target = f"postgresql://postgres:{PW}@{HOST}:{closed_port}/postgres"
    body = {
        "project": str(cast.project.id),
        "name": "Orders DB",
        "type": "postgresql",
        "target": target,
        "failure_threshold": 1,
    }
    created = api.as_user(cast.owner).post("/api/v1/endpoints", body, format="json")
    assert created.status_code == 201, created.content
    pk = created.json()["id"]

    assert api.post(f"/api/v1/endpoints/{pk}/check-now").status_code == 202

    check, incident = CheckResult.objects.get(), Incident.objects.get()
    assert check.error == "connection refused"
    assert "Connection refused" in check.error_detail  # libpq's own words
    assert incident.cause == "connection refused"
    (listed,) = api.get(f"/api/v1/endpoints/{pk}/checks").json()["results"]
    assert (listed["error"], listed["error_detail"]) == (check.error, check.error_detail)
    browser = Client()
    browser.force_login(cast.owner)
    page = browser.get(f"/endpoints/{pk}").content.decode()
    assert f'<small class="muted">{escape(check.error_detail)}</small>' in page
    for text in (check.error, check.error_detail, page, str(listed)):
        assert leaked(text, "postgres", PASSWORD) == []
