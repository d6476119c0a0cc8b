"""The audit log: each security-relevant action is recorded with actor, organization, time,
client address and target; owners and admins read their organization's log; no secret ever
lands in it."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import AuditAction, AuditEvent
from apikeys.models import ApiKey
from tests.helpers import PASSWORD, assert_problem, mailed_token

NEW_PASSWORD = "another-long-passphrase-7"
CLIENT = {"REMOTE_ADDR": "203.0.113.9"}
LOG = "/api/v1/audit-log"


def events(action):
    return list(AuditEvent.objects.filter(action=action).order_by("created_at"))


def only(action):
    found = events(action)
    assert len(found) == 1, [str(event) for event in found]
    return found[0]


def test_a_sign_in_is_recorded_with_its_address(api, cast):
    api.post("/api/v1/auth/login", {"email": "admin@acme.test", "password": PASSWORD}, **CLIENT)

    event = only(AuditAction.LOGIN_SUCCEEDED)
    assert event.organization_id == cast.org.id
    assert event.actor == cast.admin
    assert event.actor_email == "admin@acme.test"
    assert event.ip == "203.0.113.9"
    assert timezone.now() - event.created_at < timedelta(seconds=10)


def test_failed_sign_ins_show_in_the_accounts_organization_only_when_it_exists(api, cast):
    api.post("/api/v1/auth/login", {"email": "admin@acme.test", "password": "wrong-9"}, **CLIENT)
    api.post("/api/v1/auth/login", {"email": "nobody@acme.test", "password": "wrong-9"}, **CLIENT)

    known, unknown = events(AuditAction.LOGIN_FAILED)
    assert (known.organization_id, known.details) == (cast.org.id, {"email": "admin@acme.test"})
    assert known.actor is None
    assert (unknown.organization_id, unknown.details) == (None, {"email": "nobody@acme.test"})
    assert known.ip == unknown.ip == "203.0.113.9"


def test_the_client_address_honours_trusted_proxies_only(api, cast, settings):
    forwarded = {**CLIENT, "HTTP_X_FORWARDED_FOR": "198.51.100.7, 192.0.2.1"}
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 0}
    api.post("/api/v1/auth/login", {"email": "admin@acme.test", "password": PASSWORD}, **forwarded)
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    api.post("/api/v1/auth/login", {"email": "admin@acme.test", "password": PASSWORD}, **forwarded)

    assert [event.ip for event in events(AuditAction.LOGIN_SUCCEEDED)] == [
        "203.0.113.9",
        "192.0.2.1",
    ]


def test_a_password_reset_is_recorded_from_request_to_new_password(api, cast, outbox):
    api.post("/api/v1/auth/forgot-password", {"email": "member@acme.test"}, **CLIENT)
    token = mailed_token(outbox[0], "/reset-password")
    api.post("/api/v1/auth/reset-password", {"token": token, "password": NEW_PASSWORD}, **CLIENT)

    requested = only(AuditAction.PASSWORD_RESET_REQUESTED)
    assert (requested.organization_id, requested.target_id) == (cast.org.id, str(cast.member.id))
    assert requested.ip == "203.0.113.9"  # carried to the worker that looks the account up
    reset = only(AuditAction.PASSWORD_RESET)
    assert (reset.actor, reset.ip) == (cast.member, "203.0.113.9")


def test_an_unknown_address_asking_for_a_reset_records_nothing(api, db):
    api.post("/api/v1/auth/forgot-password", {"email": "nobody@acme.test"}, **CLIENT)

    assert not AuditEvent.objects.exists()


def test_a_password_change_is_recorded(api, cast):
    api.as_user(cast.member).post(
        "/api/v1/auth/change-password",
        {"current_password": PASSWORD, "new_password": NEW_PASSWORD},
        **CLIENT,
    )

    event = only(AuditAction.PASSWORD_CHANGED)
    assert (event.actor, event.via, event.ip) == (cast.member, "jwt", "203.0.113.9")


def test_an_invitation_is_recorded_when_sent_and_when_accepted(api, cast, outbox):
    api.as_user(cast.admin).post(
        "/api/v1/users/invite", {"email": "new@acme.test", "role": "member"}, **CLIENT
    )
    token = mailed_token(outbox[0], "/accept-invite")
    api.as_user(None).post("/api/v1/auth/accept-invite", {"token": token, "password": PASSWORD})

    sent = only(AuditAction.INVITATION_SENT)
    assert (sent.actor, sent.target_type) == (cast.admin, "invitation")
    assert sent.details == {"email": "new@acme.test", "role": "member"}
    accepted = only(AuditAction.INVITATION_ACCEPTED)
    assert accepted.actor.email == "new@acme.test"
    assert accepted.target_id == sent.target_id
    assert accepted.organization_id == sent.organization_id == cast.org.id


def test_a_role_change_and_a_removal_are_recorded_with_both_sides(api, cast):
    api.as_user(cast.owner)
    api.patch(f"/api/v1/users/{cast.member.id}/role", {"role": "admin"}, **CLIENT)
    api.patch(f"/api/v1/users/{cast.member.id}/role", {"role": "admin"})  # no change, no event
    api.delete(f"/api/v1/users/{cast.admin.id}")

    changed = only(AuditAction.USER_ROLE_CHANGED)
    assert (changed.actor, changed.target_id) == (cast.owner, str(cast.member.id))
    assert changed.details == {"from": "member", "to": "admin"}
    removed = only(AuditAction.USER_REMOVED)
    assert (removed.actor, removed.target_id) == (cast.owner, str(cast.admin.id))
    assert removed.target_repr == "admin@acme.test"  # still readable after the user is gone
    assert removed.details == {"email": "admin@acme.test", "role": "admin"}


def test_api_keys_are_recorded_when_created_and_revoked(api, cast):
    api.as_user(cast.member)
    created = api.post(
        "/api/v1/api-keys", {"name": "deploy", "scopes": ["endpoint:read"]}, **CLIENT
    ).json()
    api.delete(f"/api/v1/api-keys/{created['id']}")

    made = only(AuditAction.API_KEY_CREATED)
    assert (made.actor, made.target_id) == (cast.member, created["id"])
    assert made.details == {"name": "deploy", "scopes": ["endpoint:read"]}
    revoked = only(AuditAction.API_KEY_REVOKED)
    assert (revoked.actor, revoked.target_id) == (cast.member, created["id"])


def test_removing_a_user_records_the_revocation_of_its_keys(api, cast, make_key):
    make_key(cast.member, "endpoint:read")
    api.as_user(cast.owner).delete(f"/api/v1/users/{cast.member.id}")

    revoked = only(AuditAction.API_KEY_REVOKED)
    assert revoked.actor == cast.owner


def test_endpoints_are_recorded_when_created_and_deleted_also_through_a_key(api, cast, make_key):
    key = make_key(cast.owner, "endpoint:create")
    api.with_key(key)
    created = api.post(
        "/api/v1/endpoints",
        {
            "project": str(cast.project.id),
            "name": "Checkout",
            "type": "http",
            "target": "https://user:s3cret-pass@example.com/health",
        },
        format="json",
        **CLIENT,
    ).json()
    api.delete(f"/api/v1/endpoints/{created['id']}")

    made = only(AuditAction.ENDPOINT_CREATED)
    prefix = ApiKey.objects.get().prefix
    assert (made.actor, made.via, made.target_repr) == (cast.owner, f"api_key:{prefix}", "Checkout")
    assert made.details == {"project": str(cast.project.id), "type": "http"}
    gone = only(AuditAction.ENDPOINT_DELETED)
    assert (gone.target_id, gone.organization_id) == (created["id"], cast.org.id)


def test_a_ping_key_rotation_is_recorded_without_either_key(api, cast):
    old_key = cast.project.ping_key
    url = f"/api/v1/projects/{cast.project.id}/rotate-ping-key"
    api.as_user(cast.member).post(url, **CLIENT)  # refused: nothing to record
    new_key = api.as_user(cast.admin).post(url, **CLIENT).json()["ping_key"]

    rotated = only(AuditAction.PING_KEY_ROTATED)
    assert (rotated.actor, rotated.organization_id, rotated.ip) == (
        cast.admin,
        cast.org.id,
        "203.0.113.9",
    )
    assert (rotated.target_type, rotated.target_id) == ("project", str(cast.project.id))
    assert rotated.details == {}
    served = api.as_user(cast.owner).get(LOG, {"action": "project.ping_key_rotated"})
    assert served.json()["count"] == 1
    stored = json.dumps(list(AuditEvent.objects.values()), default=str)
    for key in (old_key, new_key):
        assert key not in stored
        assert key not in served.content.decode()


def test_the_pages_record_like_the_api(client, cast, make_endpoint):
    client.post("/login", {"email": "owner@acme.test", "password": PASSWORD}, **CLIENT)
    endpoint = make_endpoint(cast.project)
    client.post(f"/endpoints/{endpoint.pk}/delete", **CLIENT)

    assert only(AuditAction.LOGIN_SUCCEEDED).actor == cast.owner
    deleted = only(AuditAction.ENDPOINT_DELETED)
    assert (deleted.actor, deleted.via, deleted.ip) == (cast.owner, "session", "203.0.113.9")


# --- Reading the log ------------------------------------------------------------------------


@pytest.fixture
def logged(api, cast, make_key):
    """A few events in Acme, and one in Globex."""
    api.post("/api/v1/auth/login", {"email": "owner@acme.test", "password": PASSWORD})
    api.post("/api/v1/auth/login", {"email": "owner@acme.test", "password": "wrong-9"})
    make_key(cast.admin, "endpoint:read")
    api.post("/api/v1/auth/login", {"email": "owner@globex.test", "password": PASSWORD})


def test_owners_and_admins_read_their_organizations_log_newest_first(api, cast, logged):
    for user in (cast.owner, cast.admin):
        body = api.as_user(user).get(LOG).json()
        assert body["count"] == 3
        assert [event["action"] for event in body["results"]] == [
            "api_key.created",
            "login.failed",
            "login.succeeded",
        ]
        first = body["results"][-1]
        assert first["actor"] == {"id": str(cast.owner.id), "email": "owner@acme.test", "via": ""}
        assert first["target"] is None
        assert set(first) == {"id", "action", "created_at", "actor", "ip", "target", "details"}


def test_another_organizations_events_never_show(api, cast, logged):
    body = api.as_user(cast.outsider).get(LOG).json()

    assert [event["actor"]["email"] for event in body["results"]] == ["owner@globex.test"]


def test_members_and_keys_without_admin_are_refused(api, cast, make_key, logged):
    assert_problem(api.as_user(cast.member).get(LOG), 403, "permission_denied")
    assert_problem(
        api.with_key(make_key(cast.owner, "analytics:read")).get(LOG), 403, "insufficient_scope"
    )
    assert api.with_key(make_key(cast.owner, "admin")).get(LOG).status_code == 200
    assert_problem(api.as_user(None).get(LOG), 401, "not_authenticated")


def test_the_log_filters_by_action_actor_target_and_time(api, cast, logged):
    api.as_user(cast.owner)
    key_event = AuditEvent.objects.get(action=AuditAction.API_KEY_CREATED)

    def actions(**query):
        return [event["action"] for event in api.get(LOG, query).json()["results"]]

    assert actions(action="login.failed") == ["login.failed"]
    assert actions(actor=str(cast.admin.id)) == ["api_key.created"]
    assert actions(target_type="apikey", target_id=key_event.target_id) == ["api_key.created"]
    assert actions(**{"from": (timezone.now() + timedelta(minutes=1)).isoformat()}) == []
    assert len(actions(to=timezone.now().isoformat())) == 3
    assert_problem(api.get(LOG, {"action": "nope"}), 400, "validation_error")
    assert_problem(
        api.get(LOG, {"from": "2026-02-01T00:00Z", "to": "2026-01-01T00:00Z"}),
        400,
        "validation_error",
    )


def test_the_log_is_paged(api, cast):
    for _ in range(3):
        api.post("/api/v1/auth/login", {"email": "owner@acme.test", "password": PASSWORD})

    body = api.as_user(cast.owner).get(LOG, {"page_size": 2}).json()

    assert body["count"] == 3
    assert len(body["results"]) == 2
    assert body["next"]


def test_no_secret_ever_reaches_the_log(api, cast, outbox):
    """Every flow that handles a secret, then the whole log, as stored and as served."""
    api.post("/api/v1/auth/login", {"email": "owner@acme.test", "password": PASSWORD})
    api.post("/api/v1/auth/login", {"email": "owner@acme.test", "password": "wrong-guess-9"})
    jwt = api.post("/api/v1/auth/login", {"email": "owner@acme.test", "password": PASSWORD}).json()[
        "token"
    ]
    api.as_user(cast.owner)
    key = api.post("/api/v1/api-keys", {"name": "k", "scopes": ["admin"]}).json()["key"]
    api.post("/api/v1/users/invite", {"email": "new@acme.test", "role": "member"})
    invite_token = mailed_token(outbox[-1], "/accept-invite")
    api.as_user(None).post(
        "/api/v1/auth/accept-invite", {"token": invite_token, "password": NEW_PASSWORD}
    )
    api.post("/api/v1/auth/forgot-password", {"email": "owner@acme.test"})
    reset_token = mailed_token(outbox[-1], "/reset-password")
    api.post("/api/v1/auth/reset-password", {"token": reset_token, "password": NEW_PASSWORD})
    api.with_key(key).post(
        "/api/v1/endpoints",
        {
            "project": str(cast.project.id),
            "name": "Checkout",
            "type": "http",
            "target": "https://user:s3cret-pass@example.com/health?token=q-secret-1",
        },
        format="json",
    )

    stored = json.dumps(list(AuditEvent.objects.values()), default=str)
    served = api.with_key(key).get(LOG, {"page_size": 500}).content.decode()
    assert AuditEvent.objects.count() >= 9
    for secret in (
        PASSWORD,
        NEW_PASSWORD,
        "wrong-guess-9",
        jwt,
        key,
        key[len(ApiKey.objects.get().prefix) :],
        invite_token,
        reset_token,
        "s3cret-pass",
        "q-secret-1",
    ):
        assert secret not in stored, secret
        assert secret not in served, secret
