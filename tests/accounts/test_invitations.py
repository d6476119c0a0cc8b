from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from accounts.models import Invitation, Project, User
from tests.helpers import PASSWORD, accept_invite, assert_problem, mailed_token

INVITE = "/api/v1/users/invite"
ACCEPT = "/api/v1/auth/accept-invite"


def invite(api, email="new@acme.test", role="member", projects=()):
    return api.post(INVITE, {"email": email, "role": role, "projects": [str(p) for p in projects]})


def test_invite_sends_an_email_with_a_link_and_answers_the_invitation(api, cast, outbox):
    api.as_user(cast.admin)

    response = invite(api, "New@Acme.test", projects=[cast.project.id])

    assert response.status_code == 201
    data = response.json()
    assert data["email"] == "new@acme.test"
    assert data["role"] == "member"
    assert data["projects"] == [str(cast.project.id)]
    assert data["expires_at"]
    assert len(outbox) == 1
    assert outbox[0].to == ["new@acme.test"]
    assert "Acme" in outbox[0].subject
    token = mailed_token(outbox[0], "/accept-invite")
    assert token not in str(Invitation.objects.values_list())


def test_accept_creates_the_user_with_the_role_and_projects(api, cast, outbox):
    second = Project.objects.create(organization=cast.org, name="Second")
    api.as_user(cast.owner)
    invite(api, role="member", projects=[second.id])
    api.as_user(None)

    response = accept_invite(api, mailed_token(outbox[0], "/accept-invite"))

    assert response.status_code == 201
    data = response.json()
    assert set(data) == {"token", "expires_at", "user"}
    assert data["user"]["email"] == "new@acme.test"
    assert data["user"]["role"] == "member"
    assert data["user"]["organization_id"] == str(cast.org.id)
    user = User.objects.get(email="new@acme.test")
    assert list(user.projects.all()) == [second]
    assert user.password.startswith("bcrypt_sha256$")
    projects = api.get("/api/v1/projects", HTTP_AUTHORIZATION=f"Bearer {data['token']}").json()
    assert [p["id"] for p in projects["results"]] == [str(second.id)]
    login = api.post("/api/v1/auth/login", {"email": "new@acme.test", "password": PASSWORD})
    assert login.status_code == 200


def test_accepting_twice_is_refused(api, cast, outbox):
    api.as_user(cast.admin)
    invite(api)
    api.as_user(None)
    token = mailed_token(outbox[0], "/accept-invite")
    assert accept_invite(api, token).status_code == 201

    assert_problem(accept_invite(api, token, "another-password-9"), 400, "validation_error")
    assert User.objects.filter(email="new@acme.test").count() == 1


def test_an_expired_invitation_is_refused(api, cast, outbox):
    api.as_user(cast.admin)
    invite(api)
    api.as_user(None)
    token = mailed_token(outbox[0], "/accept-invite")

    with time_machine.travel(timezone.now() + timedelta(days=7, seconds=1)):
        response = accept_invite(api, token)

    assert_problem(response, 400, "validation_error")
    assert not User.objects.filter(email="new@acme.test").exists()


def test_an_invitation_is_valid_until_just_before_its_expiry(api, cast, outbox):
    api.as_user(cast.admin)
    invite(api)
    api.as_user(None)

    with time_machine.travel(timezone.now() + timedelta(days=6, hours=23)):
        assert accept_invite(api, mailed_token(outbox[0], "/accept-invite")).status_code == 201


def test_a_revoked_invitation_is_refused(api, cast, outbox):
    api.as_user(cast.admin)
    invitation_id = invite(api).json()["id"]
    assert api.delete(f"/api/v1/invitations/{invitation_id}").status_code == 204
    api.as_user(None)

    assert_problem(
        accept_invite(api, mailed_token(outbox[0], "/accept-invite")), 400, "validation_error"
    )
    assert not User.objects.filter(email="new@acme.test").exists()


def test_reinviting_replaces_the_earlier_link(api, cast, outbox):
    api.as_user(cast.admin)
    invite(api)
    invite(api, role="admin")
    api.as_user(None)

    assert_problem(
        accept_invite(api, mailed_token(outbox[0], "/accept-invite")), 400, "validation_error"
    )
    response = accept_invite(api, mailed_token(outbox[1], "/accept-invite"))
    assert response.json()["user"]["role"] == "admin"


def test_invite_refuses_projects_of_another_organization(api, cast, outbox):
    api.as_user(cast.admin)

    response = invite(api, projects=[cast.other_project.id])

    assert "projects" in assert_problem(response, 400, "validation_error")["errors"]
    assert not Invitation.objects.exists()
    assert outbox == []


@pytest.mark.parametrize(
    "payload",
    [
        {"email": "x@acme.test", "role": "superuser", "projects": []},
        {"email": "x@acme.test", "role": "", "projects": []},
        {"email": "x@acme.test", "role": None, "projects": []},
        {"email": "x@acme.test", "role": "member", "projects": ["not-a-uuid"]},
        {"email": "x@acme.test", "role": "member", "projects": "not-a-list"},
        {"email": "x@acme.test", "role": "member", "projects": [None]},
        {"email": "bad", "role": "member", "projects": []},
        {"role": "member", "projects": []},
    ],
)
def test_invite_rejects_bad_input(api, cast, payload):
    api.as_user(cast.owner)

    assert_problem(api.post(INVITE, payload), 400, "validation_error")
    assert not Invitation.objects.exists()


def test_invite_refuses_an_existing_account(api, cast):
    api.as_user(cast.admin)

    assert_problem(invite(api, email="Member@acme.test"), 409, "conflict")
    assert_problem(invite(api, email="owner@globex.test"), 409, "conflict")


def test_members_cannot_invite(api, cast, outbox):
    api.as_user(cast.member)

    assert_problem(invite(api), 403, "permission_denied")
    assert outbox == []


def test_only_an_owner_can_invite_an_owner(api, cast, outbox):
    api.as_user(cast.admin)
    assert_problem(invite(api, role="owner"), 403, "permission_denied")

    api.as_user(cast.owner)
    assert invite(api, role="owner").status_code == 201


def test_invite_requires_authentication(api, cast):
    assert_problem(invite(api), 401, "not_authenticated")


def test_invitation_list_shows_pending_invitations_only(api, cast, outbox):
    api.as_user(cast.owner)
    pending = invite(api, email="pending@acme.test").json()["id"]
    revoked = invite(api, email="revoked@acme.test").json()["id"]
    api.delete(f"/api/v1/invitations/{revoked}")
    invite(api, email="accepted@acme.test")
    accept_invite(api, mailed_token(outbox[-1], "/accept-invite"))
    api.as_user(cast.outsider)
    invite(api, email="elsewhere@globex.test")

    api.as_user(cast.admin)
    listed = api.get("/api/v1/invitations").json()

    assert [i["id"] for i in listed["results"]] == [pending]
    assert listed["count"] == 1


def test_invitations_are_for_owners_and_admins(api, cast):
    api.as_user(cast.member)

    assert_problem(api.get("/api/v1/invitations"), 403, "permission_denied")


def test_invitation_mail_escapes_the_organization_name(api, cast, outbox):
    cast.org.name = "<script>alert(1)</script> & Co"
    cast.org.save()
    api.as_user(cast.owner)

    invite(api)

    html = outbox[0].alternatives[0][0]
    assert "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; Co" in html
