"""PostgreSQL unavailable for a few seconds: the API answers 503 problem+json
`service_unavailable` with Retry-After, quickly, pages a plain 503, and both recover.

The real-process tests run gunicorn against a TCP proxy in front of the machine's
PostgreSQL (which is shared: it is never stopped). The proxy plays a server that went
down (connections reset, new ones refused) and one that hangs (connections accepted,
never answered). With root, gunicorn also runs in a network namespace of its own whose
loopback the test takes down: packets are then dropped as on a partition, which only
TCP's own timeouts notice (see tests/faults/network.py).
"""

import http.client
import json
import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path

import pytest
from django.db import connection
from django.db.utils import OperationalError
from django.test import Client

from tests.faults.network import NetworkNamespace, TCPProxy
from tests.faults.processes import POSTGRESQL_ONLY, Processes, database_url, free_port, wait_for
from tests.helpers import assert_problem

API = "/api/v1/endpoints"
CLIENT_TIMEOUT = 30
TIMEOUT = 2  # DATABASE_CONNECT_TIMEOUT and DATABASE_TCP_TIMEOUT of the web process


def _refused(execute, sql, params, many, context):
    raise OperationalError("connection to server at 127.0.0.1, port 5432 failed: refused")


# --- In process: the mapping, on any database ----------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_an_api_request_without_its_database_answers_503_problem(cast, api):
    api.as_user(cast.owner)
    with connection.execute_wrapper(_refused):
        response = api.get(API)

    body = assert_problem(response, 503, "service_unavailable")
    assert response["Retry-After"] == "5"
    assert "try again" in body["detail"]


@pytest.mark.django_db(transaction=True)
def test_a_page_without_its_database_answers_a_plain_503(cast):
    client = Client(raise_request_exception=False)
    client.force_login(cast.owner)
    with connection.execute_wrapper(_refused):
        response = client.get("/", secure=True)

    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert b"try again in a few seconds" in response.content


# --- Real processes: gunicorn behind a proxy ------------------------------------------------


class Web:
    """gunicorn on a unix socket, its database reached through `proxy`."""

    def __init__(self, directory: Path, namespace: NetworkNamespace | None) -> None:
        self.namespace = namespace
        self.socket = Path(tempfile.mkdtemp(prefix="hm-web-")) / "web.sock"  # short: 108 bytes
        upstream = (
            connection.settings_dict["HOST"] or "127.0.0.1",
            int(connection.settings_dict["PORT"] or 5432),
        )
        port = free_port()
        self.proxy = TCPProxy(upstream, port, namespace.listener if namespace else None)
        self.processes = Processes(
            directory,
            {
                "DATABASE_URL": database_url("127.0.0.1", port),
                "DATABASE_CONNECT_TIMEOUT": str(TIMEOUT),
                "DATABASE_TCP_TIMEOUT": str(TIMEOUT),
                "CACHE_URL": "locmemcache://",  # the namespace reaches no Redis
                "SECURE_PROXY_SSL_HEADER": "true",
            },
        )
        command = [sys.executable, "-m", "gunicorn", "healthmon.wsgi", "--workers", "1"]
        command += ["--bind", f"unix:{self.socket}", "--timeout", "60"]
        self.processes.spawn("gunicorn", *(namespace.command(*command) if namespace else command))
        wait_for(lambda: self._serves(), timeout=30)

    def _serves(self) -> bool:
        """gunicorn answers its liveness route."""
        try:
            return self.get("/api/v1/health")[0] == 200
        except OSError:
            return False

    def get(self, path: str, **headers: str) -> tuple[int, dict[str, str], bytes, float]:
        """Status, headers, body and seconds taken, over the unix socket."""
        started = time.monotonic()
        client = _UnixHTTPConnection(str(self.socket))
        try:
            client.request("GET", path, headers={"X-Forwarded-Proto": "https", **headers})
            response = client.getresponse()
            body = response.read()
        finally:
            client.close()
        return response.status, dict(response.getheaders()), body, time.monotonic() - started

    def stop(self) -> None:
        self.processes.stop_all()
        self.proxy.stop()
        shutil.rmtree(self.socket.parent, ignore_errors=True)


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("localhost", timeout=CLIENT_TIMEOUT)
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    namespace = NetworkNamespace() if NetworkNamespace.available() else None
    server = Web(tmp_path_factory.mktemp("web"), namespace)
    try:
        yield server
    finally:
        server.stop()
        if namespace:
            namespace.close()
        server.processes.print_logs()


@pytest.fixture
def key(cast, make_key, web):
    """An API key, and the web process's database connection open (and kept: pooled)."""
    web.proxy.open()
    secret = make_key(cast.owner, "endpoint:read")
    assert web.get(API, Authorization=f"Bearer {secret}")[0] == 200
    return secret


def _assert_unavailable(answer) -> None:
    status, headers, body, _ = answer
    assert (status, headers["Content-Type"]) == (503, "application/problem+json"), body
    assert b'"code":"service_unavailable"' in body.replace(b" ", b"")
    assert headers["Retry-After"] == "5"


def _recovers(web, key) -> float:
    return wait_for(lambda: web.get(API, Authorization=f"Bearer {key}")[0] == 200, timeout=15)


@pytest.mark.django_db(transaction=True)
@POSTGRESQL_ONLY
def test_postgresql_down_answers_503_at_once_and_recovers(web, key, cast):
    client = Client()
    client.force_login(cast.owner)
    session = client.cookies["sessionid"].value

    web.proxy.refuse()
    answers = []
    for _ in range(10):
        answers.append(web.get(API, Authorization=f"Bearer {key}"))
        time.sleep(0.2)
    page = web.get("/", Cookie=f"sessionid={session}")
    health = web.get("/api/v1/health")
    web.proxy.open()
    recovered = _recovers(web, key)

    slowest = max(answer[3] for answer in answers)
    print(
        f"postgresql down: {len(answers)} API answers 503 in at most {slowest * 1000:.0f} ms; "
        f"200 again {recovered * 1000:.0f} ms after it was back"
    )
    for answer in answers:
        _assert_unavailable(answer)
    assert slowest < 1
    assert (page[0], page[1]["Retry-After"]) == (503, "5")
    assert page[1]["Content-Type"].startswith("text/html")
    assert health[0] == 200  # liveness never asks the database
    assert recovered < 2


@pytest.mark.django_db(transaction=True)
@POSTGRESQL_ONLY
def test_postgresql_that_accepts_and_never_answers_times_out_at_connect_timeout(web, key):
    web.proxy.refuse()  # drop the pooled connection: the next one is new
    web.proxy.silence()
    answer = web.get(API, Authorization=f"Bearer {key}")
    web.proxy.open()
    recovered = _recovers(web, key)

    print(
        f"postgresql silent: a new connection gave up and answered 503 after "
        f"{answer[3]:.1f} s (DATABASE_CONNECT_TIMEOUT={TIMEOUT}); 200 again after {recovered:.1f} s"
    )
    _assert_unavailable(answer)
    assert TIMEOUT - 0.5 < answer[3] < TIMEOUT + 1


@pytest.mark.django_db(transaction=True)
@POSTGRESQL_ONLY
def test_a_dead_network_under_an_open_connection_answers_503_at_the_tcp_timeout(web, key):
    if web.namespace is None:
        pytest.skip("dropping packets needs a network namespace (root)")
    web.namespace.loopback(up=False)
    try:
        pooled = web.get(API, Authorization=f"Bearer {key}")
        fresh = web.get(API, Authorization=f"Bearer {key}")
    finally:
        web.namespace.loopback(up=True)
    recovered = _recovers(web, key)

    print(
        f"dead network: 503 after {pooled[3]:.1f} s on the open connection, "
        f"{fresh[3]:.1f} s on a new one (both timeouts {TIMEOUT} s); "
        f"200 again {recovered:.1f} s after it was back"
    )
    _assert_unavailable(pooled)
    _assert_unavailable(fresh)
    # The open connection's health check gives up at the TCP timeout, then Django tries
    # a new connection, which gives up at the connect timeout.
    assert pooled[3] < 2 * TIMEOUT + 1.5
    assert fresh[3] < TIMEOUT + 1


@pytest.mark.django_db(transaction=True)
@POSTGRESQL_ONLY
def test_readyz_names_the_database_while_postgresql_is_down(web, key):
    web.proxy.refuse()
    down = web.get("/readyz")
    live = web.get("/healthz")
    web.proxy.open()
    _recovers(web, key)

    status, _, body, took = down
    assert status == 503, body
    assert "database" in json.loads(body)["failing"]
    assert took < 1
    assert live[0] == 200
