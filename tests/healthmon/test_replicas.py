"""Read replicas against a real streaming replica of the test database's PostgreSQL: the
dashboards', analytics' and status pages' reads go to it and nothing else does; no write
ever reaches it; a caller who wrote reads the primary for a while; a lagging or stopped
replica is skipped and the answers come from the primary, never a 500.

The statements each alias runs are recorded with `execute_wrapper`. The tests commit (the
replica sees only committed rows), hence `transaction=True`.
"""

import re
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
import time_machine
from django.contrib.sessions.models import Session
from django.db import DatabaseError, connections, router, transaction
from django.http import HttpResponse
from django.test import RequestFactory
from django.urls import resolve

from accounts.models import ProjectAccess, User
from apikeys.models import ApiKey
from healthmon.dbrouting import LAG_SQL, ReplicaReadsMiddleware, replicas_forget
from healthmon.settings import replica_databases
from monitoring.models import Endpoint
from statuspages.services import status_page_create
from statuspages.validation import PageInput, SectionIn
from tests.healthmon.replica_server import StreamingReplica, allow_replication
from tests.helpers import PASSWORD, log_in

REPLICA = "replica1"
pytestmark = [
    pytest.mark.postgres("a real streaming replica of the PostgreSQL primary"),
    pytest.mark.django_db(transaction=True, databases=["default", REPLICA]),
]
WRITE = re.compile(r"^\s*(INSERT|UPDATE|DELETE|COPY|TRUNCATE|CREATE|ALTER|DROP)\b", re.IGNORECASE)


@pytest.fixture(scope="session")
def replica_server(django_db_setup: None, django_db_blocker: Any) -> Iterator[StreamingReplica]:
    """One streaming replica for the session, known to Django as `replica1` (the alias
    DATABASE_REPLICA_URLS would give it), on the primary's test database."""
    with django_db_blocker.unblock():
        primary = dict(connections["default"].settings_dict)
    libpq = {
        "host": primary["HOST"] or "127.0.0.1",
        "port": primary["PORT"] or 5432,
        "user": primary["USER"] or "postgres",
    }
    server = StreamingReplica(libpq, primary["NAME"])
    with ExitStack() as stack:
        admin = stack.enter_context(psycopg.connect(**libpq, dbname="postgres", autocommit=True))
        stack.enter_context(allow_replication(admin))
        stack.callback(server.remove)
        server.create()
        server.start()
        url = f"postgres://{libpq['user']}@127.0.0.1:{server.port}/{primary['NAME']}"
        replica = replica_databases([url], primary)[REPLICA]
        connections.settings[REPLICA] = connections.configure_settings(
            {"default": primary, REPLICA: replica}
        )[REPLICA]
        stack.callback(connections.settings.pop, REPLICA)
        stack.callback(connections.close_all)
        yield server


@pytest.fixture
def replica(replica_server: StreamingReplica, settings: Any) -> Iterator[StreamingReplica]:
    """The replica configured for this test; its health asked afresh."""
    settings.DATABASE_REPLICAS = [REPLICA]
    # Each test waits for the replica to replay its writes before it reads; other work on a
    # shared primary can keep the replica tens of seconds behind. Only the lag test asks for
    # a tight limit.
    settings.DATABASE_REPLICA_MAX_LAG_SECONDS = 3600
    # Asked once per test; a test that needs a fresh answer forgets the last one.
    settings.DATABASE_REPLICA_CHECK_SECONDS = 60
    settings.READ_YOUR_WRITES_SECONDS = 10
    replicas_forget()
    yield replica_server
    replicas_forget()


def caught_up(server: StreamingReplica) -> None:
    """Wait until the replica has every commit made so far."""
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT pg_current_wal_lsn()::text")
        server.catch_up(cursor.fetchone()[0])


@contextmanager
def statements() -> Iterator[dict[str, list[str]]]:
    """The SQL each alias runs inside, by alias."""
    seen: dict[str, list[str]] = {"default": [], REPLICA: []}
    with ExitStack() as stack:
        for alias, log in seen.items():

            def record(
                execute: Callable[..., Any], sql: str, *args: Any, log: list[str] = log
            ) -> Any:
                log.append(sql)
                return execute(sql, *args)

            stack.enter_context(connections[alias].execute_wrapper(record))
        yield seen


def reads(seen: dict[str, list[str]]) -> list[str]:
    """The replica's statements apart from its health check."""
    return [sql for sql in seen[REPLICA] if sql != LAG_SQL]


@pytest.fixture
def world(cast: Any, make_endpoint: Any, record: Any) -> dict[str, Any]:
    """An endpoint with checks and a public status page showing it."""
    endpoint = make_endpoint(cast.project, name="Website")
    now = datetime.now(UTC).replace(microsecond=0)
    record(endpoint, [(now - timedelta(minutes=m), m != 3, 20.0 + m) for m in range(1, 6)])
    page = PageInput(
        name="Acme status",
        slug="acme",
        title="",
        description="",
        visibility="public",
        password=None,
        custom_domain=None,
        uptime_days=90,
        show_response_times=False,
        sections=(SectionIn(name="Services", endpoints=(endpoint,)),),
    )
    status_page_create(organization=cast.org, data=page)
    return {"endpoint": endpoint}


READ_PAGES = ["/", "/endpoints/{id}", "/compare?endpoints={id}"]
READ_API = ["/api/v1/analytics/summary", "/api/v1/analytics/uptime", "/api/v1/status-pages"]
PUBLIC = ["/status/acme", "/status/acme/summary.json", "/status/acme/history.atom"]


def test_dashboard_analytics_and_status_page_reads_hit_the_replica(
    replica, world, cast, client, api
):
    client.force_login(cast.owner)
    api.as_user(cast.owner)
    anonymous = type(client)()
    caught_up(replica)
    endpoint_id = world["endpoint"].pk

    for path, who in [
        *((page.format(id=endpoint_id), client) for page in READ_PAGES),
        *((route, api) for route in READ_API),
        *((route, anonymous) for route in PUBLIC),
    ]:
        with statements() as seen:
            response = who.get(path)

        assert response.status_code == 200, (path, response.content[:300])
        assert reads(seen), f"{path} read nothing from the replica"
        # Raw SQL included: the rollups' statements (day bars, report figures) follow the router.
        assert not [sql for sql in seen["default"] if "analytics_rollup" in sql], path
        # A read: SELECT or WITH, or a compound SELECT, which Django parenthesises (a series
        # and the five-minute rows past the fold's watermark, UNION ALL).
        assert all(
            sql.lstrip().lstrip("(").upper().startswith(("SELECT", "WITH")) for sql in seen[REPLICA]
        )
        assert b"Website" in response.content or b"Acme status" in response.content, path


def test_other_routes_read_the_primary_only(replica, world, cast, client, api):
    client.force_login(cast.owner)
    caught_up(replica)

    for path, who in [("/incidents", client), ("/api/v1/endpoints", api.as_user(cast.owner))]:
        with statements() as seen:
            response = who.get(path)

        assert response.status_code == 200, path
        assert seen[REPLICA] == [], path
        assert seen["default"]


def test_health_is_asked_once_per_interval_per_process(replica, world, cast, client):
    client.force_login(cast.owner)
    caught_up(replica)

    with statements() as seen:
        for _ in range(3):
            assert client.get("/").status_code == 200

    assert seen[REPLICA].count(LAG_SQL) == 1
    assert len(reads(seen)) > 3


def test_no_write_ever_goes_to_a_replica(replica, cast, client, api, record):
    with statements() as seen:
        assert (
            client.post("/login", {"email": cast.owner.email, "password": PASSWORD}).status_code
            == 302
        )
        assert log_in(api, cast.owner.email).status_code == 200
        api.as_user(cast.owner)
        created = api.post(
            "/api/v1/endpoints",
            {
                "project": str(cast.project.id),
                "name": "Shop",
                "type": "http",
                "target": "https://shop.example.com/",
            },
        )
        assert created.status_code == 201, created.content
        pk = created.json()["id"]
        assert api.patch(f"/api/v1/endpoints/{pk}", {"name": "Shop 2"}).status_code == 200
        page = api.post("/api/v1/status-pages", {"name": "Shop status", "slug": "shop"})
        assert page.status_code == 201, page.content
        record(Endpoint.objects.get(pk=pk), [(datetime.now(UTC), True, 12.0)])
        # Reads after writes, in opted-in routes: the caller's own reads stay on the primary.
        assert client.get("/").status_code == 200
        assert api.get("/api/v1/analytics/summary").status_code == 200
        assert api.delete(f"/api/v1/endpoints/{pk}").status_code == 204

    assert [sql for sql in seen[REPLICA] if WRITE.match(sql)] == []
    assert seen[REPLICA] == []
    assert any(sql.startswith("INSERT") for sql in seen["default"])
    assert any(sql.startswith("UPDATE") for sql in seen["default"])
    assert any(sql.startswith("DELETE") for sql in seen["default"])


def test_the_replica_connection_itself_is_read_only(replica):
    with connections[REPLICA].cursor() as cursor:
        cursor.execute("SHOW default_transaction_read_only")
        assert cursor.fetchone()[0] == "on"
        with pytest.raises(DatabaseError, match="read-only transaction"):
            cursor.execute("CREATE TEMPORARY TABLE scratch (id int)")


def test_writes_and_transactions_never_route_to_a_replica(replica, rf: RequestFactory):
    request = rf.get("/")
    request.resolver_match = resolve("/")
    routed: dict[str, Any] = {}

    def view(request: Any) -> Any:
        middleware.process_view(request, view, (), {})
        routed["read"] = router.db_for_read(Endpoint)
        routed["access"] = {router.db_for_read(m) for m in (User, ProjectAccess, ApiKey, Session)}
        with transaction.atomic():
            routed["in atomic"] = router.db_for_read(Endpoint)
        routed["write"] = router.db_for_write(Endpoint)
        routed["read after write"] = router.db_for_read(Endpoint)
        return HttpResponse()

    middleware = ReplicaReadsMiddleware(view)
    middleware(request)

    assert routed == {
        "read": REPLICA,
        # Who the caller is, and whether a key is revoked, is never read behind the primary.
        "access": {"default"},
        "in atomic": "default",
        "write": "default",
        "read after write": "default",
    }
    assert router.db_for_read(Endpoint) == "default"  # outside any request: workers


def test_a_caller_who_wrote_reads_the_primary_until_the_window_ends(
    replica, world, cast, client, api
):
    endpoint = world["endpoint"]
    client.post("/login", {"email": cast.owner.email, "password": PASSWORD})
    api.as_user(cast.owner)
    created = api.post(
        "/api/v1/endpoints",
        {
            "project": str(cast.project.id),
            "name": "Fresh",
            "type": "http",
            "target": "https://fresh.example.com/",
        },
    )
    assert created.status_code == 201

    with statements() as seen:
        assert client.get(f"/endpoints/{endpoint.pk}").status_code == 200  # signed in just now
        summary = api.get("/api/v1/analytics/summary")
    assert seen[REPLICA] == []
    assert "Fresh" in {row["name"] for row in summary.json()["results"]}

    caught_up(replica)
    later = datetime.now(UTC) + timedelta(seconds=11)
    with time_machine.travel(later, tick=True), statements() as seen:
        assert client.get(f"/endpoints/{endpoint.pk}").status_code == 200
        assert api.get("/api/v1/analytics/summary").status_code == 200
    assert len(reads(seen)) >= 2


def test_a_lagging_replica_is_skipped_and_the_primary_answers_fresh(
    replica, world, cast, client, settings
):
    settings.DATABASE_REPLICA_MAX_LAG_SECONDS = 1
    endpoint = world["endpoint"]
    client.force_login(cast.owner)
    caught_up(replica)
    replica.sql("SELECT pg_wal_replay_pause()")
    try:
        Endpoint.objects.filter(pk=endpoint.pk).update(name="Renamed")
        replica.wait_lag_over(1.0, LAG_SQL)
        replicas_forget()

        with statements() as seen:
            page = client.get(f"/endpoints/{endpoint.pk}")
            status = type(client)().get("/status/acme")

        assert (page.status_code, status.status_code) == (200, 200)
        assert b"Renamed" in page.content
        assert b"Renamed" in status.content
        assert reads(seen) == []
        stale = replica.sql("SELECT name FROM monitoring_endpoint WHERE id = %s", endpoint.pk)
        assert stale == [("Website",)]
    finally:
        replica.sql("SELECT pg_wal_replay_resume()")


def test_a_replica_cut_off_from_its_primary_is_skipped_though_it_replayed_all_it_got(
    replica, world, cast, client, settings
):
    """Streaming stopped (the primary out of reach): the received position stands still and
    replay catches up with it, yet the replica's data gets older by the second."""
    endpoint = world["endpoint"]
    client.force_login(cast.owner)
    caught_up(replica)
    conninfo = replica.sql("SHOW primary_conninfo")[0][0]
    replica.run("ALTER SYSTEM SET primary_conninfo = 'host=127.0.0.1 port=1 user=postgres'")
    replica.sql("SELECT pg_reload_conf()")
    try:
        replica.wait_lag_over(3600, LAG_SQL)  # no receiver streams: infinitely behind
        Endpoint.objects.filter(pk=endpoint.pk).update(name="Renamed")
        replicas_forget()

        with statements() as seen:
            page = client.get(f"/endpoints/{endpoint.pk}")

        assert page.status_code == 200
        assert b"Renamed" in page.content
        assert reads(seen) == []
    finally:
        quoted = conninfo.replace("'", "''")  # ALTER SYSTEM takes no parameters
        replica.run(f"ALTER SYSTEM SET primary_conninfo = '{quoted}'")
        replica.sql("SELECT pg_reload_conf()")
        caught_up(replica)


@pytest.mark.parametrize("kind", ["page", "api"])
def test_a_stopped_replica_is_skipped_and_the_primary_answers(
    replica, world, cast, client, api, kind
):
    endpoint = world["endpoint"]
    client.force_login(cast.owner)
    api.as_user(cast.owner)
    who, first, then = {
        "page": (client, "/", f"/endpoints/{endpoint.pk}"),
        "api": (api, "/api/v1/analytics/summary", "/api/v1/analytics/uptime"),
    }[kind]
    caught_up(replica)
    with statements() as seen:  # the replica is healthy, and its connection open...
        assert who.get(first).status_code == 200
    assert reads(seen)
    replica.stop()
    try:
        # ...and fails in the middle of the next request: answered again from the primary.
        with statements() as seen:
            response = who.get(then)
        assert response.status_code == 200, response.content[:300]
        assert reads(seen)  # it was tried
        # Known down now, and still down when asked again: straight to the primary.
        replicas_forget()
        for reader, path in [(who, first), (type(client)(), "/status/acme")]:
            with statements() as seen:
                response = reader.get(path)
            assert response.status_code == 200, (path, response.content[:300])
            assert reads(seen) == []
    finally:
        replica.start()
