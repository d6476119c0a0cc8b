"""Read replicas and operations (/healthz, /readyz, /metrics)."""

import hashlib
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

import environ
from django.core.exceptions import ImproperlyConfigured

from healthmon.settings._env import BASE_DIR, _bool, _int_between, env
from healthmon.settings.core import CACHES, DATABASES

# --- Read replicas (README, "Read replicas") ------------------------------------------------
# PostgreSQL streaming replicas serve the reads of the dashboards, analytics and status pages
# (healthmon.dbrouting); every write, every worker and every other page use the primary.
# A new replica connection gives up after this long (libpq's least), so that a replica out of
# reach costs a request seconds at most before its reads go to the primary.
REPLICA_CONNECT_TIMEOUT_SECONDS = 2


def _replica_database(number: int, url: str, primary: dict[str, Any]) -> dict[str, Any]:
    # The message names the entry, never the URL: it may hold a password (so does
    # django-environ's warning about an unknown scheme, hence silenced).
    wrong = ImproperlyConfigured(
        f"DATABASE_REPLICA_URLS: entry {number} is not a PostgreSQL URL with a database name "
        "(postgres://user:password@host:5432/name)."
    )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            config = environ.Env.db_url_config(url.strip())
    except ValueError:
        raise wrong from None
    if config.get("ENGINE") != primary["ENGINE"] or not config.get("NAME"):
        raise wrong
    options = {
        **primary.get("OPTIONS", {}),
        "connect_timeout": REPLICA_CONNECT_TIMEOUT_SECONDS,
        **config.get("OPTIONS", {}),  # what the replica's URL sets wins
    }
    # A standby refuses writes anyway; a URL that names a primary (or a promoted standby)
    # must refuse them too.
    options["options"] = f"{options.get('options', '')} -c default_transaction_read_only=on"
    options["options"] = options["options"].strip()
    # MIRROR: tests make no database of their own on a replica; it shows the primary's.
    return {**primary, **config, "OPTIONS": options, "TEST": {"MIRROR": "default"}}


def replica_databases(urls: list[str], primary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The aliases `replica1`, `replica2`, ... of these URLs, with the primary's connection
    settings (CONN_MAX_AGE, health checks, timeouts, TCP keepalives) and read-only sessions."""
    if urls and primary["ENGINE"] != "django.db.backends.postgresql":
        raise ImproperlyConfigured(
            "DATABASE_REPLICA_URLS needs PostgreSQL as the default database (DATABASE_URL): "
            "SQLite has no replicas."
        )
    return {
        f"replica{number}": _replica_database(number, url, primary)
        for number, url in enumerate(urls, start=1)
    }


_replicas = replica_databases(env.list("DATABASE_REPLICA_URLS", default=[]), DATABASES["default"])
DATABASES.update(_replicas)
DATABASE_REPLICAS = list(_replicas)
DATABASE_ROUTERS = ["healthmon.dbrouting.ReplicaRouter"]
# A replica further behind than this is skipped until it catches up; its health is asked at
# most this often per process. After a write, the caller reads the primary for
# READ_YOUR_WRITES_SECONDS: a replica in use may be up to the lag plus the check behind.
DATABASE_REPLICA_MAX_LAG_SECONDS = _int_between("DATABASE_REPLICA_MAX_LAG_SECONDS", 5, 0, 3600)
DATABASE_REPLICA_CHECK_SECONDS = _int_between("DATABASE_REPLICA_CHECK_SECONDS", 2, 1, 60)
READ_YOUR_WRITES_SECONDS = _int_between("READ_YOUR_WRITES_SECONDS", 10, 1, 3600)
if DATABASE_REPLICAS and (
    READ_YOUR_WRITES_SECONDS < DATABASE_REPLICA_MAX_LAG_SECONDS + DATABASE_REPLICA_CHECK_SECONDS
):
    raise ImproperlyConfigured(
        "READ_YOUR_WRITES_SECONDS must be at least DATABASE_REPLICA_MAX_LAG_SECONDS plus "
        "DATABASE_REPLICA_CHECK_SECONDS: a replica in use may be that far behind a write."
    )
if DATABASE_REPLICAS and CACHES["default"]["BACKEND"].endswith(("LocMemCache", "DummyCache")):
    # Who wrote lately is kept in the cache: a cache of one process would send a user's
    # next request, served by another process, to a replica that has not seen the write.
    raise ImproperlyConfigured(
        "DATABASE_REPLICA_URLS needs a cache shared by every web process (CACHE_URL, e.g. "
        "redis://): read-your-writes is kept there."
    )

# --- Operations: /healthz, /readyz, /metrics -----------------------------------------------

METRICS_ENABLED = _bool("METRICS_ENABLED", True)
# When set, /metrics wants `Authorization: Bearer <METRICS_TOKEN>`.
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
# prometheus-client's multiprocess mode: every process of this checkout (web, workers, beat)
# writes its samples here and /metrics sums them, so they must share it. The default, under
# the system's temporary directory (writable even when the code directory is not), is keyed
# by user and checkout; it is made at start, as is a configured one.
_metrics_key = hashlib.sha256(str(BASE_DIR).encode()).hexdigest()[:12]
PROMETHEUS_MULTIPROC_DIR = Path(
    env.str("PROMETHEUS_MULTIPROC_DIR", default="")
    or Path(tempfile.gettempdir()) / f"healthmon-metrics-{os.getuid()}-{_metrics_key}"
)
try:
    PROMETHEUS_MULTIPROC_DIR.mkdir(parents=True, exist_ok=True)
except OSError as exc:
    raise ImproperlyConfigured(
        f"PROMETHEUS_MULTIPROC_DIR={str(PROMETHEUS_MULTIPROC_DIR)!r} cannot be made: {exc}"
    ) from exc
# prometheus-client reads the variable itself, when it is first imported (after settings).
os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(PROMETHEUS_MULTIPROC_DIR)
# The dispatcher runs every second: silent this long, /readyz reports it (API-CONTRACT.md).
DISPATCHER_SILENCE_SECONDS = 60
