"""Races between endpoint and project writes (PostgreSQL row locks)."""

import pytest

from accounts.models import Project, Role, User
from accounts.services import organization_create
from monitoring.models import Endpoint
from tests.concurrency import call, race
from tests.helpers import PASSWORD

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgres("needs row locks"),
]


def test_deleting_a_project_while_an_endpoint_joins_it_never_loses_the_endpoint():
    organization, _ = organization_create(name="Acme")
    owner = User.objects.create_user(
        "owner@acme.test", PASSWORD, organization=organization, role=Role.OWNER
    )
    outcomes = set()

    for n in range(8):
        project = Project.objects.create(organization=organization, name=f"Race {n}")
        body = {
            "project": str(project.id),
            "name": "Joining",
            "type": "http",
            "target": "https://example.com/",
        }
        delete, create = race(
            call("DELETE", f"/api/v1/projects/{project.id}", user=owner),
            call("POST", "/api/v1/endpoints", body, user=owner),
        )
        outcomes.add((delete, create))
        # Either the endpoint got in first and the project stays, or the project went first
        # and the endpoint was refused; never a 201 for an endpoint that is then gone.
        assert (delete, create) in {(409, 201), (204, 400)}
        assert Endpoint.objects.filter(project_id=project.id).count() == (create == 201)


@pytest.fixture
def owner_and_project():
    organization, project = organization_create(name="Acme")
    owner = User.objects.create_user(
        "owner@acme.test", PASSWORD, organization=organization, role=Role.OWNER
    )
    return owner, project


def _endpoint(project, **fields):
    from monitoring.services import endpoint_create
    from monitoring.validation import validate_config

    fields.setdefault("type", "http")
    config = validate_config(fields["type"], fields.pop("config", {}))
    return endpoint_create(
        project=project, name="E", interval_seconds=60, timeout_seconds=10, config=config, **fields
    )


def test_a_stored_secret_never_ends_up_with_a_target_moved_concurrently(owner_and_project):
    owner, project = owner_and_project
    for _ in range(8):
        endpoint = _endpoint(
            project, target="https://good.test/", config={"headers": {"X-Api-Key": "k-secret"}}
        )
        path = f"/api/v1/endpoints/{endpoint.id}"
        race(
            call("PATCH", path, {"target": "https://evil.test/", "config": {}}, user=owner),
            call("PATCH", path, {"config": {"headers": {"X-Api-Key": "****"}}}, user=owner),
        )
        stored = Endpoint.objects.get(pk=endpoint.pk)
        if stored.target == "https://evil.test/":
            assert stored.config["headers"] == {}


def test_patch_and_resume_at_once_leave_a_due_endpoint(owner_and_project):
    owner, project = owner_and_project
    for _ in range(8):
        endpoint = _endpoint(project, target="https://good.test/", enabled=False)
        path = f"/api/v1/endpoints/{endpoint.id}"
        race(
            call("PATCH", path, {"name": "Renamed"}, user=owner),
            call("POST", f"{path}/resume", user=owner),
        )
        stored = Endpoint.objects.get(pk=endpoint.pk)
        assert stored.enabled
        assert stored.next_check_at is not None


def test_interval_and_timeout_changed_at_once_never_break_the_rule(owner_and_project):
    owner, project = owner_and_project
    for _ in range(8):
        endpoint = _endpoint(project, target="https://good.test/")
        path = f"/api/v1/endpoints/{endpoint.id}"
        statuses = race(
            call("PATCH", path, {"interval_seconds": 20}, user=owner),
            call("PATCH", path, {"timeout_seconds": 30}, user=owner),
        )
        assert sorted(statuses) == [200, 400]
        stored = Endpoint.objects.get(pk=endpoint.pk)
        assert stored.timeout_seconds < stored.interval_seconds
