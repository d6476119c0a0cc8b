"""Tenant isolation: organization B cannot read, change or even detect organization A's objects.

Every route that takes an id is found in the URL configuration, every id-valued query
parameter and body field in the OpenAPI schema; nothing is listed by hand, so a new route or
field is covered (or fails, asking for a target) the day it appears. Each foreign id must
answer byte for byte what a random UUID answers, and no row of any table may change.
"""

import uuid
from datetime import timedelta
from urllib.parse import urlencode

from django.utils import timezone

from accounts.models import Invitation, Project, Role, User
from accounts.services import invitation_create
from alerts.escalation_validation import StepInput
from alerts.models import MaintenanceWindow, NotificationChannel
from alerts.services import channel_create, escalation_policy_create
from apikeys.models import ApiKey
from apikeys.services import api_key_create
from monitoring.models import CheckResult, Endpoint, Incident, Ping
from statuspages.models import StatusPage
from tests.helpers import assert_problem
from tests.routes import api_patterns_with_parameters, api_routes

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
# Also compared with a random id, though the contract names no status for them.
EXTRA_METHODS = ("HEAD", "OPTIONS")
# A body that the route would accept from the caller on its own object, so that only the
# foreign id can explain a refusal. Routes not named here take no body.
VALID_BODIES = {
    ("user", "role"): {"role": Role.ADMIN},
    ("project", "partial_update"): {"name": "Renamed"},
    ("endpoint", "partial_update"): {"name": "Renamed"},
    ("notification-channel", "partial_update"): {"name": "Renamed"},
    ("maintenance-window", "partial_update"): {"name": "Renamed"},
    ("escalation-policy", "partial_update"): {"name": "Renamed"},
    ("incident", "partial_update"): {"title": "Renamed"},
    ("incident", "updates"): {"status": "identified", "message": "On it."},
    ("incident", "notes"): {"text": "Paged the on-call."},
}
# Id-valued request fields, by operation: the rest of a body that is valid for B.
SMUGGLING_BODIES = {
    ("POST", "/api/v1/endpoints"): {
        "name": "Smuggled",
        "type": "http",
        "target": "https://x.test/",
    },
    ("PATCH", "/api/v1/endpoints/{id}"): {},
    ("POST", "/api/v1/users/invite"): {"email": "new@globex.test", "role": Role.MEMBER},
    ("PUT", "/api/v1/users/{id}/projects"): {},
    ("POST", "/api/v1/notification-channels"): {
        "name": "Smuggled",
        "kind": "email",
        "config": {"addresses": ["ops@globex.test"]},
    },
    ("PATCH", "/api/v1/notification-channels/{id}"): {},
    ("POST", "/api/v1/maintenance-windows"): {
        "starts_at": "2030-05-01T10:00:00Z",
        "ends_at": "2030-05-01T12:00:00Z",
    },
    ("PATCH", "/api/v1/maintenance-windows/{id}"): {},
    # Its steps name channels, whose ids no static body can know: the PATCH is the exact case.
    ("POST", "/api/v1/escalation-policies"): {"name": "Smuggled"},
    ("PATCH", "/api/v1/escalation-policies/{id}"): {},
    ("POST", "/api/v1/incidents"): {"title": "Smuggled", "impact": "major_outage"},
}
# Id-valued query parameters the schema types as plain strings.
ID_LISTS = {"endpoints"}
ID_MODELS = {"endpoint": Endpoint, "endpoints": Endpoint, "project": Project, "actor": User}


# Global reference data, no organization's: every caller reads every one of them
# (tests/monitoring/test_locations_api.py), so no id of theirs is foreign.
GLOBAL = {"location"}


def id_routes():
    """{template: view} of every /api/v1 route with a path parameter, global data aside."""
    routes = {}
    for template, names, view in api_patterns_with_parameters():
        if view.initkwargs["basename"] in GLOBAL:
            continue
        assert names in (("pk",), ("pk", "ping_id")), f"{template}: teach the matrix {names}"
        assert hasattr(view, "actions"), f"{template}: teach the matrix about non-viewset views"
        routes[template] = view
    assert len(routes) >= 12
    return routes


def allowed_methods(view):
    """{METHOD: action} the route serves."""
    served = view.cls.http_method_names
    return {method.upper(): action for method, action in view.actions.items() if method in served}


def request_body(basename, action, own_project):
    if (basename, action) == ("user", "projects"):
        return {"projects": [str(own_project.id)]}
    return VALID_BODIES.get((basename, action), {})


def same_as_random(send, method, build, foreign_id):
    """Send the request with the foreign id and with a random one: the answers must match."""
    random_id = str(uuid.uuid4())
    foreign = send(method, *build(str(foreign_id)))
    missing = send(method, *build(random_id))
    assert foreign.status_code == missing.status_code, (method, build("ID"), foreign.content)
    assert foreign.content.replace(str(foreign_id).encode(), b"ID") == missing.content.replace(
        random_id.encode(), b"ID"
    ), (method, build("ID"))
    return foreign


def own_object(world, path):
    """B's own object for the `{id}` of a path (if any), so that only the smuggled id is
    foreign."""
    if "{id}" not in path:
        return None
    owned = {
        "endpoints": world.own_endpoint,
        "users": world.own_member,
        "notification-channels": world.own_channel,
        "maintenance-windows": world.own_window,
        "status-pages": world.own_status_page,
        "escalation-policies": world.own_policy,
    }
    collection = path.removeprefix("/api/v1/").split("/")[0]
    assert collection in owned, f"give B an object of its own for {path}"
    return owned[collection]


def test_the_matrix_builds_an_id_for_every_route_that_takes_one(world):
    for template, view in id_routes().items():
        basename = view.initkwargs["basename"]
        assert basename in world.targets, f"{template}: add one of A's {basename} to the world"


def test_no_route_with_an_id_reaches_another_organizations_object(outsider, world, send, unchanged):
    answered = 0
    with unchanged():
        for template, view in id_routes().items():
            basename = view.initkwargs["basename"]
            allowed = allowed_methods(view)
            for method in METHODS + EXTRA_METHODS:
                body = request_body(basename, allowed.get(method), world.own_project)
                response = same_as_random(
                    send,
                    method,
                    lambda pk, template=template, body=body: (
                        template.format(pk=pk, ping_id=world.ping.id),
                        body,
                    ),
                    world.targets[basename].pk,
                )
                answered += 1
                if method in EXTRA_METHODS:
                    assert response.status_code < 500
                elif method in allowed:
                    assert_problem(response, 404, "not_found")
                else:
                    assert_problem(response, 405, "method_not_allowed")
    assert answered == len(id_routes()) * len(METHODS + EXTRA_METHODS)


def test_the_same_requests_succeed_on_the_callers_own_objects(
    api, cast, make_endpoint, record, send
):
    """The control: the matrix's bodies are valid, so its 404s are the isolation at work."""
    api.as_user(cast.owner)
    for template, view in id_routes().items():
        basename = view.initkwargs["basename"]
        for method, action in allowed_methods(view).items():
            target = _fresh(basename, cast, make_endpoint, record)
            body = request_body(basename, action, cast.project)
            ping_id = _ping_of(target) if "{ping_id}" in template else None
            response = send(method, template.format(pk=target, ping_id=ping_id), body)
            assert response.status_code < 300, (method, template, response.content)


def _ping_of(endpoint_id):
    """A ping of the endpoint, for the routes under one."""
    return Ping.objects.create(
        endpoint_id=endpoint_id, kind="log", received_at=timezone.now(), method="POST"
    ).id


def _fresh(basename, cast, make_endpoint, record):
    """A new object of A per request, so that one DELETE leaves the next request its own."""
    n = uuid.uuid4().hex[:8]
    if basename == "user":
        return User.objects.create_user(f"{n}@acme.test", organization=cast.org).id
    if basename == "invitation":
        return invitation_create(
            inviter=cast.owner, email=f"{n}@acme.test", role=Role.MEMBER, projects=[]
        ).id
    if basename == "project":
        return Project.objects.create(organization=cast.org, name=n).id
    if basename == "apikey":
        return api_key_create(creator=cast.owner, name=n, scopes=["admin"], expires_at=None)[0].id
    if basename == "notification-channel":  # mailed: its test send opens no socket
        config = {"addresses": [f"{n}@acme.test"], "to_members": False}
        return channel_create(organization=cast.org, name=n, kind="email", config=config).id
    if basename == "maintenance-window":
        start = timezone.now()
        return MaintenanceWindow.objects.create(
            organization=cast.org, name=n, starts_at=start, ends_at=start + timedelta(hours=1)
        ).id
    if basename == "status-page":
        return StatusPage.objects.create(organization=cast.org, name=n, slug=f"s-{n}").id
    if basename == "escalation-policy":
        config = {"addresses": [f"{n}@acme.test"], "to_members": False}
        channel = channel_create(organization=cast.org, name=n, kind="email", config=config)
        return escalation_policy_create(
            organization=cast.org, name=n, steps=[StepInput(0, (channel,))]
        ).id
    endpoint = make_endpoint(cast.project, name=n, target="https://192.0.2.10/")
    if basename == "endpoint":
        return endpoint.id
    assert basename == "incident", f"add a factory for {basename!r}"
    later = endpoint.created_at + timedelta(seconds=1)
    record(endpoint, [(later, False, 1.0), (later + timedelta(seconds=1), False, 1.0)])
    return Incident.objects.get(endpoint=endpoint).id


def test_foreign_ids_in_request_bodies_are_refused_like_unknown_ids(
    outsider, world, schema, send, unchanged
):
    operations, resolve = schema
    cases = []
    for method, path, operation in operations:
        if "requestBody" not in operation:
            continue
        body_schema = resolve(operation["requestBody"]["content"]["application/json"]["schema"])
        for name, prop in body_schema["properties"].items():
            prop = resolve(prop)
            if "uuid" in (prop.get("format"), resolve(prop.get("items", {})).get("format")):
                assert (method, path) in SMUGGLING_BODIES, f"add a valid body for {method} {path}"
                cases.append((method, path, name, prop["type"] == "array"))
    assert len(cases) >= 4

    with unchanged():
        for method, template, name, many in cases:
            path = template.format(id=getattr(own_object(world, template), "pk", None))
            base = SMUGGLING_BODIES[(method, template)]
            # An id list holds one of B's own ids of that kind and one of A's.
            own, model = (
                (world.own_endpoint, Endpoint)
                if name == "endpoints"
                else (world.own_project, Project)
            )

            def build(pk, path=path, base=base, name=name, many=many, own=own):
                return path, {**base, name: [str(own.id), pk] if many else pk}

            response = same_as_random(send, method, build, world.foreign(model).pk)
            assert name in assert_problem(response, 400, "validation_error")["errors"]


def test_the_smuggling_bodies_are_valid_with_the_callers_own_project(api, world, send):
    """The control: with B's own project instead of A's, each body is accepted."""
    api.as_user(world.cast.outsider)
    own = str(world.own_project.id)
    for (method, template), body in SMUGGLING_BODIES.items():
        path = template.format(id=getattr(own_object(world, template), "pk", None))
        field: dict[str, object] = {"projects": [own]}
        if template.startswith("/api/v1/endpoints"):
            field = {"project": own}
        elif template.startswith("/api/v1/incidents"):
            field = {"endpoints": [str(world.own_endpoint.id)]}
        if (method, template) == ("POST", "/api/v1/escalation-policies"):
            field["steps"] = [{"after_minutes": 0, "channels": [str(world.own_channel.id)]}]
        response = send(method, path, {**body, **field})
        assert response.status_code < 300, (method, template, response.content)


def test_foreign_ids_in_query_parameters_answer_like_unknown_ids(
    outsider, world, schema, send, unchanged
):
    operations, _ = schema
    cases = [
        (path, parameter["name"])
        for method, path, operation in operations
        if method == "GET"
        for parameter in operation.get("parameters", [])
        if parameter["in"] == "query"
        and (parameter.get("schema", {}).get("format") == "uuid" or parameter["name"] in ID_LISTS)
    ]
    assert len(cases) >= 16
    statuses = set()

    with unchanged():
        for path, name in cases:
            assert name in ID_MODELS, f"which model does ?{name}= name? Add it to ID_MODELS"
            foreign_id = world.foreign(ID_MODELS[name]).pk

            def build(pk, path=path, name=name):
                return f"{path}?{urlencode({name: pk})}", None

            response = same_as_random(send, "GET", build, foreign_id)
            if name in ID_LISTS:  # one foreign id among the caller's own
                own = str(world.own_endpoint.id)

                def build_mixed(pk, path=path, name=name, own=own):
                    return f"{path}?{urlencode({name: f'{own},{pk}'})}", None

                assert same_as_random(send, "GET", build_mixed, foreign_id).status_code == 404
            statuses.add(response.status_code)
            if path.startswith("/api/v1/analytics/"):
                assert_problem(response, 404, "not_found")
            elif response.status_code == 200:
                assert response.json()["results"] == [], (path, name)
            else:
                assert name in assert_problem(response, 400, "validation_error")["errors"]
    assert statuses <= {200, 400, 404}


def test_organization_fields_in_bodies_are_ignored(api, world):
    api.as_user(world.cast.outsider)
    smuggled = {"organization": str(world.cast.org.id), "organization_id": str(world.cast.org.id)}
    own = str(world.own_project.id)

    for path, body in [
        ("/api/v1/projects", {"name": "Mine"}),
        (
            "/api/v1/endpoints",
            {"project": own, "name": "Mine", "type": "http", "target": "https://x.test/"},
        ),
        ("/api/v1/api-keys", {"name": "Mine", "scopes": ["admin"]}),
        ("/api/v1/users/invite", {"email": "mine@globex.test", "role": Role.MEMBER}),
    ]:
        assert api.post(path, {**body, **smuggled}, format="json").status_code == 201, path

    assert Project.objects.get(name="Mine").organization == world.cast.other_org
    assert Endpoint.objects.get(name="Mine").project.organization == world.cast.other_org
    assert ApiKey.objects.get(name="Mine").organization == world.cast.other_org
    assert Invitation.objects.get(email="mine@globex.test").organization == world.cast.other_org


def test_foreign_ids_look_exactly_like_missing_and_malformed_ids(api, world):
    api.as_user(world.cast.outsider)

    for collection, foreign_id in (
        ("projects", world.cast.project.id),
        ("endpoints", world.targets["endpoint"].id),
    ):
        foreign = api.get(f"/api/v1/{collection}/{foreign_id}")
        missing = api.get(f"/api/v1/{collection}/00000000-0000-0000-0000-000000000000")
        malformed = api.get(f"/api/v1/{collection}/not-a-uuid")
        assert foreign.content == missing.content == malformed.content
        assert foreign.status_code == missing.status_code == malformed.status_code == 404


def test_no_list_shows_anything_of_another_organization(outsider, world, send, unchanged):
    a_ids = {
        str(pk)
        for model in (
            User,
            Project,
            Endpoint,
            Incident,
            CheckResult,
            ApiKey,
            NotificationChannel,
            MaintenanceWindow,
        )
        for pk in model.objects.filter(**_in_org(model, world.cast.org)).values_list(
            "pk", flat=True
        )
    }
    a_ids |= {str(world.cast.org.id), str(world.targets["invitation"].id)}
    lists = [r for r in api_routes() if r.method == "GET" and not r.has_pk]
    assert len(lists) >= 15

    with unchanged():
        for route in lists:
            query = {"endpoints": world.own_endpoint.id} if route.action == "compare" else {}
            response = send("GET", f"{route.path()}?{urlencode(query)}")
            assert response.status_code == 200, (route, response.content)
            body = response.content.decode()
            assert not [pk for pk in a_ids if pk in body], route
            assert "acme" not in body.lower(), route


def _in_org(model, org):
    lookups = {
        User: "organization",
        Project: "organization",
        ApiKey: "organization",
        Endpoint: "project__organization",
        Incident: "endpoint__project__organization",
        CheckResult: "endpoint__project__organization",
        NotificationChannel: "organization",
        MaintenanceWindow: "organization",
    }
    return {lookups[model]: org}
