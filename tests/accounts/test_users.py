import pytest

from accounts.models import Role, User
from tests.helpers import assert_problem


def role(api, user, value):
    return api.patch(f"/api/v1/users/{user.id}/role", {"role": value})


@pytest.mark.parametrize("who", ["owner", "admin"])
def test_owners_and_admins_list_the_users_of_their_organization(api, cast, who):
    api.as_user(getattr(cast, who))

    response = api.get("/api/v1/users")

    assert response.status_code == 200
    data = response.json()
    assert set(data) == {"count", "next", "previous", "results"}
    assert {u["email"] for u in data["results"]} == {
        "owner@acme.test",
        "admin@acme.test",
        "member@acme.test",
    }
    member = next(u for u in data["results"] if u["role"] == "member")
    assert member["projects"] == [str(cast.project.id)]
    assert member["organization_id"] == str(cast.org.id)
    assert "password" not in member


def test_members_cannot_list_change_roles_or_remove(api, cast):
    api.as_user(cast.member)

    assert_problem(api.get("/api/v1/users"), 403, "permission_denied")
    assert_problem(api.get(f"/api/v1/users/{cast.admin.id}"), 403, "permission_denied")
    assert_problem(role(api, cast.admin, "member"), 403, "permission_denied")
    assert_problem(api.delete(f"/api/v1/users/{cast.admin.id}"), 403, "permission_denied")
    assert User.objects.get(pk=cast.admin.pk).role == Role.ADMIN


def test_user_routes_require_authentication(api, cast):
    for response in (
        api.get("/api/v1/users"),
        role(api, cast.member, "admin"),
        api.delete(f"/api/v1/users/{cast.member.id}"),
    ):
        assert_problem(response, 401, "not_authenticated")


def test_list_query_count_does_not_grow_with_users(
    api, cast, make_user, django_assert_max_num_queries
):
    for n in range(20):
        make_user(cast.org, f"extra{n}@acme.test", projects=(cast.project,))
    api.as_user(cast.admin)

    with django_assert_max_num_queries(5):
        response = api.get("/api/v1/users?page_size=100")

    assert response.json()["count"] == 23


def test_list_is_paginated(api, cast, make_user):
    for n in range(5):
        make_user(cast.org, f"extra{n}@acme.test")
    api.as_user(cast.admin)

    page = api.get("/api/v1/users?page_size=3").json()

    assert page["count"] == 8
    assert len(page["results"]) == 3
    assert page["next"].endswith("page=2&page_size=3")


@pytest.mark.parametrize("who", ["owner", "admin"])
def test_owner_and_admin_change_member_roles(api, cast, who):
    api.as_user(getattr(cast, who))

    response = role(api, cast.member, "admin")

    assert response.status_code == 200
    assert response.json()["role"] == "admin"
    assert User.objects.get(pk=cast.member.pk).role == Role.ADMIN


def test_role_change_applies_on_the_next_request_with_the_same_token(api, cast):
    api.as_user(cast.member)
    assert api.get("/api/v1/users").status_code == 403
    User.objects.filter(pk=cast.member.pk).update(role=Role.ADMIN)

    assert api.get("/api/v1/users").status_code == 200


def test_an_admin_cannot_grant_the_owner_role(api, cast):
    api.as_user(cast.admin)

    assert_problem(role(api, cast.member, "owner"), 403, "permission_denied")
    assert_problem(role(api, cast.admin, "owner"), 403, "permission_denied")
    assert User.objects.get(pk=cast.member.pk).role == Role.MEMBER


def test_an_admin_cannot_change_an_owner(api, cast, make_user):
    second_owner = make_user(cast.org, "owner2@acme.test", Role.OWNER)
    api.as_user(cast.admin)

    assert_problem(role(api, second_owner, "member"), 403, "permission_denied")
    assert_problem(api.delete(f"/api/v1/users/{second_owner.id}"), 403, "permission_denied")
    assert User.objects.get(pk=second_owner.pk).role == Role.OWNER


def test_an_owner_grants_and_changes_the_owner_role(api, cast):
    api.as_user(cast.owner)

    assert role(api, cast.admin, "owner").status_code == 200
    assert role(api, cast.admin, "member").status_code == 200
    assert User.objects.get(pk=cast.admin.pk).role == Role.MEMBER


def test_demoting_the_last_owner_is_refused(api, cast):
    api.as_user(cast.owner)

    assert_problem(role(api, cast.owner, "admin"), 400, "last_owner")

    api.as_user(cast.admin)
    assert_problem(role(api, cast.owner, "member"), 400, "last_owner")
    assert User.objects.get(pk=cast.owner.pk).role == Role.OWNER


def test_an_owner_may_step_down_when_another_owner_remains(api, cast):
    api.as_user(cast.owner)
    role(api, cast.admin, "owner")

    assert role(api, cast.owner, "member").status_code == 200
    assert User.objects.for_org(cast.org).owners().get() == cast.admin


def test_removing_oneself_is_refused(api, cast):
    for who in (cast.owner, cast.admin):
        api.as_user(who)
        assert_problem(api.delete(f"/api/v1/users/{who.id}"), 400, "cannot_remove_self")
    assert User.objects.for_org(cast.org).count() == 3


def test_removing_the_last_owner_is_refused(api, cast):
    api.as_user(cast.admin)

    assert_problem(api.delete(f"/api/v1/users/{cast.owner.id}"), 400, "last_owner")
    assert User.objects.filter(pk=cast.owner.pk).exists()


def test_an_owner_removes_another_owner(api, cast, make_user):
    second_owner = make_user(cast.org, "owner2@acme.test", Role.OWNER)
    api.as_user(cast.owner)

    assert api.delete(f"/api/v1/users/{second_owner.id}").status_code == 204
    assert not User.objects.filter(pk=second_owner.pk).exists()


@pytest.mark.parametrize("who", ["owner", "admin"])
def test_removed_users_tokens_answer_401(api, cast, who):
    victim_api_token = api.as_user(cast.member)._credentials["HTTP_AUTHORIZATION"]
    assert api.get("/api/v1/auth/me").status_code == 200
    api.as_user(getattr(cast, who))

    response = api.delete(f"/api/v1/users/{cast.member.id}")

    assert response.status_code == 204
    assert response.content == b""
    api.credentials(HTTP_AUTHORIZATION=victim_api_token)
    assert_problem(api.get("/api/v1/auth/me"), 401, "invalid_token")


@pytest.mark.parametrize("value", ["superuser", "OWNER", "", None, 3, ["admin"]])
def test_unknown_roles_are_validation_errors(api, cast, value):
    api.as_user(cast.owner)

    assert_problem(role(api, cast.member, value), 400, "validation_error")
    assert User.objects.get(pk=cast.member.pk).role == Role.MEMBER


def test_owner_replaces_a_members_projects(api, cast):
    second = cast.org.projects.create(name="Second")
    api.as_user(cast.owner)

    response = api.put(f"/api/v1/users/{cast.member.id}/projects", {"projects": [str(second.id)]})

    assert response.status_code == 200
    assert response.json()["projects"] == [str(second.id)]
    api.as_user(cast.member)
    visible = api.get("/api/v1/projects").json()["results"]
    assert [p["id"] for p in visible] == [str(second.id)]


def test_granting_a_foreign_project_is_refused(api, cast):
    api.as_user(cast.admin)

    response = api.put(
        f"/api/v1/users/{cast.member.id}/projects", {"projects": [str(cast.other_project.id)]}
    )

    assert_problem(response, 400, "validation_error")
    assert list(User.objects.get(pk=cast.member.pk).projects.all()) == [cast.project]


def test_an_actor_demoted_meanwhile_loses_its_rights(cast):
    from accounts.errors import ManagerRoleRequired
    from accounts.services import user_change_role

    stale_owner = User.objects.get(pk=cast.owner.pk)
    User.objects.filter(pk=cast.admin.pk).update(role=Role.OWNER)
    User.objects.filter(pk=cast.owner.pk).update(role=Role.MEMBER)

    with pytest.raises(ManagerRoleRequired) as refused:
        user_change_role(actor=stale_owner, user=cast.member, role=Role.OWNER)
    assert (refused.value.status, refused.value.code) == (403, "permission_denied")
    assert User.objects.get(pk=cast.member.pk).role == Role.MEMBER


def test_a_target_removed_meanwhile_is_not_found(cast):
    from django.http import Http404

    from accounts.services import user_remove

    stale_member = User.objects.get(pk=cast.member.pk)
    User.objects.filter(pk=cast.member.pk).delete()

    with pytest.raises(Http404):
        user_remove(actor=cast.owner, user=stale_member)
