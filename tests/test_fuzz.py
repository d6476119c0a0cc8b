"""Fuzz every API operation from the OpenAPI schema the app serves (schemathesis), with a
JWT and with an API key: no server error, and every answer (status code, content type,
headers, body) as the schema describes it; a request the schema forbids is refused.

- The schema is the document `/api/v1/schema/` serves, generated in-process, and every
  request goes to the WSGI app in-process: no socket, no network.
- The module builds one world: an owner, admin and member, another organization, endpoints
  with checks (one with an open incident, one paused, one checked a moment ago), an empty
  project, a pending invitation and API keys. Each case runs in a savepoint rolled back
  after it, so a case that deletes an endpoint, revokes the key it authenticates with,
  removes a user or changes the owner's password leaves the next case the same world: no
  operation is left out for that reason, and no case depends on the ones before it.
- Half of the generated ids in paths, filters and bodies (and of the names, emails,
  passwords and tokens) are swapped for the world's, so operations reach their 2xx answers
  and conflicts too, not only 404s. Which half depends on the generated value alone, so
  Hypothesis still drives and shrinks it.
- Deterministic and bounded: derandomized Hypothesis and a fixed number of examples. With
  the JWT, schemathesis' coverage phase (boundary and invalid values of every parameter
  and property, and a disallowed method per path) and the fuzzing phase run; with the key,
  the fuzzing phase only: input checks do not depend on the credential, scopes do.
"""

import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import schemathesis
from django.core.cache import cache
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections, transaction
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from hypothesis import HealthCheck, Phase, settings
from schemathesis.core.parameters import ParameterLocation

from accounts.models import Invitation, Organization, Project, Role, User
from accounts.services import invitation_create, organization_create, project_create
from accounts.tokens import (
    issue_access_token,
    make_email_verification_token,
    make_password_reset_token,
    new_opaque_token,
)
from alerts.escalation_validation import StepInput
from alerts.models import MaintenanceWindow
from alerts.services import channel_create, escalation_policy_create, maintenance_window_save
from apikeys.models import ApiKey
from apikeys.services import api_key_create
from monitoring.checks import CheckOutcome
from monitoring.models import Endpoint, Location
from monitoring.probes import ProbeResult
from monitoring.services import endpoint_check_now, endpoint_create
from monitoring.validation import validate_config
from pipeline.checks import checks_record
from statuspages.services import status_page_create
from statuspages.validation import PageInput, SectionIn
from tests.helpers import PASSWORD, assert_problem

CONFIG = schemathesis.Config.from_dict(
    {
        "generation": {"mode": "all", "deterministic": True, "database": "none"},
        "phases": {
            # No stateful phase: it would chain operations through links the schema does
            # not declare; seeded ids reach the same answers.
            "stateful": {"enabled": False},
            "coverage": {
                "generate-duplicate-query-parameters": False,
                # One disallowed method per path is enough to see the 405; two for good measure.
                "unexpected-methods": ["PUT", "TRACE"],
            },
        },
        "operations": [
            {
                # These reports read the same query parameters as response-time, whose
                # invalid values the coverage phase tries there once, not five times over.
                "include-path-regex": "^/api/v1/analytics/(summary|uptime|availability|errors)$",
                "phases": {"coverage": {"generation": {"mode": "positive"}}},
            }
        ],
        "checks": {
            "enabled": False,
            "not_a_server_error": {"enabled": True},
            "status_code_conformance": {"enabled": True},
            "content_type_conformance": {"enabled": True},
            "response_schema_conformance": {"enabled": True},
            "response_headers_conformance": {"enabled": True},
            # The server refuses what the schema forbids (otherwise the schema is wrong).
            "negative_data_rejection": {"enabled": True},
            # Methods the schema does not list answer 405.
            "unsupported_method": {"enabled": True},
            # positive_data_acceptance stays off: requests valid by the schema may still
            # break rules it cannot express (a timeout below the interval, a target whose
            # scheme fits the type, a range of at most 400 days) and rightly get a 400.
            # ignored_auth stays off: it sends every 2xx request twice more, and
            # tests/security/test_credentials.py already sends every route no credential
            # and every kind of bad one.
        },
    }
)


class _LazyApplication:
    """The WSGI application, built at its first request: after the session fixtures have
    collected the static files. Built at import, its middleware would read the static
    files of a deployment (WhiteNoise warns when there are none) and pin them for the run."""

    def __init__(self) -> None:
        self._application: Any = None

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        if self._application is None:
            self._application = get_wsgi_application()
        return self._application(environ, start_response)


def _served_schema() -> dict[str, Any]:
    """The document `/api/v1/schema/?format=json` serves, generated without a request."""
    document = SchemaGenerator().get_schema(request=None, public=True)
    return json.loads(OpenApiJsonRenderer().render(document))


SCHEMA = schemathesis.openapi.from_dict(_served_schema(), config=CONFIG)
SCHEMA.app = _LazyApplication()

# One valid target per endpoint type, some with credentials to mask.
TARGETS = {
    "http": "https://example.com/health",
    "graphql": "https://example.com/graphql",
    "elasticsearch": "https://es.example.com:9200",
    "grpc": "grpc://example.com:50051",
    "postgresql": "postgresql://monitor:s3cret@db.example.com:5432/app",
    "mysql": "mysql://monitor:s3cret@db.example.com:3306/app",
    "redis": "redis://:s3cret@cache.example.com:6379/0",
    "websocket": "wss://example.com/ws",
    "custom": "example.com:443",
}


@dataclass
class World:
    """What the cases run against: credentials, and real values to swap in."""

    credentials: dict[str, str]
    # Check-now on it answers 429: its cooldown, in the cache, is set again for each case.
    checked_just_now: Endpoint
    # Ids per collection, for `/api/v1/<collection>/{id}...`.
    ids: dict[str, list[str]]
    # Values per query parameter or body property name.
    values: dict[str, list[Any]]


def _endpoint(project: Project, name: str, endpoint_type: str, enabled: bool = True) -> Endpoint:
    return endpoint_create(
        project=project,
        name=name,
        type=endpoint_type,
        target=TARGETS[endpoint_type],
        config=validate_config(endpoint_type, {}),
        interval_seconds=60,
        timeout_seconds=10,
        enabled=enabled,
    )


def _record(endpoint: Endpoint, at: datetime, ok: bool) -> None:
    result = ProbeResult(ok=ok, response_time_ms=20.0, error="" if ok else "connection refused")
    checks_record(outcomes=[CheckOutcome(endpoint.pk, at, at, result)])


def _alerts(organization: Organization, project: Project, start: datetime) -> dict[str, list[str]]:
    """Channels of every kind (URLs on addresses no test send may reach, or mail) and
    maintenance windows, one-off and weekly."""
    channels = [
        channel_create(organization=organization, name=kind, kind=kind, config=config)
        for kind, config in (
            ("email", {"addresses": ["ops@fuzz.test"], "to_members": True}),
            ("webhook", {"url": "https://192.0.2.10/hook/s3cret"}),
            ("slack", {"url": "https://192.0.2.11/services/T0/B0/s3cret"}),
        )
    ]
    windows = [
        maintenance_window_save(
            window=MaintenanceWindow(organization=organization),
            projects=[project],
            starts_at=start + timedelta(hours=hours),
            ends_at=start + timedelta(hours=hours + 2),
            recurrence=recurrence,
        )
        for hours, recurrence in ((-1, ""), (24, "weekly"))
    ]
    policy = escalation_policy_create(
        organization=organization,
        name="On call",
        steps=[StepInput(0, (channels[1],)), StepInput(10, (channels[2],))],
        repeat_every_minutes=30,
    )
    return {
        "notification-channels": [str(channel.pk) for channel in channels],
        "maintenance-windows": [str(window.pk) for window in windows],
        "escalation-policies": [str(policy.pk)],
    }


def _status_pages(organization: Organization, endpoints: list[Endpoint]) -> list[str]:
    """A public page showing the endpoints in one section, and a password page."""
    pages = []
    for slug, visibility, password, sections in (
        ("fuzz", "public", None, (SectionIn(name="Core", endpoints=tuple(endpoints)),)),
        ("fuzz-partners", "password", PASSWORD, ()),
    ):
        data = PageInput(
            name=slug,
            slug=slug,
            title="",
            description="",
            visibility=visibility,
            password=password,
            custom_domain=None,
            uptime_days=90,
            show_response_times=False,
            sections=sections,
        )
        pages.append(str(status_page_create(organization=organization, data=data).pk))
    return pages


def _build_world() -> World:
    organization, project = organization_create(name="Fuzz")
    owner, admin, member = (
        User.objects.create_user(
            f"{role}@fuzz.test", PASSWORD, organization=organization, role=role
        )
        for role in (Role.OWNER, Role.ADMIN, Role.MEMBER)
    )
    member.projects.set([project])
    foreign_organization, _ = organization_create(name="Globex")
    User.objects.create_user("owner@globex.fuzz.test", PASSWORD, organization=foreign_organization)
    empty = project_create(organization=organization, name="Empty")
    places = ["eu-west", "us-east"]
    for slug in places:  # global, read by every caller; eu-west heard from just now
        Location.objects.create(slug=slug, name=slug.upper())
    Location.objects.filter(slug="eu-west").update(last_seen_at=datetime.now(UTC), online=True)
    database = _endpoint(project, "Database", "postgresql")
    website = _endpoint(project, "Website", "http")
    paused = _endpoint(project, "Cache", "redis", enabled=False)
    start = datetime.now(UTC)
    for minute in range(1, 31):  # after creation (earlier checks are stale); some fail
        _record(database, start + timedelta(minutes=minute), ok=minute % 4 != 0)
    for second, ok in ((1, True), (2, False), (3, False)):  # two failures open an incident
        _record(website, start + timedelta(seconds=second), ok)
    invitation = invitation_create(
        inviter=owner, email="new@fuzz.test", role=Role.MEMBER, projects=[project]
    )
    invitation_token, digest = new_opaque_token()  # the mailed token is not kept: set one
    Invitation.objects.filter(pk=invitation.pk).update(token_hash=digest)
    _, key = api_key_create(creator=owner, name="fuzz", scopes=["admin"], expires_at=None)
    api_key_create(creator=admin, name="reader", scopes=["endpoint:read"], expires_at=None)
    projects = [str(project.pk), str(empty.pk)]
    endpoints = [str(endpoint.pk) for endpoint in (database, website, paused)]
    users = [str(user.pk) for user in (member, admin, owner)]
    return World(
        credentials={"jwt": issue_access_token(owner).token, "key": key},
        checked_just_now=database,
        ids={
            "api-keys": [str(pk) for pk in ApiKey.objects.values_list("pk", flat=True)],
            "endpoints": endpoints,
            "incidents": [str(website.incidents.get().pk)],
            "invitations": [str(invitation.pk)],
            "projects": projects,
            "users": users,
            **_alerts(organization, project, start),
            "status-pages": _status_pages(organization, [database, website]),
            "locations": places,
        },
        values={
            "project": projects,
            "projects": [projects[:1], projects],
            "endpoint": endpoints,
            "endpoints": [endpoints[0], ",".join(endpoints)],
            "actor": users,
            "name": [project.name, empty.name],  # taken project names: 409
            "email": [owner.email, member.email, invitation.email],
            "password": [PASSWORD],
            "current_password": [PASSWORD],
            "token": [
                invitation_token,
                make_password_reset_token(member),
                make_email_verification_token(member),
            ],
            "config": [{}],
            "locations": [[], places[:1], places],
            "location": [*places, "default"],
        },
    )


@pytest.fixture(scope="module")
def world(django_db_setup: None, django_db_blocker: Any) -> Iterator[World]:
    """One world for the module, in a transaction rolled back at its end.

    Each test's transaction (the `db` fixture) and each case's savepoint nest inside it.
    """
    with django_db_blocker.unblock(), transaction.atomic():
        yield _build_world()
        transaction.set_rollback(True)


@pytest.fixture
def in_process(db: None, settings: Any) -> Iterator[None]:
    """Requests share the test's connection and transaction, as Django's test client does:
    the app's end-of-request hook would otherwise close the connection mid-transaction."""
    # The auth routes are throttled per IP and account: lift the rate (the cache is also
    # cleared before each case).
    settings.AUTH_THROTTLE_RATE = "1000000/minute"
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def _pick(generated: Any, pool: list[Any]) -> Any:
    """A value of the pool for half of the generated values, the generated one otherwise."""
    digest = zlib.crc32(json.dumps(generated, sort_keys=True, default=str).encode())
    if not pool or digest % 2:
        return generated
    return pool[(digest >> 1) % len(pool)]


def _swapped(container: dict[str, Any], values: dict[str, list[Any]]) -> dict[str, Any]:
    """A copy: the coverage phase shares one container between several cases."""
    return {name: _pick(value, values.get(name, [])) for name, value in container.items()}


def _seed(case: schemathesis.Case, world: World) -> None:
    """Swap in the world's ids and secrets, never where the case is invalid on purpose."""
    negative = case.meta.is_negative_at if case.meta else lambda location: False
    if "id" in case.path_parameters and not negative(ParameterLocation.PATH):
        collection = case.path.split("/")[3]
        assert collection in world.ids, f"a new collection: give the world ids of /{collection}"
        case.path_parameters = _swapped(case.path_parameters, {"id": world.ids[collection]})
    if isinstance(case.query, dict) and not negative(ParameterLocation.QUERY):
        case.query = _swapped(case.query, world.values)
    if isinstance(case.body, dict) and not negative(ParameterLocation.BODY):
        body = case.body = _swapped(case.body, world.values)
        if body.get("type") in TARGETS and "target" in body:
            body["target"] = _pick(body["target"], [TARGETS[body["type"]]])


def _run(case: schemathesis.Case, world: World, credential: str) -> None:
    _seed(case, world)
    cache.clear()  # throttle counters and check-now cooldowns: every case starts afresh
    with transaction.atomic():
        try:
            if case.path.endswith("/check-now"):
                endpoint_check_now(endpoint=world.checked_just_now)  # its task is rolled back
            case.call_and_validate(
                headers={"Authorization": f"Bearer {world.credentials[credential]}"}
            )
        finally:
            transaction.set_rollback(True)


HEALTH_CHECKS = [
    # One test's fixtures serve all its cases: each case rolls its changes back (see above).
    HealthCheck.function_scoped_fixture,
    # Building a request body can take a while on a busy CI machine; the counts are bounded.
    HealthCheck.too_slow,
]


@SCHEMA.parametrize()
@settings(max_examples=10, deadline=None, suppress_health_check=HEALTH_CHECKS)
def test_api_with_jwt(case: schemathesis.Case, world: World, in_process: None) -> None:
    _run(case, world, "jwt")


@SCHEMA.parametrize()
@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=HEALTH_CHECKS,
    phases=[Phase.generate, Phase.shrink],  # no explicit examples: no coverage phase
)
def test_api_with_key(case: schemathesis.Case, world: World, in_process: None) -> None:
    _run(case, world, "key")


# --- What the fuzzer found, pinned ----------------------------------------------------------


def _operation(method: str, path: str) -> dict[str, Any]:
    operation: dict[str, Any] = SCHEMA.raw_schema["paths"][path][method]
    return operation


@pytest.mark.parametrize(
    "query", ["page=0", "page=two", "page=-1", "page_size=0", "page_size=501", "page_size=null"]
)
def test_a_malformed_page_or_page_size_is_a_400(api, cast, query):
    body = assert_problem(
        api.as_user(cast.owner).get(f"/api/v1/projects?{query}"), 400, "validation_error"
    )
    assert list(body["errors"]) == [query.split("=")[0]]


def test_an_empty_page_is_the_first_and_a_page_past_the_last_a_404(api, cast):
    api.as_user(cast.owner)

    assert api.get("/api/v1/projects?page=&page_size=").json()["count"] == 1
    assert_problem(api.get("/api/v1/projects?page=2"), 404, "not_found")


@pytest.mark.parametrize(
    "path",
    ["/api/v1/projects", "/api/v1/endpoints", "/api/v1/incidents", "/api/v1/endpoints/{id}/checks"],
)
def test_lists_document_their_400_and_404_page_bounds_and_empty_values(path):
    operation = _operation("get", path)
    parameters = {p["name"]: p for p in operation["parameters"] if p["in"] == "query"}

    assert {"400", "404"} <= set(operation["responses"])
    assert parameters["page"]["schema"] == {"type": "integer", "minimum": 1}
    assert parameters["page_size"]["schema"] == {"type": "integer", "minimum": 1, "maximum": 500}
    assert all(parameter["allowEmptyValue"] for parameter in parameters.values())


def test_the_enabled_filter_is_a_boolean(api, cast):
    enabled = next(
        p for p in _operation("get", "/api/v1/endpoints")["parameters"] if p["name"] == "enabled"
    )

    assert enabled["schema"] == {"type": "boolean"}
    assert api.as_user(cast.owner).get("/api/v1/endpoints?enabled=true").status_code == 200
    assert_problem(api.get("/api/v1/endpoints?enabled=yes"), 400, "validation_error")


@pytest.mark.parametrize("name", [0, 1.5])
def test_a_number_is_not_a_name(api, cast, name):
    response = api.as_user(cast.owner).post("/api/v1/projects", {"name": name})

    assert assert_problem(response, 400, "validation_error")["errors"] == {
        "name": ["Not a valid string."]
    }


def test_check_now_documents_its_cooldown():
    responses = _operation("post", "/api/v1/endpoints/{id}/check-now")["responses"]

    assert {"202", "400", "429"} <= set(responses)
    assert "application/problem+json" in responses["429"]["content"]
