"""DATABASE_REPLICA_URLS and its tuning settings, read at start; the routes that opt into
replica reads exist; migrations never run on a replica. No replica server needed (the
tests against a real one are in test_replicas.py)."""

import json
import os
import subprocess
import sys

import pytest
from django.db import router
from django.urls import URLPattern, URLResolver, get_resolver

from healthmon.dbrouting import READ_ROUTE_PREFIXES, READ_ROUTES

PRIMARY = "postgres://postgres@127.0.0.1:5432/healthmon"
SHARED_CACHE = "redis://127.0.0.1:6379/0"  # only named here: nothing connects to it
SHOW = (
    "import json, healthmon.settings as s; "
    "print(json.dumps({'replicas': s.DATABASE_REPLICAS, 'databases': s.DATABASES}, default=str))"
)


def _start(**env: str) -> subprocess.CompletedProcess[str]:
    environment = {
        k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "READ_YOUR"))
    }
    environment.update({"DATABASE_URL": PRIMARY, "CACHE_URL": SHARED_CACHE, **env})
    return subprocess.run(  # noqa: S603 - our own command line
        [sys.executable, "-c", SHOW], env=environment, capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize("cache", ["locmemcache://", "dummycache://"])
def test_replicas_need_a_cache_every_web_process_shares(cache):
    started = _start(
        DATABASE_REPLICA_URLS="postgres://reader:pw@replica-a/healthmon", CACHE_URL=cache
    )

    assert started.returncode != 0
    assert "needs a cache shared by every web process" in started.stderr
    assert "pw@" not in started.stderr


def test_a_process_local_cache_is_fine_without_replicas():
    assert _start(CACHE_URL="locmemcache://").returncode == 0


def test_no_replica_by_default():
    started = _start()

    assert started.returncode == 0, started.stderr
    assert json.loads(started.stdout)["replicas"] == []


def test_each_url_becomes_a_read_only_alias_with_the_primarys_connection_settings():
    started = _start(
        DATABASE_REPLICA_URLS=(
            "postgres://reader:pw@replica-a:5433/healthmon?sslmode=require,"
            " postgres://reader:pw@replica-b/healthmon"
        ),
        DATABASE_CONN_MAX_AGE="30",
    )

    assert started.returncode == 0, started.stderr
    shown = json.loads(started.stdout)
    primary, first, second = (shown["databases"][a] for a in ("default", "replica1", "replica2"))
    assert shown["replicas"] == ["replica1", "replica2"]
    assert (first["HOST"], first["PORT"], first["USER"]) == ("replica-a", 5433, "reader")
    assert second["HOST"] == "replica-b"
    for replica in (first, second):
        assert replica["CONN_MAX_AGE"] == primary["CONN_MAX_AGE"] == 30
        assert replica["CONN_HEALTH_CHECKS"] is True
        assert replica["OPTIONS"]["options"] == "-c default_transaction_read_only=on"
        assert replica["OPTIONS"]["connect_timeout"] == 2  # short: the primary's is 5
        assert replica["OPTIONS"]["keepalives_idle"] == primary["OPTIONS"]["keepalives_idle"]
        assert replica["TEST"] == {"MIRROR": "default"}
    assert first["OPTIONS"]["sslmode"] == "require"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"DATABASE_URL": "sqlite:////tmp/x.sqlite3", "DATABASE_REPLICA_URLS": PRIMARY},
            "DATABASE_REPLICA_URLS needs PostgreSQL as the default database",
        ),
        ({"DATABASE_REPLICA_URLS": "mysql://u:s3cret@h/db"}, "entry 1 is not a PostgreSQL URL"),
        ({"DATABASE_REPLICA_URLS": f"{PRIMARY},nonsense"}, "entry 2 is not a PostgreSQL URL"),
        (
            {"DATABASE_REPLICA_URLS": "postgres://u:s3cret@h:port/db"},
            "entry 1 is not a PostgreSQL URL",
        ),
        ({"DATABASE_REPLICA_URLS": "postgres://u:s3cret@h:5432"}, "with a database name"),
        ({"DATABASE_REPLICA_MAX_LAG_SECONDS": "soon"}, "must be a whole number"),
        ({"DATABASE_REPLICA_CHECK_SECONDS": "0"}, "between 1 and 60"),
        ({"READ_YOUR_WRITES_SECONDS": "0"}, "between 1 and 3600"),
        (
            {
                "DATABASE_REPLICA_URLS": PRIMARY,
                "DATABASE_REPLICA_MAX_LAG_SECONDS": "30",
                "READ_YOUR_WRITES_SECONDS": "20",
            },
            "READ_YOUR_WRITES_SECONDS must be at least DATABASE_REPLICA_MAX_LAG_SECONDS plus",
        ),
    ],
)
def test_bad_replica_settings_fail_at_start_with_a_clear_message(env, message):
    started = _start(**env)

    assert started.returncode != 0
    assert message in started.stderr
    assert "s3cret" not in started.stderr


def _route_names(patterns: list[URLPattern | URLResolver]) -> set[str]:
    names: set[str] = set()
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            names |= _route_names(pattern.url_patterns)
        elif pattern.name:
            names.add(pattern.name)
    return names


def test_every_route_opted_into_replica_reads_exists():
    names = _route_names(get_resolver().url_patterns)
    names |= _route_names(get_resolver("statuspages.domain_urls").url_patterns)

    assert names >= READ_ROUTES, READ_ROUTES - names
    for prefix in READ_ROUTE_PREFIXES:
        assert any(name.startswith(prefix) for name in names), prefix


def test_migrations_never_run_on_a_replica(settings):
    settings.DATABASE_REPLICAS = ["replica1"]

    assert router.allow_migrate("replica1", "monitoring") is False
    assert router.allow_migrate("default", "monitoring") is True


def test_who_the_caller_is_is_never_read_from_a_replica(settings, monkeypatch):
    """Inside a request opted into replica reads, the access-deciding rows stay on the
    primary while the analytics rows go to the (healthy) replica."""
    from django.contrib.sessions.models import Session

    from accounts.models import ProjectAccess, User
    from analytics.models import HourRollup
    from apikeys.models import ApiKey
    from healthmon import dbrouting

    settings.DATABASE_REPLICAS = ["replica1"]
    monkeypatch.setattr(dbrouting, "replica_healthy", lambda alias: True)
    token = dbrouting._scope.set(dbrouting._Scope(credentials=[], replica_reads=True))
    try:
        assert router.db_for_read(HourRollup) == "replica1"
        for model in (User, ProjectAccess, ApiKey, Session):
            assert router.db_for_read(model) == "default", model
    finally:
        dbrouting._scope.reset(token)
