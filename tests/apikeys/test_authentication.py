"""Bearer API keys: every bad key answers the same 401; a key acts with its creator's role."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.utils import timezone

from accounts.models import Role
from apikeys.models import ApiKey
from tests.helpers import PASSWORD, assert_problem

ENDPOINTS = "/api/v1/endpoints"


def invalid_body(response):
    body = assert_problem(response, 401, "invalid_token")
    assert response["WWW-Authenticate"] == 'Bearer realm="api"'
    return body


def test_expired_key_is_refused_once_the_clock_passes_expiry(api, cast, make_key):
    expires_at = datetime.now(UTC) + timedelta(hours=1)
    key = make_key(cast.owner, "endpoint:read", expires_at=expires_at)
    api.with_key(key)

    assert api.get(ENDPOINTS).status_code == 200
    with time_machine.travel(expires_at - timedelta(seconds=1)):
        assert api.get(ENDPOINTS).status_code == 200
    with time_machine.travel(expires_at + timedelta(seconds=1)):
        invalid_body(api.get(ENDPOINTS))


def test_every_bad_key_answers_the_same_401(api, cast, make_key):
    key = make_key(cast.owner, "endpoint:read")
    revoked = make_key(cast.owner, "endpoint:read")
    ApiKey.objects.filter(prefix=revoked[:16]).update(revoked_at=timezone.now())
    tampered = key[:-7] + ("A" if key[-7] != "A" else "B") + key[-6:]
    unknown = make_key(cast.owner, "endpoint:read")
    ApiKey.objects.filter(prefix=unknown[:16]).delete()
    forged_lookup = "hm_live_" + "0" * 8 + key[16:]

    bodies = [
        invalid_body(api.with_key(candidate).get(ENDPOINTS))
        for candidate in (
            revoked,
            tampered,
            key[:-1],
            key[:20],
            key.upper(),
            unknown,
            forged_lookup,
            "hm_live_",
            key + key,
        )
    ]

    assert all(body == bodies[0] for body in bodies)
    assert api.with_key(key).get(ENDPOINTS).status_code == 200


def test_a_malformed_key_is_refused_without_a_database_query(
    api, cast, make_key, django_assert_num_queries
):
    key = make_key(cast.owner, "endpoint:read")

    with django_assert_num_queries(0):
        invalid_body(api.with_key(key[:-1] + ("x" if key[-1] != "x" else "y")).get(ENDPOINTS))


def test_a_valid_key_costs_one_query_to_authenticate(
    api, cast, make_key, make_endpoint, django_assert_num_queries
):
    make_endpoint(cast.project)
    make_endpoint(cast.project)
    api.with_key(make_key(cast.owner, "endpoint:read"))
    api.get(ENDPOINTS)  # records last use

    # the key's and its creator's state (one join; the rows are this process's snapshot),
    # the visible projects, the endpoint page (not full: no count)
    with django_assert_num_queries(3):
        assert api.get(ENDPOINTS).status_code == 200


def test_the_key_and_jwt_answer_the_same_401_body(api, cast, make_key):
    bad_key = invalid_body(api.with_key("hm_live_nonsense").get(ENDPOINTS))
    bad_jwt = invalid_body(api.with_key("eyJhbGciOiJIUzI1NiJ9.e30.bad").get(ENDPOINTS))

    assert bad_key == bad_jwt


def test_a_key_of_a_removed_creator_answers_401(api, cast, make_key):
    key = make_key(cast.member, "endpoint:read")
    api.as_user(cast.owner)

    assert api.delete(f"/api/v1/users/{cast.member.id}").status_code == 204

    invalid_body(api.with_key(key).get(ENDPOINTS))
    record = ApiKey.objects.get()
    assert record.created_by is None
    assert record.revoked_at is not None


def test_a_key_whose_creator_is_gone_is_refused_even_if_never_revoked(api, cast, make_key):
    key = make_key(cast.member, "endpoint:read")
    cast.member.delete()  # as the admin's delete action does, without the API's revocation

    assert ApiKey.objects.get().revoked_at is None
    invalid_body(api.with_key(key).get(ENDPOINTS))


def test_a_key_of_a_deactivated_creator_answers_401(api, cast, make_key):
    key = make_key(cast.admin, "endpoint:read")
    cast.admin.is_active = False
    cast.admin.save(update_fields=["is_active"])

    invalid_body(api.with_key(key).get(ENDPOINTS))


def test_a_member_key_with_admin_scope_cannot_reach_users(api, cast, make_key):
    api.with_key(make_key(cast.member, "admin"))

    assert_problem(api.get("/api/v1/users"), 403, "permission_denied")
    assert_problem(api.post("/api/v1/projects", {"name": "Nope"}), 403, "permission_denied")
    assert api.get(ENDPOINTS).status_code == 200


def test_a_key_follows_its_creators_current_role(api, cast, make_key):
    api.with_key(make_key(cast.admin, "admin"))
    assert api.get("/api/v1/users").status_code == 200

    cast.admin.role = Role.MEMBER
    cast.admin.save(update_fields=["role"])

    assert_problem(api.get("/api/v1/users"), 403, "permission_denied")


def test_a_member_key_sees_only_the_members_projects(api, cast, make_key, make_endpoint):
    from accounts.models import Project

    hidden = Project.objects.create(organization=cast.org, name="Hidden")
    make_endpoint(cast.project, name="Visible")
    make_endpoint(hidden, name="Secret")

    api.with_key(make_key(cast.member, "endpoint:read"))

    names = [e["name"] for e in api.get(ENDPOINTS).json()["results"]]
    assert names == ["Visible"]


def test_last_used_at_is_written_at_most_once_a_minute(api, cast, make_key):
    api.with_key(make_key(cast.owner, "endpoint:read"))
    start = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)

    with time_machine.travel(start, tick=False):
        api.get(ENDPOINTS)
    assert ApiKey.objects.get().last_used_at == start

    with time_machine.travel(start + timedelta(seconds=59), tick=False):
        api.get(ENDPOINTS)
    assert ApiKey.objects.get().last_used_at == start

    with time_machine.travel(start + timedelta(seconds=61), tick=False):
        api.get(ENDPOINTS)
    assert ApiKey.objects.get().last_used_at == start + timedelta(seconds=61)


def test_an_unused_key_has_no_last_use(api, cast):
    api.as_user(cast.owner)

    body = api.post("/api/v1/api-keys", {"name": "n", "scopes": ["admin"]}).json()

    assert body["last_used_at"] is None


@pytest.mark.parametrize("scopes", [("endpoint:read",), ("admin",)])
def test_keys_cannot_change_a_password(api, cast, make_key, scopes):
    api.with_key(make_key(cast.owner, *scopes))

    response = api.post(
        "/api/v1/auth/change-password",
        {"current_password": PASSWORD, "new_password": "another-good-pass-42"},
    )

    assert_problem(response, 403, "permission_denied")
    cast.owner.refresh_from_db()
    assert cast.owner.check_password(PASSWORD)


def test_public_auth_routes_ignore_a_bad_key(api, cast):
    api.with_key("hm_live_bogus")

    response = api.post("/api/v1/auth/login", {"email": "owner@acme.test", "password": PASSWORD})

    assert response.status_code == 200


def test_me_answers_an_admin_key_with_its_creator(api, cast, make_key):
    assert api.with_key(make_key(cast.admin, "admin")).get("/api/v1/auth/me").json()["id"] == str(
        cast.admin.id
    )
    assert_problem(
        api.with_key(make_key(cast.admin, "endpoint:read")).get("/api/v1/auth/me"),
        403,
        "insufficient_scope",
    )


def test_keys_issued_under_an_earlier_prefix_keep_working(api, cast, make_key, settings):
    old_key = make_key(cast.owner, "endpoint:read")
    settings.API_KEY_PREFIX = "acme"

    new_key = make_key(cast.owner, "endpoint:read")

    assert new_key.startswith("acme_live_")
    assert api.with_key(old_key).get(ENDPOINTS).status_code == 200
    assert api.with_key(new_key).get(ENDPOINTS).status_code == 200


def test_a_well_formed_key_with_a_known_lookup_id_but_another_secret_is_refused(
    api, cast, make_key
):
    from apikeys import keys

    real = make_key(cast.owner, "endpoint:read")
    body = real[: len("hm_live_") + keys.LOOKUP_LENGTH] + "Z" * keys.SECRET_LENGTH
    forged = body + keys._checksum(body)
    assert keys.parse(forged) is not None  # passes the checksum: the digest must refuse it

    invalid_body(api.with_key(forged).get(ENDPOINTS))
