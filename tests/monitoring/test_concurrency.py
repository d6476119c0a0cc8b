"""Races between endpoint and project writes (PostgreSQL row locks)."""

import pytest
from django.db import connection

from accounts.models import Project, Role, User
from accounts.services import organization_create
from monitoring.models import Endpoint
from tests.concurrency import call, race
from tests.helpers import PASSWORD

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="needs row locks (PostgreSQL)"),
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
