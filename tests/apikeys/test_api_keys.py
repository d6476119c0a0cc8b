"""The API key routes: issue (shown once), list, read and revoke."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from apikeys.models import ApiKey
from tests.helpers import assert_problem

FUTURE = "2099-01-01T00:00:00Z"


def create(api, **body):
    body.setdefault("name", "CI deploys")
    body.setdefault("scopes", ["endpoint:read"])
    return api.post("/api/v1/api-keys", body)


def test_create_answers_the_key_once_with_the_contract_shape(api, cast):
    api.as_user(cast.owner)

    response = create(api, scopes=["endpoint:read", "analytics:read"], expires_at=FUTURE)

    assert response.status_code == 201
    body = response.json()
    assert set(body) >= {"id", "name", "scopes", "prefix", "expires_at", "created_at", "key"}
    assert body["key"].startswith("hm_live_")
    assert body["key"].startswith(body["prefix"])
    assert body["scopes"] == ["endpoint:read", "analytics:read"]
    assert body["expires_at"] == "2099-01-01T00:00:00Z"
    assert body["created_at"].endswith("Z")


def test_the_key_is_never_shown_again(api, cast):
    api.as_user(cast.owner)
    key = create(api).json()["key"]
    key_id = ApiKey.objects.get().id

    listed = api.get("/api/v1/api-keys")
    detail = api.get(f"/api/v1/api-keys/{key_id}")

    for response in (listed, detail):
        assert response.status_code == 200
        assert key not in response.content.decode()
        assert b'"key"' not in response.content
    assert listed.json()["count"] == 1


def test_the_clear_key_is_stored_in_no_table(api, cast):
    api.as_user(cast.owner)
    key = create(api).json()["key"]
    secret_part = key[len("hm_live_") + 8 :]

    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            quoted = connection.ops.quote_name(table)
            cursor.execute(f"SELECT * FROM {quoted}")  # noqa: S608 - names from introspection
            for row in cursor.fetchall():
                text = " ".join(str(value) for value in row)
                assert secret_part not in text, table


def test_the_key_works_as_a_bearer_credential(api, cast, make_endpoint):
    make_endpoint(cast.project)
    api.as_user(cast.owner)
    key = create(api).json()["key"]

    response = api.with_key(key).get("/api/v1/endpoints")

    assert response.status_code == 200
    assert response.json()["count"] == 1


def test_expires_at_is_optional_and_duplicate_scopes_collapse(api, cast):
    api.as_user(cast.owner)

    body = create(api, scopes=["admin", "endpoint:read", "admin"]).json()

    assert body["expires_at"] is None
    assert body["scopes"] == ["endpoint:read", "admin"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"scopes": []}, "scopes"),
        ({"scopes": ["endpoint:write"]}, "scopes.0"),
        ({"scopes": ["ADMIN"]}, "scopes.0"),
        ({"scopes": "admin"}, "scopes"),
        ({"scopes": [None]}, "scopes.0"),
        ({"scopes": None}, "scopes"),
        ({"expires_at": "2020-01-01T00:00:00Z"}, "expires_at"),
        ({"expires_at": "tomorrow"}, "expires_at"),
        ({"expires_at": "2099-13-01T00:00:00Z"}, "expires_at"),
        ({"expires_at": 4102444800}, "expires_at"),
        ({"name": ""}, "name"),
        ({"name": "x" * 201}, "name"),
        ({"name": "line\nbreak"}, "name"),
    ],
)
def test_bad_input_is_a_400_and_issues_nothing(api, cast, body, field):
    api.as_user(cast.owner)

    problem = assert_problem(create(api, **body), 400, "validation_error")

    assert field in problem["errors"]
    assert ApiKey.objects.count() == 0


def test_missing_scopes_is_a_400(api, cast):
    api.as_user(cast.owner)

    problem = assert_problem(api.post("/api/v1/api-keys", {"name": "x"}), 400, "validation_error")

    assert "scopes" in problem["errors"]


def test_an_expiry_just_passed_is_refused(api, cast):
    api.as_user(cast.owner)
    just_now = (datetime.now(UTC) - timedelta(seconds=1)).isoformat()

    assert_problem(create(api, expires_at=just_now), 400, "validation_error")


def test_revoke_makes_the_key_answer_401_and_hides_it(api, cast):
    api.as_user(cast.owner)
    key = create(api).json()["key"]
    key_id = ApiKey.objects.get().id

    assert api.delete(f"/api/v1/api-keys/{key_id}").status_code == 204

    assert ApiKey.objects.get().revoked_at is not None
    assert api.get("/api/v1/api-keys").json()["count"] == 0
    assert_problem(api.delete(f"/api/v1/api-keys/{key_id}"), 404, "not_found")
    assert_problem(api.with_key(key).get("/api/v1/endpoints"), 401, "invalid_token")


def test_members_manage_their_own_keys_only(api, cast, make_key):
    make_key(cast.owner, "endpoint:read")
    owners_key = ApiKey.objects.get()
    api.as_user(cast.member)
    create(api)

    listed = api.get("/api/v1/api-keys").json()["results"]

    assert [k["created_by"] for k in listed] == [str(cast.member.id)]
    assert_problem(api.get(f"/api/v1/api-keys/{owners_key.id}"), 404, "not_found")
    assert_problem(api.delete(f"/api/v1/api-keys/{owners_key.id}"), 404, "not_found")
    assert ApiKey.objects.get(pk=owners_key.pk).revoked_at is None


@pytest.mark.parametrize("who", ["owner", "admin"])
def test_owners_and_admins_see_and_revoke_every_key_of_the_organization(api, cast, make_key, who):
    make_key(cast.member, "endpoint:read")
    members_key = ApiKey.objects.get()
    api.as_user(getattr(cast, who))

    assert api.get("/api/v1/api-keys").json()["count"] == 1
    assert api.delete(f"/api/v1/api-keys/{members_key.id}").status_code == 204


def test_another_organizations_key_id_is_a_404_and_stays_active(api, cast, make_key):
    outsider_key = make_key(cast.outsider, "endpoint:read")
    foreign = ApiKey.objects.get()
    api.as_user(cast.owner)

    assert_problem(api.get(f"/api/v1/api-keys/{foreign.id}"), 404, "not_found")
    assert_problem(api.delete(f"/api/v1/api-keys/{foreign.id}"), 404, "not_found")
    assert api.get("/api/v1/api-keys").json()["count"] == 0
    assert api.with_key(outsider_key).get("/api/v1/endpoints").status_code == 200


def test_an_admin_key_manages_keys_for_its_creator(api, cast, make_key):
    api.with_key(make_key(cast.owner, "admin"))

    created = create(api, scopes=["incident:read"])

    assert created.status_code == 201
    assert ApiKey.objects.get(pk=created.json()["id"]).created_by == cast.owner
    assert api.get("/api/v1/api-keys").json()["count"] == 2


@pytest.mark.parametrize(
    "scope", ["endpoint:read", "endpoint:create", "incident:read", "analytics:read"]
)
def test_a_low_scope_key_can_never_list_create_or_revoke_keys(api, cast, make_key, scope):
    key = make_key(cast.owner, scope)
    target = ApiKey.objects.get()
    api.with_key(key)

    assert_problem(api.get("/api/v1/api-keys"), 403, "insufficient_scope")
    assert_problem(api.get(f"/api/v1/api-keys/{target.id}"), 403, "insufficient_scope")
    assert_problem(create(api, scopes=["admin"]), 403, "insufficient_scope")
    assert_problem(api.delete(f"/api/v1/api-keys/{target.id}"), 403, "insufficient_scope")
    assert ApiKey.objects.count() == 1
    assert ApiKey.objects.get().revoked_at is None


def test_keys_need_authentication(api, cast):
    assert_problem(api.get("/api/v1/api-keys"), 401, "not_authenticated")
    assert_problem(create(api), 401, "not_authenticated")
