"""Every API route with an id answers 404 to another organization, and changes nothing."""

import json
import re

from django.urls import URLPattern, URLResolver, get_resolver

from accounts.models import Invitation, Organization, Project, ProjectAccess, User
from accounts.services import invitation_create
from tests.helpers import assert_problem

BODY = {"role": "member", "name": "Renamed", "projects": [], "email": "x@acme.test"}


def detail_routes(resolver=None, prefix=""):
    """(path template, view callback) for every URL pattern that takes a `pk`."""
    for pattern in (resolver or get_resolver()).url_patterns:
        regex = prefix + pattern.pattern.regex.pattern.lstrip("^").rstrip("$").replace("\\Z", "")
        if isinstance(pattern, URLResolver):
            yield from detail_routes(pattern, regex)
        elif (
            isinstance(pattern, URLPattern)
            and "(?P<pk>" in regex
            and hasattr(pattern.callback, "actions")
        ):
            yield "/" + re.sub(r"\(\?P<pk>[^)]*\)", "{pk}", regex), pattern.callback


def snapshot():
    return [
        list(model.objects.order_by("pk").values_list())
        for model in (Organization, User, Project, ProjectAccess, Invitation)
    ]


def test_every_detail_route_answers_404_to_another_organization(api, cast):
    invitation = invitation_create(
        inviter=cast.owner, email="pending@acme.test", role="member", projects=[]
    )
    target = {"user": cast.member.id, "project": cast.project.id, "invitation": invitation.id}
    routes = list(detail_routes())
    assert len(routes) >= 5
    before = snapshot()
    api.as_user(cast.outsider)

    for template, callback in routes:
        basename = callback.initkwargs["basename"]
        assert basename in target, f"add a target object for the {basename!r} routes"
        path = template.format(pk=target[basename])
        allowed = set(callback.cls.http_method_names) - {"head", "options"}
        for method in [m for m in list(callback.actions) if m in allowed]:
            response = api.generic(
                method.upper(), path, json.dumps(BODY), content_type="application/json"
            )
            assert_problem(response, 404, "not_found")

    assert snapshot() == before


def test_foreign_ids_look_exactly_like_missing_ids(api, cast):
    api.as_user(cast.outsider)

    foreign = api.get(f"/api/v1/projects/{cast.project.id}")
    missing = api.get("/api/v1/projects/00000000-0000-0000-0000-000000000000")
    malformed = api.get("/api/v1/projects/not-a-uuid")

    assert foreign.json() == missing.json() == malformed.json()
    assert foreign.status_code == missing.status_code == malformed.status_code == 404


def test_lists_show_only_the_callers_organization(api, cast):
    invitation_create(inviter=cast.owner, email="pending@acme.test", role="member", projects=[])
    api.as_user(cast.outsider)

    users = api.get("/api/v1/users").json()["results"]
    projects = api.get("/api/v1/projects").json()["results"]
    invitations = api.get("/api/v1/invitations").json()["results"]

    assert [u["email"] for u in users] == ["owner@globex.test"]
    assert [p["id"] for p in projects] == [str(cast.other_project.id)]
    assert invitations == []
