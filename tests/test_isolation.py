"""Every API route with an id answers 404 to another organization, and changes nothing."""

import json

import pytest
from django.utils import timezone

from accounts.models import Invitation, Organization, Project, ProjectAccess, User
from accounts.services import invitation_create
from apikeys.models import ApiKey
from monitoring.models import CheckResult, Endpoint, Incident
from tests.helpers import assert_problem
from tests.routes import api_routes

BODY = {"role": "member", "name": "Renamed", "projects": [], "email": "x@acme.test"}


def snapshot():
    """Every row of every tenant table (a key's last use is bookkeeping, not a change)."""
    rows = [
        list(model.objects.order_by("pk").values_list())
        for model in (
            Organization,
            User,
            Project,
            ProjectAccess,
            Invitation,
            Endpoint,
            CheckResult,
            Incident,
        )
    ]
    key_fields = [f.name for f in ApiKey._meta.fields if f.name != "last_used_at"]
    return [*rows, list(ApiKey.objects.order_by("pk").values_list(*key_fields))]


@pytest.mark.parametrize("credential", ["jwt", "admin key"])
def test_every_detail_route_answers_404_to_another_organization(
    api, cast, make_key, make_endpoint, credential
):
    invitation = invitation_create(
        inviter=cast.owner, email="pending@acme.test", role="member", projects=[]
    )
    make_key(cast.owner, "endpoint:read")
    endpoint = make_endpoint(cast.project)
    target = {
        "user": cast.member.id,
        "project": cast.project.id,
        "invitation": invitation.id,
        "apikey": ApiKey.objects.get().id,
        "endpoint": endpoint.id,
        "incident": Incident.objects.create(endpoint=endpoint, started_at=timezone.now()).id,
    }
    routes = [route for route in api_routes() if route.has_pk]
    assert len(routes) >= 10
    if credential == "jwt":
        api.as_user(cast.outsider)
    else:
        api.with_key(make_key(cast.outsider, "admin"))
    before = snapshot()

    for route in routes:
        assert route.basename in target, f"add a target object for the {route.basename!r} routes"
        response = api.generic(
            route.method,
            route.path(target[route.basename]),
            json.dumps(BODY),
            content_type="application/json",
        )
        assert_problem(response, 404, "not_found")

    assert snapshot() == before


def test_foreign_ids_look_exactly_like_missing_ids(api, cast, make_endpoint):
    endpoint = make_endpoint(cast.project)
    api.as_user(cast.outsider)

    for collection, foreign_id in (("projects", cast.project.id), ("endpoints", endpoint.id)):
        foreign = api.get(f"/api/v1/{collection}/{foreign_id}")
        missing = api.get(f"/api/v1/{collection}/00000000-0000-0000-0000-000000000000")
        malformed = api.get(f"/api/v1/{collection}/not-a-uuid")
        assert foreign.json() == missing.json() == malformed.json()
        assert foreign.status_code == missing.status_code == malformed.status_code == 404


def test_lists_show_only_the_callers_organization(api, cast, make_key, make_endpoint):
    invitation_create(inviter=cast.owner, email="pending@acme.test", role="member", projects=[])
    make_key(cast.owner, "admin")
    make_endpoint(cast.project)
    api.as_user(cast.outsider)

    users = api.get("/api/v1/users").json()["results"]
    projects = api.get("/api/v1/projects").json()["results"]
    invitations = api.get("/api/v1/invitations").json()["results"]
    keys = api.get("/api/v1/api-keys").json()["results"]
    endpoints = api.get("/api/v1/endpoints").json()["results"]

    assert [u["email"] for u in users] == ["owner@globex.test"]
    assert [p["id"] for p in projects] == [str(cast.other_project.id)]
    assert invitations == keys == endpoints == []


def test_a_foreign_project_in_a_filter_or_body_is_refused(api, cast, make_endpoint):
    endpoint = make_endpoint(cast.project)
    api.as_user(cast.outsider)
    foreign = str(cast.project.id)

    listed = api.get("/api/v1/endpoints", {"project": foreign})
    created = api.post(
        "/api/v1/endpoints",
        {"project": foreign, "name": "x", "type": "http", "target": "https://x.test/"},
    )

    assert "project" in assert_problem(listed, 400, "validation_error")["errors"]
    assert "project" in assert_problem(created, 400, "validation_error")["errors"]
    api.as_user(cast.owner)
    moved = api.patch(f"/api/v1/endpoints/{endpoint.id}", {"project": str(cast.other_project.id)})
    assert "project" in assert_problem(moved, 400, "validation_error")["errors"]
    assert Endpoint.objects.get().project == cast.project
