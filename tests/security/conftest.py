"""The two organizations the security tests attack across, and the proof that nothing changed.

Organization A (the cast's Acme) holds one object of every kind an API route can name, with
history (checks, rollups, an incident); organization B (Globex) has its owner, a member, a
project and an endpoint of its own, so that its requests are valid in every respect but the
foreign id.
"""

import hashlib
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from django.apps import apps
from django.db import models
from django.utils import timezone

from accounts.models import Organization, Project, Role, User
from accounts.services import invitation_create
from alerts.escalation_validation import StepInput
from alerts.models import EscalationPolicy, MaintenanceWindow, NotificationChannel
from alerts.services import channel_create, escalation_policy_create, maintenance_window_save
from apikeys.models import ApiKey
from monitoring.models import Endpoint, Incident, Ping
from statuspages.models import Component, Section, StatusPage
from tests.conftest import Api, Cast

OUR_APPS = ("accounts", "apikeys", "monitoring", "alerts", "analytics", "statuspages")
# Written by design on a request that changes nothing else: when a key was last used.
BOOKKEEPING = {ApiKey: {"last_used_at"}}
# Generous: only there to catch a hang (a runaway regex, a quadratic parse), not to benchmark.
SLOW = 2.0


def _table_checksum(model: type[models.Model]) -> tuple[int, str]:
    fields = [
        f.attname for f in model._meta.concrete_fields if f.name not in BOOKKEEPING.get(model, ())
    ]
    rows = list(model._base_manager.order_by("pk").values_list(*fields))
    return len(rows), hashlib.sha256(repr(rows).encode()).hexdigest()


def checksums() -> dict[str, tuple[int, str]]:
    """Row count and a hash of every row's values, ordered by pk, for every table of our apps."""
    return {
        model._meta.db_table: _table_checksum(model)
        for label in OUR_APPS
        for model in apps.get_app_config(label).get_models(include_auto_created=True)
    }


@pytest.fixture
def unchanged() -> Callable[[], Any]:
    """`with unchanged(): ...` fails, naming the tables, if any row changed inside the block."""

    @contextmanager
    def block() -> Iterator[None]:
        before = checksums()
        yield
        after = checksums()
        changed = sorted(table for table in before if before[table] != after[table])
        assert not changed, f"rows changed in {changed}"

    return block


@dataclass
class World:
    """A's objects by route basename and by model; B's own objects and credentials."""

    cast: Cast
    targets: dict[str, Any]  # basename -> one of A's objects
    by_model: dict[type[models.Model], models.Model]  # model -> one of A's rows
    own_project: Project  # B's
    own_endpoint: Endpoint  # B's
    own_member: User  # B's
    outsider_key: str  # B's owner, scope admin
    own_channel: NotificationChannel  # B's
    own_window: MaintenanceWindow  # B's
    own_status_page: StatusPage  # B's
    ping: Ping  # A's, of A's endpoint: the `{ping_id}` of routes under a ping
    own_policy: EscalationPolicy | None = None  # B's

    def foreign(self, model: type[models.Model]) -> models.Model:
        """One of A's rows of this model, for an id smuggled into a body or query."""
        assert model in self.by_model, f"add a row of {model.__name__} to the world"
        return self.by_model[model]


@pytest.fixture
def world(cast, make_user, make_key, make_endpoint, record) -> World:
    """Organization A with every kind of object, B with its own project, endpoint and member."""
    now = timezone.now()
    endpoint = make_endpoint(cast.project, name="A's endpoint")
    record(endpoint, [(now + timedelta(seconds=i), False, 5.0) for i in (1, 2, 3)])
    incident = Incident.objects.get(endpoint=endpoint)
    invitation = invitation_create(
        inviter=cast.owner, email="pending@acme.test", role=Role.MEMBER, projects=[cast.project]
    )
    make_key(cast.owner, "admin")
    api_key = ApiKey.objects.get(organization=cast.org)
    targets = {
        "user": cast.member,
        "project": cast.project,
        "invitation": invitation,
        "apikey": api_key,
        "endpoint": endpoint,
        "incident": incident,
        "notification-channel": _channel(cast.org, cast.project, "A's channel"),
        "maintenance-window": _window(cast.org, cast.project, "A's window"),
        "status-page": _status_page(cast.org, endpoint, "a-status"),
    }
    targets["escalation-policy"] = _policy(targets["notification-channel"], cast.project, "A's")
    by_model = {type(target): target for target in targets.values()}
    by_model[Organization] = cast.org
    found = World(
        cast=cast,
        targets=targets,
        by_model=by_model,
        own_project=cast.other_project,
        own_endpoint=make_endpoint(cast.other_project, name="B's endpoint"),
        own_member=make_user(
            cast.other_org, "member@globex.test", Role.MEMBER, projects=(cast.other_project,)
        ),
        outsider_key=make_key(cast.outsider, "admin"),
        own_channel=_channel(cast.other_org, cast.other_project, "B's channel"),
        own_window=_window(cast.other_org, cast.other_project, "B's window"),
        own_status_page=_status_page(cast.other_org, None, "b-status"),
        ping=Ping.objects.create(
            endpoint=endpoint, kind="log", received_at=now, method="POST", body="A's"
        ),
    )
    found.own_policy = _policy(found.own_channel, cast.other_project, "B's")
    return found


def _channel(organization: Organization, project: Project, name: str) -> NotificationChannel:
    """A webhook channel narrowed to a project (its URL an address no test send reaches)."""
    return channel_create(
        organization=organization,
        name=name,
        kind="webhook",
        config={"url": "https://192.0.2.10/hook/s3cret"},
        projects=[project],
    )


def _window(organization: Organization, project: Project, name: str) -> MaintenanceWindow:
    """A weekly maintenance window narrowed to a project."""
    start = timezone.now().replace(microsecond=0)
    window = MaintenanceWindow(organization=organization)
    return maintenance_window_save(
        window=window,
        projects=[project],
        name=name,
        starts_at=start,
        ends_at=start + timedelta(hours=1),
        recurrence="weekly",
    )


def _status_page(organization: Organization, endpoint: Endpoint | None, slug: str) -> StatusPage:
    """A public page showing the endpoint (if any) in one section."""
    page = StatusPage.objects.create(organization=organization, name=slug, slug=slug)
    if endpoint is not None:
        section = Section.objects.create(page=page, name="Core")
        Component.objects.create(page=page, section=section, endpoint=endpoint)
    return page


@pytest.fixture
def schema(api, db):
    """The served OpenAPI document's operations `(METHOD, path, operation)`, and a function
    that resolves a `$ref`."""
    document = api.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    components = document["components"]["schemas"]

    def resolve(node):
        while "$ref" in node:
            node = components[node["$ref"].rsplit("/", 1)[1]]
        if "oneOf" in node:  # one schema per kind (an endpoint's `type`): all their fields
            properties = {}
            for variant in node["oneOf"]:
                for name, prop in resolve(variant).get("properties", {}).items():
                    properties.setdefault(name, prop)
            node = {**node, "type": "object", "properties": properties}
        return node

    operations = [
        (method.upper(), path, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in {"get", "post", "put", "patch", "delete"}
    ]
    return operations, resolve


@pytest.fixture(params=["jwt", "admin key"])
def outsider(request, api: Api, world: World) -> Api:
    """The client as organization B's owner, by JWT and by an `admin` API key."""
    if request.param == "jwt":
        return api.as_user(world.cast.outsider)
    return api.with_key(world.outsider_key)


@pytest.fixture
def send(api: Api) -> Callable[..., Any]:
    """Send one request, JSON-encoded unless `raw` bytes are given; it must answer in time."""

    def request(method: str, path: str, body: Any = None, raw: bytes | None = None, **extra: Any):
        # json.dumps escapes lone surrogates as \ud800, as a client would send them.
        data = raw if raw is not None else (b"" if body is None else json.dumps(body).encode())
        started = time.perf_counter()
        response = api.generic(method, path, data, content_type="application/json", **extra)
        elapsed = time.perf_counter() - started
        assert elapsed < SLOW, f"{method} {path} took {elapsed:.2f} s"
        return response

    return request


def _policy(channel: NotificationChannel, project: Project, name: str) -> EscalationPolicy:
    """An escalation policy of the channel's organization, narrowed to a project."""
    return escalation_policy_create(
        organization=channel.organization,
        name=f"{name} policy",
        steps=[StepInput(0, (channel,))],
        repeat_every_minutes=30,
        projects=[project],
    )
