"""`make superuser` (Django's createsuperuser) says what it creates besides the user (issue 20)."""

from io import StringIO

from django.core.management import call_command, get_commands

from accounts.models import Organization, Role, User


def test_createsuperuser_names_the_organization_it_creates(db, monkeypatch):
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", "a-long-admin-passphrase-7")
    out = StringIO()

    call_command("createsuperuser", interactive=False, email="root@example.com", stdout=out)

    user = User.objects.get(email="root@example.com")
    assert (user.is_superuser, user.is_staff, user.role) == (True, True, Role.OWNER)
    assert user.organization.name == "Operations"
    assert Organization.objects.count() == 1
    printed = out.getvalue()
    assert "Superuser created successfully." in printed
    assert (
        'Created the organization "Operations" (project "Default") with root@example.com '
        "as its owner and a Django-admin superuser."
    ) in printed
    assert "/admin/" in printed
    assert "/register" in printed


def test_the_accounts_command_replaces_djangos():
    assert get_commands()["createsuperuser"] == "accounts"
