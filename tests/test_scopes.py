"""The scope matrix: for every API route and each of the five scopes, exactly the contract.

| Scope           | Allows                                                      |
|-----------------|-------------------------------------------------------------|
| endpoint:read   | GET /endpoints, /endpoints/{id}, /endpoints/{id}/checks,    |
|                 | /endpoints/{id}/pings[/{ping_id}/body], /projects,          |
|                 | /status-pages, /status-pages/{id}                           |
| endpoint:create | POST /endpoints, PATCH/DELETE/pause/resume/check-now        |
| incident:read   | GET /incidents, /incidents/{id}                             |
| analytics:read  | GET /analytics/summary, response-time, uptime, availability,|
|                 | errors, sla, compare                                        |
| admin           | everything the creator's role allows (the audit log,        |
|                 | notification channels and maintenance windows too)          |
| any scope       | GET /locations, /locations/{slug} (global reference data    |
|                 | that the other routes' answers name)                        |

Keys belong to an owner, so any refusal here is the scope's, never the role's.
"""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import Project, Role, User
from accounts.services import invitation_create
from alerts.escalation_validation import StepInput
from alerts.models import MaintenanceWindow
from alerts.services import channel_create, escalation_policy_create
from apikeys.models import ApiKey, Scope
from apikeys.permissions import HasScope
from monitoring.models import Incident, Location
from statuspages.models import StatusPage
from tests.routes import api_routes

# Read with a key of any scope.
ANY = "any"
# The contract's table: basename -> (scope for reading, scope for writing); None: admin only.
CONTRACT: dict[str, tuple[str | None, str | None]] = {
    "endpoint": (Scope.ENDPOINT_READ, Scope.ENDPOINT_CREATE),
    "incident": (Scope.INCIDENT_READ, None),
    "analytics": (Scope.ANALYTICS_READ, None),
    "project": (Scope.ENDPOINT_READ, None),
    "user": (None, None),
    "invitation": (None, None),
    "apikey": (None, None),
    "auth": (None, None),
    "audit-log": (None, None),
    "notification-channel": (None, None),
    "maintenance-window": (None, None),
    "escalation-policy": (None, None),
    "status-page": (Scope.ENDPOINT_READ, None),
    "location": (ANY, None),
}
# Routes no key may use, whatever its scopes: a person's password is involved.
JWT_ONLY = {("auth", "change_password")}
SAFE = {"GET", "HEAD", "OPTIONS"}
BODY = {"name": "Renamed", "role": "member", "projects": [], "email": "new@acme.test"}


@pytest.fixture
def fresh(cast, make_key, make_endpoint):
    """A new target object per request, so that a DELETE allowed once leaves others intact."""
    counter = iter(range(10_000))

    def make(basename):
        n = next(counter)
        if basename == "user":
            return User.objects.create_user(
                f"u{n}@acme.test", "pw-123456789", organization=cast.org, role=Role.MEMBER
            ).id
        if basename == "invitation":
            return invitation_create(
                inviter=cast.owner, email=f"i{n}@acme.test", role="member", projects=[]
            ).id
        if basename == "project":
            return Project.objects.create(organization=cast.org, name=f"P{n}").id
        if basename == "apikey":
            make_key(cast.owner, "endpoint:read")
            return ApiKey.objects.order_by("-created_at").first().id
        if basename == "endpoint":
            return make_endpoint(cast.project, name=f"E{n}").id
        if basename == "incident":
            endpoint = make_endpoint(cast.project, name=f"I{n}")
            return Incident.objects.create(endpoint=endpoint, started_at=timezone.now()).id
        if basename == "notification-channel":  # mailed: its test send opens no socket
            config = {"addresses": [f"c{n}@acme.test"], "to_members": False}
            return channel_create(
                organization=cast.org, name=f"C{n}", kind="email", config=config
            ).id
        if basename == "maintenance-window":
            start = timezone.now()
            return MaintenanceWindow.objects.create(
                organization=cast.org, starts_at=start, ends_at=start + timedelta(hours=1)
            ).id
        if basename == "status-page":
            return StatusPage.objects.create(organization=cast.org, name=f"S{n}", slug=f"s-{n}").id
        if basename == "escalation-policy":
            config = {"addresses": [f"p{n}@acme.test"], "to_members": False}
            mail = channel_create(organization=cast.org, name=f"P{n}", kind="email", config=config)
            return escalation_policy_create(
                organization=cast.org, name=f"P{n}", steps=[StepInput(0, (mail,))]
            ).id
        if basename == "location":  # read by its slug
            return Location.objects.create(slug=f"loc-{n}", name=f"L{n}").slug
        raise AssertionError(f"add a target factory for {basename!r}")

    return make


def allowed_scopes(route):
    if (route.basename, route.action) in JWT_ONLY:
        return set()
    assert route.basename in CONTRACT, f"add {route.basename!r} to the contract table"
    read, write = CONTRACT[route.basename]
    needed = read if route.method in SAFE else write
    if needed == ANY:
        return set(Scope.values)
    return {Scope.ADMIN} | ({needed} if needed else set())


def test_every_authenticated_api_view_checks_scopes():
    for route in api_routes():
        handler = getattr(route.view_class, route.action)
        permissions = getattr(handler, "kwargs", {}).get(
            "permission_classes", route.view_class.permission_classes
        )
        assert any(issubclass(p, HasScope) for p in permissions), route


@pytest.mark.parametrize("scope", list(Scope.values))
def test_each_scope_reaches_exactly_the_contracts_routes(api, cast, make_key, fresh, scope):
    routes = api_routes()
    assert {r.basename for r in routes} >= {"endpoint", "project", "user", "apikey"}
    api.with_key(make_key(cast.owner, scope))
    reached, refused = set(), set()

    for route in routes:
        path = route.path(fresh(route.basename) if route.has_pk else None)
        response = api.generic(
            route.method, path, json.dumps(BODY), content_type="application/json"
        )
        assert response.status_code != 401, (route, response.content)
        if response.status_code == 403:
            code = response.json()["code"]
            expected_code = (
                "permission_denied"
                if (route.basename, route.action) in JWT_ONLY
                else "insufficient_scope"
            )
            assert code == expected_code, (route, response.content)
            refused.add((route.template, route.method))
        else:
            assert response.status_code < 500, (route, response.content)
            reached.add((route.template, route.method))

    expected = {(r.template, r.method) for r in routes if scope in allowed_scopes(r)}
    assert reached == expected
    assert refused == {(r.template, r.method) for r in routes} - expected


def test_the_matrix_reads_as_the_contract_says():
    """A spot check in words, so that a table typo cannot hide a wrong matrix."""
    table = {(r.template, r.method): allowed_scopes(r) for r in api_routes()}

    assert table[("/api/v1/endpoints", "GET")] == {"admin", "endpoint:read"}
    assert table[("/api/v1/endpoints/{pk}", "GET")] == {"admin", "endpoint:read"}
    assert table[("/api/v1/endpoints", "POST")] == {"admin", "endpoint:create"}
    assert table[("/api/v1/endpoints/{pk}", "PATCH")] == {"admin", "endpoint:create"}
    assert table[("/api/v1/endpoints/{pk}", "DELETE")] == {"admin", "endpoint:create"}
    assert table[("/api/v1/endpoints/{pk}/checks", "GET")] == {"admin", "endpoint:read"}
    body = ("/api/v1/endpoints/{pk}/pings/{ping_id}/body", "GET")
    assert table[body] == {"admin", "endpoint:read"}
    assert table[("/api/v1/endpoints/{pk}/check-now", "POST")] == {"admin", "endpoint:create"}
    assert table[("/api/v1/incidents", "GET")] == {"admin", "incident:read"}
    assert table[("/api/v1/incidents/{pk}", "GET")] == {"admin", "incident:read"}
    assert table[("/api/v1/projects", "GET")] == {"admin", "endpoint:read"}
    for report in ("summary", "response-time", "uptime", "availability", "errors", "sla"):
        assert table[(f"/api/v1/analytics/{report}", "GET")] == {"admin", "analytics:read"}
    assert table[("/api/v1/analytics/compare", "GET")] == {"admin", "analytics:read"}
    assert table[("/api/v1/locations", "GET")] == set(Scope.values)
    assert table[("/api/v1/locations/{pk}", "GET")] == set(Scope.values)
    assert table[("/api/v1/projects", "POST")] == {"admin"}
    assert table[("/api/v1/users", "GET")] == {"admin"}
    assert table[("/api/v1/api-keys", "GET")] == {"admin"}
    assert table[("/api/v1/api-keys", "POST")] == {"admin"}
    assert table[("/api/v1/auth/change-password", "POST")] == set()
    for path in ("/api/v1/notification-channels", "/api/v1/maintenance-windows"):
        assert table[(path, "GET")] == table[(path, "POST")] == {"admin"}
        assert table[(f"{path}/{{pk}}", "GET")] == table[(f"{path}/{{pk}}", "DELETE")] == {"admin"}
    assert table[("/api/v1/notification-channels/{pk}/test", "POST")] == {"admin"}
    assert table[("/api/v1/notification-channels/{pk}/deliveries", "GET")] == {"admin"}
