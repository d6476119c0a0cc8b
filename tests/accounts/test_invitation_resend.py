from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from accounts.models import Invitation, User
from accounts.services import invitation_accept, invitation_create, invitation_resend
from healthmon.errors import Conflict
from tests.helpers import PASSWORD, accept_invite, assert_problem, mailed_token

ACCEPT = "/api/v1/auth/accept-invite"


@pytest.fixture
def invite(cast, django_capture_on_commit_callbacks):
    """Invite an address to Acme as its admin, mailing the link."""

    def make(email="new@acme.test", role="member", projects=()):
        with django_capture_on_commit_callbacks(execute=True):
            return invitation_create(inviter=cast.admin, email=email, role=role, projects=projects)

    return make


@pytest.fixture
def resend(django_capture_on_commit_callbacks):
    """Resend an invitation, running its on-commit mail like a real request."""

    def run(invitation):
        with django_capture_on_commit_callbacks(execute=True):
            return invitation_resend(invitation=invitation)

    return run


def test_the_new_link_accepts_and_the_old_one_no_longer_does(api, cast, outbox, invite, resend):
    invitation = invite(projects=[cast.project])
    old_token = mailed_token(outbox[0], "/accept-invite")

    resend(invitation)

    assert len(outbox) == 2
    new_token = mailed_token(outbox[1], "/accept-invite")
    assert new_token != old_token
    assert_problem(accept_invite(api, old_token), 400, "validation_error")
    response = accept_invite(api, new_token)
    assert response.status_code == 201, response.content
    assert response.json()["user"]["role"] == "member"
    assert list(User.objects.get(email="new@acme.test").projects.all()) == [cast.project]


def test_the_resent_mail_is_the_invitation_mail(cast, outbox, invite, resend):
    invitation = invite(role="admin")

    resend(invitation)

    first, again = outbox
    assert again.to == ["new@acme.test"]
    assert again.subject == first.subject
    assert "Acme" in again.subject
    assert "admin@acme.test invited you to join Acme on healthmon as Admin" in again.body
    assert mailed_token(again, "/accept-invite") not in str(Invitation.objects.values_list())


def test_resending_extends_the_expiry_to_a_full_ttl(api, cast, outbox, invite, resend):
    invitation = invite()
    later = (timezone.now() + timedelta(days=6)).replace(microsecond=0)

    with time_machine.travel(later, tick=False):
        resent = resend(invitation)

    assert resent.expires_at == later + timedelta(days=7)
    assert Invitation.objects.get().expires_at == later + timedelta(days=7)
    assert (later + timedelta(days=7)).strftime("%Y-%m-%d %H:%M UTC") in outbox[1].body
    with time_machine.travel(later + timedelta(days=6, hours=23)):
        assert accept_invite(api, mailed_token(outbox[1], "/accept-invite")).status_code == 201


def test_an_expired_invitation_can_be_resent(api, cast, outbox, invite, resend):
    invitation = invite()

    with time_machine.travel(timezone.now() + timedelta(days=8)):
        resend(invitation)
        assert accept_invite(api, mailed_token(outbox[1], "/accept-invite")).status_code == 201


@pytest.mark.parametrize("closed", ["accepted", "revoked"])
def test_accepted_and_revoked_invitations_are_left_alone(api, cast, outbox, invite, closed):
    invitation = invite()
    if closed == "accepted":
        invitation_accept(token=mailed_token(outbox[0], "/accept-invite"), password=PASSWORD)
    else:
        Invitation.objects.update(revoked_at=timezone.now())
    before = Invitation.objects.values().get()

    with pytest.raises(Conflict):
        invitation_resend(invitation=invitation)

    assert Invitation.objects.values().get() == before
    assert len(outbox) == 1


def test_resending_replaces_a_newer_invitation_to_the_same_address(api, cast, outbox, invite):
    expired = invite()
    with time_machine.travel(timezone.now() + timedelta(days=8)):
        newer = invite(role="admin")

        invitation_resend(invitation=expired)

        assert Invitation.objects.get(pk=newer.pk).state == "revoked"
        assert_problem(
            accept_invite(api, mailed_token(outbox[1], "/accept-invite")), 400, "validation_error"
        )


def test_an_address_registered_meanwhile_is_a_conflict(cast, outbox, invite, make_user):
    invitation = invite()
    make_user(cast.org, "new@acme.test")

    with pytest.raises(Conflict):
        invitation_resend(invitation=invitation)

    assert len(outbox) == 1


def test_an_invitation_whose_inviter_left_names_the_organization(cast, outbox, invite, resend):
    invitation = invite()
    User.objects.filter(pk=cast.admin.pk).delete()
    invitation.refresh_from_db()

    resend(invitation)

    assert "An administrator of Acme invited you to join Acme" in outbox[1].body
