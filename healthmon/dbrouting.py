"""Read replicas: the reads of the dashboards, analytics and status pages go to a healthy
PostgreSQL streaming replica; everything else, every write and every worker, to the primary.

A request's reads may use a replica only inside the scope `ReplicaReadsMiddleware` opens for
the routes named in `READ_ROUTES` (safe methods only), outside any transaction, before the
request wrote anything, and when the caller has not written in the last
READ_YOUR_WRITES_SECONDS. A replica that is down or lags more than
DATABASE_REPLICA_MAX_LAG_SECONDS is skipped; one that fails in the middle of a request has
the view answered again from the primary. README, "Read replicas".
"""

import hashlib
import random
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from contextlib import suppress
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import MiddlewareNotUsed
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections, router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.http import HttpRequest, HttpResponse

from healthmon.errors import DATABASE_UNAVAILABLE
from healthmon.logging import get_logger

logger = get_logger("healthmon.dbrouting")

# URL names (healthmon/urls.py and the apps' urls.py) whose GETs read from a replica: the
# dashboards (analytics/urls.py), the analytics API (analytics/api/urls.py), the public status
# pages, their feeds and badges, on our host or a custom domain (statuspages/urls.py,
# statuspages/domain_urls.py), and the status-page API (statuspages/api/urls.py). Forms that
# are read and then written back (edit pages, subscribe links) stay on the primary.
READ_ROUTES = frozenset(
    {
        "overview",
        "endpoint",
        "compare",
        "status-page",
        "status-summary",
        "status-atom",
        "status-rss",
        "badge",
        "domain-page",
        "domain-summary",
        "domain-atom",
        "domain-rss",
        "status-page-list",
        "status-page-detail",
    }
)
READ_ROUTE_PREFIXES = ("analytics-",)
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

# Cut off (infinitely behind) when no WAL receiver streams from the primary: the received
# position then stands still and replay catches up with it, so the positions alone would
# read 0 for a replica whose data stopped hours ago. (The receiver's pid is shown to any
# role, its status only to pg_read_all_stats; an unknown status counts as streaming.)
# Behind when the replica has received WAL it has not replayed yet: then by as long as the
# last transaction it replayed is old. Not behind when it has replayed all it received: an
# idle primary sends nothing, and the age of the last transaction says nothing about lag.
LAG_SQL = """
    SELECT CASE
        WHEN NOT EXISTS (
            SELECT 1 FROM pg_stat_wal_receiver
            WHERE pid IS NOT NULL AND COALESCE(status, 'streaming') = 'streaming'
        )
        THEN 'Infinity'::float8
        WHEN pg_last_wal_receive_lsn() IS DISTINCT FROM pg_last_wal_replay_lsn()
        THEN COALESCE(
            EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp())::float8,
            'Infinity'::float8
        )
        ELSE 0
    END
"""


# Who the caller is and what they may see is always read on the primary: a key revoked, a
# user deactivated or a member demoted a moment ago must be refused at once, not after the
# replica replays it (accounts/authentication.py re-reads that state on every request).
PRIMARY_ONLY_APPS = frozenset({"accounts", "apikeys", "auth", "sessions"})


@dataclass
class _Scope:
    """One request's routing state."""

    credentials: list[str]
    replica_reads: bool = False  # the route opted in, and the caller wrote nothing lately
    wrote: bool = False
    retried: bool = False
    chosen: bool = False
    replica: str | None = None


_scope: ContextVar[_Scope | None] = ContextVar("healthmon_db_scope", default=None)

# alias -> (time.monotonic() of the check, healthy); shared by the threads of a process.
_health: dict[str, tuple[float, bool]] = {}
_checking: defaultdict[str, threading.Lock] = defaultdict(threading.Lock)


def replicas_forget() -> None:
    """Forget what this process knows of the replicas' health (tests)."""
    _health.clear()


def _lag_seconds(alias: str) -> float:
    with connections[alias].cursor() as cursor:
        cursor.execute(LAG_SQL)
        return float(cursor.fetchone()[0])


def _close_if_broken(alias: str) -> None:
    with suppress(DatabaseError):  # closing what the server already dropped
        connections[alias].close_if_unusable_or_obsolete()


def _check(alias: str) -> bool:
    try:
        lag = _lag_seconds(alias)
    except DatabaseError as exc:
        logger.warning("replica_unavailable", alias=alias, error=type(exc).__name__)
        _close_if_broken(alias)
        return False
    if lag > settings.DATABASE_REPLICA_MAX_LAG_SECONDS:
        logger.warning("replica_lagging", alias=alias, lag_seconds=round(lag, 1))
        return False
    return True


def replica_healthy(alias: str) -> bool:
    """Whether the replica answers and is close enough behind, asked at most every
    DATABASE_REPLICA_CHECK_SECONDS per process; while another thread asks, the last answer
    stands (a replica never asked counts as unhealthy)."""
    known = _health.get(alias)
    if known is not None and time.monotonic() - known[0] < settings.DATABASE_REPLICA_CHECK_SECONDS:
        return known[1]
    lock = _checking[alias]
    if not lock.acquire(blocking=False):
        return known is not None and known[1]
    try:
        healthy = _check(alias)
        _health[alias] = (time.monotonic(), healthy)
        return healthy
    finally:
        lock.release()


def _mark_down(alias: str) -> None:
    _health[alias] = (time.monotonic(), False)


def _replica_for(scope: _Scope) -> str | None:
    if not scope.chosen:
        scope.chosen = True
        healthy = [alias for alias in settings.DATABASE_REPLICAS if replica_healthy(alias)]
        # Spreading reads, not a secret.
        scope.replica = random.choice(healthy) if healthy else None  # noqa: S311
    return scope.replica


def replica_in_use() -> bool:
    """Whether this request read from a replica and has not been answered again from the
    primary yet (healthmon.api.errors lets the failure through to the middleware then)."""
    scope = _scope.get()
    return scope is not None and scope.replica is not None and not scope.retried


class ReplicaRouter:
    """Send reads inside an opted-in request scope to a healthy replica; all else to the
    primary."""

    def db_for_read(self, model: Any, **hints: Any) -> str | None:
        """A replica inside the scope, outside transactions and before any write."""
        scope = _scope.get()
        if scope is None or not scope.replica_reads or scope.wrote or scope.retried:
            return None
        if model._meta.app_label in PRIMARY_ONLY_APPS:
            return None
        if connections[DEFAULT_DB_ALIAS].in_atomic_block:
            return None
        return _replica_for(scope)

    def db_for_write(self, model: Any, **hints: Any) -> str:
        """The primary, always; the request's later reads follow it there."""
        scope = _scope.get()
        if scope is not None:
            scope.wrote = True
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool | None:
        """Rows of the primary and its replicas are the same rows."""
        same = {DEFAULT_DB_ALIAS, *settings.DATABASE_REPLICAS}
        return True if {obj1._state.db, obj2._state.db} <= same else None

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool | None:
        """Never on a replica: it follows the primary's schema by itself."""
        return False if db in settings.DATABASE_REPLICAS else None


# --- Read-your-writes ------------------------------------------------------------------------
# Kept in the cache, keyed by a digest of the caller's credential (the session cookie, or the
# Authorization header of an API client): API clients keep no cookies, and every web process
# shares the cache. A caller's writes stick only that credential to the primary, not the
# same user's other sessions.


def read_connection(model: Any) -> BaseDatabaseWrapper:
    """The connection the router reads this model from: for raw SQL, which the ORM's
    routing does not reach (a replica on the routes that read from one)."""
    return connections[router.db_for_read(model) or DEFAULT_DB_ALIAS]


def _ryw_key(credential: str) -> str:
    return "hm:ryw:" + hashlib.sha256(credential.encode()).hexdigest()[:40]


def _wrote_lately(credentials: Iterable[str]) -> bool:
    keys = [_ryw_key(credential) for credential in credentials]
    if not keys:
        return False
    try:
        until = cache.get_many(keys).values()
    except Exception:  # the cache's own errors (Redis down): stay safe on the primary
        logger.warning("read_your_writes_unknown", exc_info=True)
        return True
    return any(value > time.time() for value in until)


def _remember_write(credentials: Iterable[str]) -> None:
    seconds = settings.READ_YOUR_WRITES_SECONDS
    until = time.time() + seconds
    try:
        cache.set_many({_ryw_key(c): until for c in credentials}, timeout=seconds + 1)
    except Exception:  # losing it costs a few stale reads, not the request
        logger.warning("read_your_writes_lost", exc_info=True)


def _credentials(request: HttpRequest) -> list[str]:
    offered = (
        request.COOKIES.get(settings.SESSION_COOKIE_NAME),
        request.headers.get("Authorization"),
    )
    return [credential for credential in offered if credential]


def _opted_in(request: HttpRequest) -> bool:
    match = request.resolver_match
    name = (match.url_name if match else None) or ""
    return request.method in SAFE_METHODS and (
        name in READ_ROUTES or name.startswith(READ_ROUTE_PREFIXES)
    )


class ReplicaReadsMiddleware:
    """Open each request's routing scope; let the opted-in routes read from a replica; stick
    a caller who wrote to the primary; answer from the primary when a replica fails."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        if not settings.DATABASE_REPLICAS:
            raise MiddlewareNotUsed
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        """Answer within the scope, then remember a write for read-your-writes."""
        scope = _Scope(credentials=_credentials(request))
        token = _scope.set(scope)
        try:
            response = self.get_response(request)
        finally:
            _scope.reset(token)
        if scope.wrote or (request.method not in SAFE_METHODS and scope.credentials):
            session = getattr(request, "session", None)
            fresh = getattr(session, "session_key", None)  # a sign-in's new session
            _remember_write([*scope.credentials, *([fresh] if fresh else [])])
        return response

    def process_view(
        self, request: HttpRequest, view: Callable[..., Any], args: Any, kwargs: Any
    ) -> None:
        """Open the replica to an opted-in route's reads, unless the caller wrote lately."""
        scope = _scope.get()
        if scope is not None and _opted_in(request):
            scope.replica_reads = not _wrote_lately(scope.credentials)

    def process_exception(self, request: HttpRequest, exception: Exception) -> Any:
        """The replica failed mid-request: mark it down, answer again from the primary."""
        scope = _scope.get()
        if not isinstance(exception, DATABASE_UNAVAILABLE) or scope is None:
            return None
        if scope.replica is None or scope.retried:
            return None
        logger.warning("replica_failed", alias=scope.replica, error=type(exception).__name__)
        _mark_down(scope.replica)
        _close_if_broken(scope.replica)
        scope.retried = True
        match = request.resolver_match
        if match is None:
            return None
        return match.func(request, *match.args, **match.kwargs)
