"""The process-local snapshots of keys and users: what decides access is read on every
request, so a warm snapshot never lets through what the database no longer allows."""

import uuid
from datetime import UTC, datetime, timedelta

import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.authentication import SNAPSHOT_SECONDS, Snapshots, copy_user, uuid_hex
from accounts.models import Organization, Role, User
from apikeys import keys
from apikeys.models import ApiKey
from tests.helpers import assert_problem

ENDPOINTS = "/api/v1/endpoints"


def warm(api, key):
    """Use the key twice: the second request is served from this process's snapshot."""
    api.with_key(key)
    assert api.get(ENDPOINTS).status_code == 200
    assert api.get(ENDPOINTS).status_code == 200


def test_a_key_revoked_elsewhere_is_refused_at_the_next_request(api, cast, make_key):
    key = make_key(cast.owner, "endpoint:read")
    warm(api, key)

    # As another process would: a plain UPDATE, nothing in this process is told.
    ApiKey.objects.filter(prefix=key[:16]).update(revoked_at=timezone.now())

    assert_problem(api.get(ENDPOINTS), 401, "invalid_token")


def test_a_key_expired_while_warm_is_refused(api, cast, make_key):
    expires_at = datetime.now(UTC) + timedelta(seconds=5)
    key = make_key(cast.owner, "endpoint:read", expires_at=expires_at)
    warm(api, key)

    with time_machine.travel(expires_at + timedelta(seconds=1)):
        assert_problem(api.get(ENDPOINTS), 401, "invalid_token")


def test_a_wrong_key_with_the_same_lookup_id_is_refused_while_the_right_one_is_warm(
    api, cast, make_key
):
    key = make_key(cast.owner, "endpoint:read")
    warm(api, key)
    body = key[:16] + ("A" if key[16] != "A" else "B") + key[17 : -keys.CHECKSUM_LENGTH]
    forged = body + keys._checksum(body)  # well formed: it reaches the database lookup
    assert keys.parse(forged) is not None

    assert_problem(api.with_key(forged).get(ENDPOINTS), 401, "invalid_token")
    assert api.with_key(key).get(ENDPOINTS).status_code == 200


def test_warm_keys_of_two_organizations_each_see_only_their_own(api, cast, make_key, make_endpoint):
    ours = make_endpoint(cast.project, name="ours")
    theirs = make_endpoint(cast.other_project, name="theirs")
    our_key = make_key(cast.owner, "endpoint:read")
    their_key = make_key(cast.outsider, "endpoint:read")
    warm(api, our_key)
    warm(api, their_key)

    for _ in range(2):
        assert [e["id"] for e in api.with_key(our_key).get(ENDPOINTS).json()["results"]] == [
            str(ours.id)
        ]
        assert api.get(f"{ENDPOINTS}/{theirs.id}").status_code == 404
        assert [e["id"] for e in api.with_key(their_key).get(ENDPOINTS).json()["results"]] == [
            str(theirs.id)
        ]
        assert api.get(f"{ENDPOINTS}/{ours.id}").status_code == 404


def test_a_creator_demoted_or_deactivated_elsewhere_applies_at_once(
    api, cast, make_key, make_endpoint
):
    make_endpoint(cast.project)
    key = make_key(cast.owner, "endpoint:read")
    warm(api, key)

    # A member sees only the projects granted to it: none.
    User.objects.filter(pk=cast.owner.pk).update(role=Role.MEMBER)
    assert api.get(ENDPOINTS).json()["count"] == 0

    User.objects.filter(pk=cast.owner.pk).update(role=Role.OWNER, is_active=False)
    assert_problem(api.get(ENDPOINTS), 401, "invalid_token")


def test_a_creator_moved_to_another_organization_is_refused(api, cast, make_key):
    key = make_key(cast.owner, "endpoint:read")
    warm(api, key)

    User.objects.filter(pk=cast.owner.pk).update(organization=cast.other_org)

    assert_problem(api.get(ENDPOINTS), 401, "invalid_token")


def test_a_warm_key_reads_its_state_in_one_query_and_its_rows_again_after_the_lifetime(
    api, cast, make_key
):
    key = make_key(cast.owner, "endpoint:read")
    warm(api, key)
    Organization.objects.filter(pk=cast.org.pk).update(name="Renamed")

    with CaptureQueriesContext(connection) as warm_queries:
        assert api.get(ENDPOINTS).status_code == 200
    with (
        time_machine.travel(timedelta(seconds=SNAPSHOT_SECONDS + 1)),
        CaptureQueriesContext(connection) as stale_queries,
    ):
        assert api.get(ENDPOINTS).status_code == 200

    key_reads = [q["sql"] for q in warm_queries if "apikeys_apikey" in q["sql"]]
    assert len(key_reads) == 1  # the state; the rows come from the snapshot
    reloaded = [q["sql"] for q in stale_queries if "accounts_organization" in q["sql"]]
    assert len(reloaded) == 1


def test_a_jwt_user_snapshot_follows_the_token_version_and_the_role(api, cast, make_endpoint):
    make_endpoint(cast.project)
    api.as_user(cast.owner)
    assert api.get(ENDPOINTS).json()["count"] == 1
    assert api.get(ENDPOINTS).json()["count"] == 1

    User.objects.filter(pk=cast.owner.pk).update(role=Role.MEMBER)
    assert api.get(ENDPOINTS).json()["count"] == 0

    User.objects.filter(pk=cast.owner.pk).update(token_version=cast.owner.token_version + 1)
    assert_problem(api.get(ENDPOINTS), 401, "invalid_token")


def test_a_snapshot_hands_out_copies_that_a_request_may_change(cast):
    kept: Snapshots[str, User] = Snapshots(copy_user)
    user = User.objects.select_related("organization").get(pk=cast.owner.pk)
    kept.put("owner", user, ("state",))

    first = kept.get("owner", ("state",))
    assert first is not None
    assert first is not user
    first.role = Role.MEMBER
    first.organization.name = "Changed"
    second = kept.get("owner", ("state",))

    assert second is not None
    assert (second.role, second.organization.name) == (Role.OWNER, "Acme")
    assert kept.get("owner", ("another state",)) is None


def test_a_uuid_compares_the_same_in_every_form_a_state_read_returns():
    value = uuid.UUID("37bd0c74-e1b5-4006-8ab2-b3f62b740b4c")

    forms = (value, str(value), value.hex, str(value).upper())  # ORM, PostgreSQL, SQLite

    assert {uuid_hex(form) for form in forms} == {"37bd0c74e1b540068ab2b3f62b740b4c"}
    assert uuid_hex(None) is None
    assert uuid_hex(uuid.uuid4()) != uuid_hex(value)
