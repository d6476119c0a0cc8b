import pytest

from accounts.models import Project
from tests.helpers import assert_problem


def test_owners_and_admins_see_every_project_members_their_granted_ones(api, cast):
    hidden = Project.objects.create(organization=cast.org, name="Hidden")

    api.as_user(cast.admin)
    assert {p["name"] for p in api.get("/api/v1/projects").json()["results"]} == {
        "Default",
        "Hidden",
    }

    api.as_user(cast.member)
    assert [p["name"] for p in api.get("/api/v1/projects").json()["results"]] == ["Default"]
    assert_problem(api.get(f"/api/v1/projects/{hidden.id}"), 404, "not_found")


def test_project_shape(api, cast):
    api.as_user(cast.member)

    data = api.get(f"/api/v1/projects/{cast.project.id}").json()

    assert set(data) == {"id", "name", "ping_key", "created_at"}
    assert data["created_at"].endswith("Z")


@pytest.mark.parametrize("who", ["owner", "admin"])
def test_owners_and_admins_create_rename_and_delete(api, cast, who):
    api.as_user(getattr(cast, who))

    created = api.post("/api/v1/projects", {"name": "Payments"})
    assert created.status_code == 201
    project_id = created.json()["id"]
    assert Project.objects.get(pk=project_id).organization == cast.org

    renamed = api.patch(f"/api/v1/projects/{project_id}", {"name": "Billing"})
    assert renamed.status_code == 200
    assert renamed.json()["name"] == "Billing"

    assert api.delete(f"/api/v1/projects/{project_id}").status_code == 204
    assert not Project.objects.filter(pk=project_id).exists()


def test_members_cannot_write_projects(api, cast):
    api.as_user(cast.member)

    assert_problem(api.post("/api/v1/projects", {"name": "Nope"}), 403, "permission_denied")
    assert_problem(
        api.patch(f"/api/v1/projects/{cast.project.id}", {"name": "Nope"}), 403, "permission_denied"
    )
    assert_problem(api.delete(f"/api/v1/projects/{cast.project.id}"), 403, "permission_denied")
    assert Project.objects.get(pk=cast.project.pk).name == "Default"


def test_duplicate_project_names_conflict_case_insensitively(api, cast):
    api.as_user(cast.owner)
    api.post("/api/v1/projects", {"name": "Payments"})

    assert_problem(api.post("/api/v1/projects", {"name": "payments"}), 409, "conflict")
    assert_problem(
        api.patch(f"/api/v1/projects/{cast.project.id}", {"name": "PAYMENTS"}), 409, "conflict"
    )


def test_another_organization_may_use_the_same_name(api, cast):
    api.as_user(cast.outsider)

    assert api.post("/api/v1/projects", {"name": "Default-2"}).status_code == 201
    api.as_user(cast.owner)
    assert api.post("/api/v1/projects", {"name": "Default-2"}).status_code == 201


@pytest.mark.parametrize("name", ["", "   ", None, "x" * 201, "tab\tname", ["list"]])
def test_bad_project_names_are_validation_errors(api, cast, name):
    api.as_user(cast.owner)

    assert_problem(api.post("/api/v1/projects", {"name": name}), 400, "validation_error")


def test_put_is_not_offered(api, cast):
    api.as_user(cast.owner)

    response = api.put(f"/api/v1/projects/{cast.project.id}", {"name": "X"})

    assert_problem(response, 405, "method_not_allowed")
