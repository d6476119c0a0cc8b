import pytest
from django.core.management import call_command
from django.urls import reverse

from accounts.models import Invitation, Organization, Project, Role, User
from accounts.services import invitation_create


def test_createsuperuser_works_non_interactively(db, monkeypatch):
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", "ops-password-123")

    call_command("createsuperuser", interactive=False, email="Root@Ops.test", verbosity=0)

    user = User.objects.get(email="root@ops.test")
    assert user.is_superuser
    assert user.is_staff
    assert user.role == Role.OWNER
    assert user.organization.projects.count() == 1
    assert user.password.startswith("bcrypt_sha256$")


@pytest.mark.parametrize("model", [Organization, User, Project, Invitation])
def test_changelists_and_searches_render(staff_client, cast, model):
    invitation_create(
        inviter=cast.owner, email="pending@acme.test", role="member", projects=[cast.project]
    )
    url = reverse(f"admin:accounts_{model._meta.model_name}_changelist")

    assert staff_client.get(url).status_code == 200
    assert staff_client.get(url, {"q": "acme"}).status_code == 200


def test_user_page_masks_the_password_hash(staff_client, cast):
    response = staff_client.get(reverse("admin:accounts_user_change", args=[cast.member.pk]))

    assert response.status_code == 200
    page = response.content.decode()
    hash_tail = cast.member.password.rsplit("$", 1)[-1]
    assert hash_tail not in page
    assert "bcrypt_sha256" in page


def test_invitation_page_never_shows_the_token_digest(staff_client, cast):
    invitation = invitation_create(
        inviter=cast.owner, email="pending@acme.test", role="member", projects=[]
    )

    response = staff_client.get(reverse("admin:accounts_invitation_change", args=[invitation.pk]))

    assert response.status_code == 200
    assert invitation.token_hash not in response.content.decode()


def test_organization_page_inlines_users_and_projects(staff_client, cast):
    response = staff_client.get(reverse("admin:accounts_organization_change", args=[cast.org.pk]))

    page = response.content.decode()
    assert "member@acme.test" in page
    assert "Default" in page


def test_admin_requires_staff(client, cast):
    client.force_login(cast.owner)

    response = client.get(reverse("admin:accounts_user_changelist"))

    assert response.status_code == 302


def test_setting_a_password_in_the_admin_revokes_the_users_jwts(staff_client, cast, api):
    api.as_user(cast.member)
    assert api.get("/api/v1/auth/me").status_code == 200
    url = reverse("admin:auth_user_password_change", args=[cast.member.pk]).replace(
        "auth/user", "accounts/user"
    )

    response = staff_client.post(
        url,
        {
            "password1": "admin-set-pass-77",
            "password2": "admin-set-pass-77",
            "usable_password": "true",
        },
    )

    assert response.status_code == 302, response.content
    assert api.get("/api/v1/auth/me").status_code == 401
    assert User.objects.get(pk=cast.member.pk).check_password("admin-set-pass-77")


def test_the_admin_cannot_demote_the_last_owner(staff_client, cast):
    url = reverse("admin:accounts_user_change", args=[cast.owner.pk])
    form = {
        "email": cast.owner.email,
        "organization": str(cast.org.pk),
        "role": "member",
        "is_active": "on",
        "date_joined_0": "2026-01-01",
        "date_joined_1": "00:00:00",
        "access-TOTAL_FORMS": "0",
        "access-INITIAL_FORMS": "0",
    }

    response = staff_client.post(url, form)

    assert response.status_code == 200
    assert "last owner" in response.content.decode()
    assert User.objects.get(pk=cast.owner.pk).role == Role.OWNER


def test_project_page_shows_the_ping_key_read_only(staff_client, cast):
    url = reverse("admin:accounts_project_change", args=[cast.project.pk])

    page = staff_client.get(url).content.decode()
    staff_client.post(url, {"name": "Renamed", "organization": cast.org.pk, "ping_key": "x"})

    assert cast.project.ping_key in page
    assert 'name="ping_key"' not in page  # shown, not an input
    cast.project.refresh_from_db()
    assert cast.project.name == "Renamed"
    assert cast.project.ping_key != "x"


def test_a_project_is_found_by_its_ping_key(staff_client, cast):
    other = Project.objects.create(organization=cast.org, name="Other")
    url = reverse("admin:accounts_project_changelist")

    page = staff_client.get(url, {"q": cast.project.ping_key}).content.decode()

    assert reverse("admin:accounts_project_change", args=[cast.project.pk]) in page
    assert reverse("admin:accounts_project_change", args=[other.pk]) not in page
