"""Django's `createsuperuser` (`make superuser`), saying what it creates besides the user.

A user belongs to one organization, so a superuser gets a new one of its own (the user
manager's `create_superuser`); a new organization must not appear unannounced.
"""

from typing import Any

from django.conf import settings
from django.contrib.auth.management.commands import createsuperuser
from django.utils import timezone

from accounts.models import User


class Command(createsuperuser.Command):
    help = (
        "Create a Django-admin superuser, owner of a new organization of its own "
        '("Operations", with a project "Default"); it says what it created.'
    )

    def handle(self, *args: Any, **options: Any) -> None:
        """Create the superuser as Django does, then name the organization made with it."""
        started = timezone.now()
        super().handle(*args, **options)
        user = (
            User.objects.using(options["database"])
            .filter(is_superuser=True, date_joined__gte=started)
            .select_related("organization")
            .order_by("-date_joined")
            .first()
        )
        if user is None:
            return
        organization = user.organization
        projects = ", ".join(f'"{p.name}"' for p in organization.projects.order_by("name"))
        self.stdout.write(
            f'Created the organization "{organization.name}" (project {projects}) with '
            f"{user.email} as its owner and a Django-admin superuser.\n"
            f"  Django admin: {settings.WEB_BASE_URL}/admin/\n"
            f'  dashboards of "{organization.name}": {settings.WEB_BASE_URL}/login\n'
            f"  (To name an organization yourself, create it at {settings.WEB_BASE_URL}/register.)"
        )
