"""Races that only a real database with row locks can show: PostgreSQL (CI) runs them."""

import re

import pytest

from accounts.models import Role, User
from accounts.services import invitation_create, organization_create, password_reset_send
from tests.concurrency import call, race
from tests.helpers import PASSWORD

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgres("needs row locks"),
]


@pytest.fixture
def org():
    organization, _ = organization_create(name="Acme")
    owner = User.objects.create_user(
        "owner@acme.test", PASSWORD, organization=organization, role=Role.OWNER
    )
    admin = User.objects.create_user(
        "admin@acme.test", PASSWORD, organization=organization, role=Role.ADMIN
    )
    member = User.objects.create_user("member@acme.test", PASSWORD, organization=organization)
    return owner, admin, member


def test_a_reset_link_used_twice_at_once_works_once(org, mailoutbox):
    password_reset_send(email="member@acme.test")
    token = re.search(r"reset-password\?token=(\S+)", mailoutbox[0].body).group(1)
    path = "/api/v1/auth/reset-password"

    results = race(
        call("POST", path, {"token": token, "password": "first-new-password-1"}),
        call("POST", path, {"token": token, "password": "second-new-password-2"}),
    )

    assert sorted(results) == [200, 400]


def test_accepting_an_invitation_while_the_email_registers_never_fails_with_500(org, mailoutbox):
    owner, _, _ = org
    invitation_create(inviter=owner, email="new@acme.test", role=Role.MEMBER, projects=[])
    token = re.search(r"accept-invite\?token=(\S+)", mailoutbox[-1].body).group(1)
    register = {"email": "new@acme.test", "password": PASSWORD, "organization_name": "New"}

    results = race(
        call("POST", "/api/v1/auth/accept-invite", {"token": token, "password": PASSWORD}),
        call("POST", "/api/v1/auth/register", register),
    )

    assert sorted(results) == [201, 409]
    assert User.objects.filter(email="new@acme.test").count() == 1


def test_removing_a_user_twice_at_once_gives_204_then_404(org):
    owner, admin, member = org
    path = f"/api/v1/users/{member.id}"

    results = race(call("DELETE", path, user=owner), call("DELETE", path, user=admin))

    assert sorted(results) == [204, 404]


def test_two_owners_demoting_each_other_at_once_leave_one_owner(org):
    owner, admin, _ = org
    User.objects.filter(pk=admin.pk).update(role=Role.OWNER)
    admin.role = Role.OWNER

    results = race(
        call("PATCH", f"/api/v1/users/{admin.id}/role", {"role": "member"}, user=owner),
        call("PATCH", f"/api/v1/users/{owner.id}/role", {"role": "member"}, user=admin),
    )

    assert sorted(results) in ([200, 400], [200, 403])
    assert User.objects.owners().count() == 1
