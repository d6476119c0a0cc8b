"""Shared fixtures: an API client that commits like production, the fixed cast, factories,
local peers; and the tiers every test is sorted into.

The cast in every API test module: an owner, an admin and a member of one organization (the
member granted its default project), and an outsider who owns another organization.
"""

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import hashers
from django.core import mail
from django.core.cache import cache
from django.core.management import call_command
from django.db import connection
from django.test import Client, override_settings
from rest_framework.test import APIClient
from whitenoise.base import WhiteNoise

from accounts.models import Invitation, Organization, Project, Role, User
from accounts.services import organization_create
from accounts.tokens import issue_access_token
from apikeys.services import api_key_create
from monitoring.checks import CheckOutcome
from monitoring.models import Endpoint
from monitoring.probes import ProbeResult
from monitoring.services import endpoint_create
from monitoring.validation import validate_config
from pipeline.checks import checks_record
from statuspages.cache import local_forget
from tests.alerts.receiver import Receiver
from tests.helpers import PASSWORD
from tests.logs import Lines, rendered_lines
from tests.monitoring.peers import HTTPPeer

TESTS = Path(__file__).resolve().parent


class Api(APIClient):
    """APIClient whose requests run their on-commit callbacks (mail tasks) like a real request."""

    def __init__(self, capture: Callable[..., Any], **defaults: Any) -> None:
        super().__init__(**defaults)
        self._capture = capture

    def request(self, *args: Any, **kwargs: Any) -> Any:
        with self._capture(execute=True):
            return super().request(*args, **kwargs)

    def as_user(self, user: User | None) -> "Api":
        """Send a fresh JWT of this user (or no credential) from now on."""
        if user is None:
            self.credentials()
        else:
            self.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_access_token(user).token}")
        return self

    def with_key(self, key: str) -> "Api":
        """Send this API key from now on."""
        self.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
        return self


@dataclass
class Cast:
    org: Organization
    project: Project
    owner: User
    admin: User
    member: User
    other_org: Organization
    other_project: Project
    outsider: User


@pytest.fixture(scope="session", autouse=True)
def _static_files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Collect static files once, as a deployment does: tests run with DEBUG off.

    WhiteNoise reads every collected file each time Django builds a middleware chain, which a
    test client does once: about 0.03 s a test, a quarter of the suite's CPU. The files do not
    change during the session, so each directory is read once for each WhiteNoise setting.
    """
    settings.STATIC_ROOT = tmp_path_factory.mktemp("static")
    call_command("collectstatic", interactive=False, verbosity=0)
    read: dict[tuple[Any, ...], dict[str, Any]] = {}
    read_directory = WhiteNoise.update_files_dictionary

    def read_once(self: WhiteNoise, root: str, prefix: str) -> None:
        key = (root, prefix, self.max_age, self.allow_all_origins, self.charset, self.index_file)
        if key not in read:
            before = dict(self.files)
            read_directory(self, root, prefix)
            read[key] = {url: f for url, f in self.files.items() if before.get(url) is not f}
        self.files.update(read[key])

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(WhiteNoise, "update_files_dictionary", read_once)
        yield


@pytest.fixture(scope="session", autouse=True)
def _cheap_bcrypt() -> None:
    """Real bcrypt hashes (`bcrypt_sha256$`), with a cost of 4 instead of 12 to keep tests fast."""
    settings.PASSWORD_HASHERS = ["tests.hashers.CheapBCryptSHA256PasswordHasher"]
    hashers.get_hashers.cache_clear()
    hashers.get_hashers_by_algorithm.cache_clear()


@pytest.fixture(scope="session", autouse=True)
def _a_cache_per_worker(worker_id: str) -> Iterator[None]:
    """Each xdist worker its own Redis database (CI's cache, `CACHE_URL`): every test
    empties the cache (`_clean_cache`, a FLUSHDB on Redis), and with one database shared, a
    test of one worker emptied another's throttle counters, read-your-writes marks and cached
    pages in the middle of its requests. gw0 keeps the configured database, gw1 the one
    below it, and so on."""
    configured = settings.CACHES["default"]
    location = str(configured.get("LOCATION", ""))
    own = worker_cache_location(location, worker_id)
    if own == location:
        yield
        return
    with override_settings(CACHES={**settings.CACHES, "default": {**configured, "LOCATION": own}}):
        yield


def worker_cache_location(location: str, worker_id: str) -> str:
    """The Redis URL an xdist worker uses: the configured database less the worker's
    number; anything else (one process, another cache) as configured."""
    found = re.fullmatch(r"(redis://[^/]+/)(\d+)", location)
    if worker_id == "master" or found is None:
        return location
    return f"{found.group(1)}{int(found.group(2)) - int(worker_id.removeprefix('gw'))}"


@pytest.fixture(autouse=True)
def _clean_cache() -> Iterator[None]:
    """Throttle counters live in the cache (Redis in CI): start every test from zero; so do
    the status pages each process keeps."""
    cache.clear()
    local_forget()
    yield
    cache.clear()
    local_forget()


@pytest.fixture
def api(django_capture_on_commit_callbacks: Callable[..., Any]) -> Api:
    return Api(django_capture_on_commit_callbacks)


@pytest.fixture
def make_user() -> Callable[..., User]:
    def make(
        organization: Organization,
        email: str,
        role: str = Role.MEMBER,
        password: str = PASSWORD,
        projects: tuple[Project, ...] = (),
    ) -> User:
        user = User.objects.create_user(email, password, organization=organization, role=role)
        user.projects.set(projects)
        return user

    return make


@pytest.fixture
def cast(db: None, make_user: Callable[..., User]) -> Cast:
    org, project = organization_create(name="Acme")
    other_org, other_project = organization_create(name="Globex")
    return Cast(
        org=org,
        project=project,
        owner=make_user(org, "owner@acme.test", Role.OWNER),
        admin=make_user(org, "admin@acme.test", Role.ADMIN),
        member=make_user(org, "member@acme.test", Role.MEMBER, projects=(project,)),
        other_org=other_org,
        other_project=other_project,
        outsider=make_user(other_org, "owner@globex.test", Role.OWNER),
    )


@pytest.fixture
def invitation(cast: Cast) -> Invitation:
    """A pending invitation to Acme, written directly (no mail; its digest is a placeholder)."""
    return Invitation.objects.create(
        organization=cast.org,
        email="invited@acme.test",
        role=Role.MEMBER,
        invited_by=cast.owner,
        token_hash="0" * 64,
        expires_at=cast.owner.date_joined.replace(year=2100),
    )


@pytest.fixture
def make_key() -> Callable[..., str]:
    """Issue an API key for a user through the service; returns the clear key."""

    def make(user: User, *scopes: str, expires_at: datetime | None = None) -> str:
        _, key = api_key_create(
            creator=user, name="test key", scopes=scopes or ("admin",), expires_at=expires_at
        )
        return key

    return make


@pytest.fixture
def make_endpoint() -> Callable[..., Endpoint]:
    """Create an endpoint through the service (an HTTP one unless told otherwise)."""

    def make(project: Project, **fields: Any) -> Endpoint:
        fields.setdefault("name", "Website")
        fields.setdefault("type", "http")
        fields.setdefault("target", "https://example.com/health")
        fields.setdefault("interval_seconds", 60)
        fields.setdefault("timeout_seconds", 10)
        fields["config"] = validate_config(fields["type"], fields.get("config", {}))
        return endpoint_create(project=project, **fields)

    return make


@pytest.fixture
def endpoint_secrets_unread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail any read that decrypts an endpoint's target or config: reads that only name an
    endpoint load neither."""

    def refuse(*args: Any) -> Any:
        raise AssertionError("an endpoint's target or config was decrypted")

    for name in ("target", "config"):
        monkeypatch.setattr(Endpoint._meta.get_field(name), "from_db_value", refuse)


@pytest.fixture
def outbox() -> list[mail.EmailMessage]:
    """Mails sent during the test (Django's locmem backend)."""
    return mail.outbox


Check = tuple[datetime, bool, float] | tuple[datetime, bool, float, str]


@pytest.fixture
def record() -> Callable[..., int]:
    """Store checks of one endpoint as workers do (rollups, status and incidents follow)."""

    def store(endpoint: Endpoint, checks: Sequence[Check]) -> int:
        outcomes = []
        for check in checks:
            at, ok, ms, *rest = check
            error = rest[0] if rest else ("" if ok else "connection refused")
            result = ProbeResult(ok=ok, response_time_ms=ms, error=error, started_at=at.timestamp())
            outcomes.append(CheckOutcome(endpoint.pk, at, at, result))
        return checks_record(outcomes=outcomes)

    return store


@pytest.fixture
def superuser(db: None) -> User:
    return User.objects.create_superuser("root@ops.test", "ops-password-123")


@pytest.fixture
def staff_client(client: Client, superuser: User) -> Client:
    """The test client signed in to the Django admin as a superuser."""
    client.force_login(superuser)
    return client


@pytest.fixture
def verification_on(settings: Any) -> None:
    settings.REQUIRE_EMAIL_VERIFICATION = True


@pytest.fixture
def three_per_minute(settings: Any) -> None:
    """A throttle rate low enough to reach in a test."""
    settings.AUTH_THROTTLE_RATE = "3/minute"


# --- Local peers -------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def http_peer() -> Iterator[HTTPPeer]:
    """A local HTTP server to probe (see tests/monitoring/peers.py for its routes)."""
    peer = HTTPPeer()
    try:
        yield peer
    finally:
        peer.stop()


@pytest.fixture
def receiver(settings: Any) -> Iterator[Receiver]:
    """A real HTTP receiver on 127.0.0.1, which the network policy is told to allow."""
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = False
    settings.PROBE_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    peer = Receiver()
    try:
        yield peer
    finally:
        peer.stop()


# --- Tiers -------------------------------------------------------------------------------------
# The markers are registered in pyproject.toml. They are set here, from where a test lives and
# what it reaches, so that a new test lands in its tier without being marked by hand;
# `postgres` is the one set by hand (`@pytest.mark.postgres("why")`).

TIER_PATHS = {
    "browser": ("browser",),
    "services": ("faults", "monitoring/test_worker.py", "dev"),
    "deploy": ("test_deploy.py", "deploy"),
}
# The real servers some probe tests reach (PostgreSQL, MariaDB and Redis on their usual ports),
# named by address or by the constant of tests/monitoring/peers.py that holds one.
LOCAL_SERVERS = (
    "127.0.0.1:5432",
    "127.0.0.1:3306",
    "127.0.0.1:6379",
    "POSTGRESQL_URL",
    "MYSQL_URL",
    "REDIS_URL",
)


def _tiers_by_path(item: pytest.Item) -> list[str]:
    if not item.path.is_relative_to(TESTS):
        return []
    path = item.path.relative_to(TESTS).as_posix()
    return [
        tier
        for tier, prefixes in TIER_PATHS.items()
        if any(path == prefix or path.startswith(f"{prefix}/") for prefix in prefixes)
    ]


def _reaches_a_local_server(item: pytest.Item) -> bool:
    """The test's own code or its parameters name a real server's address."""
    function = getattr(item, "function", None)
    if function is None:
        return False
    code = function.__code__
    words = [c for c in code.co_consts if isinstance(c, str)] + list(code.co_names)
    callspec = getattr(item, "callspec", None)
    if callspec is not None:
        words += [str(value) for value in callspec.params.values()]
    return any(server in word for word in words for server in LOCAL_SERVERS)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Sort each test into its tiers; skip PostgreSQL-only tests on SQLite, saying why."""
    on_postgresql = connection.vendor == "postgresql"
    for item in items:
        for tier in _tiers_by_path(item):
            item.add_marker(tier)
        if _reaches_a_local_server(item):
            item.add_marker("services")
        needs = item.get_closest_marker("postgres")
        if needs is not None and not on_postgresql:
            why = needs.args[0] if needs.args else "PostgreSQL only"
            item.add_marker(pytest.mark.skip(reason=f"needs PostgreSQL: {why}"))
    # Tests that bound wall time run first, in a quiet process: before the session's peer
    # servers, browsers and Celery workers exist, and before earlier tests have grown the
    # heap the collector walks (a stable sort: every other test keeps its order).
    items.sort(key=lambda item: item.get_closest_marker("timing") is None)


@pytest.fixture
def log_lines() -> Iterator[Lines]:
    """The JSON lines logged during the test, as the production renderer writes them."""
    with rendered_lines() as lines:
        yield lines
