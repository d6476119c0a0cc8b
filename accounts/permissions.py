"""Role permissions: who in an organization may do what, and with which credential."""

from typing import TYPE_CHECKING, cast

from rest_framework import permissions
from rest_framework.request import Request
from rest_framework_simplejwt.tokens import Token

from accounts.errors import ManagerRoleRequired, UserCredentialRequired
from accounts.models import User

if TYPE_CHECKING:  # rest_framework.views imports the permission and throttle settings
    from rest_framework.views import APIView


def caller(request: Request) -> User:
    """The authenticated user of a request that passed `IsOrganizationMember`."""
    return cast(User, request.user)


class IsOrganizationMember(permissions.BasePermission):
    """Any authenticated user of an organization (the default for every API view)."""

    def has_permission(self, request: Request, view: "APIView") -> bool:
        """Authenticated users only."""
        return isinstance(request.user, User)


class IsManager(permissions.BasePermission):
    """Owners and admins only."""

    message = ManagerRoleRequired.default_detail

    def has_permission(self, request: Request, view: "APIView") -> bool:
        """Owner or admin of its organization."""
        return isinstance(request.user, User) and request.user.is_manager


class IsManagerOrReadOnly(IsManager):
    """Everyone reads; owners and admins write."""

    def has_permission(self, request: Request, view: "APIView") -> bool:
        """Safe methods for all users, the rest for owners and admins."""
        if request.method in permissions.SAFE_METHODS:
            return isinstance(request.user, User)
        return super().has_permission(request, view)


class IsUserCredential(permissions.BasePermission):
    """A person's JWT only: no API key, whatever its scopes.

    Checked positively (the credential is a JWT), so that accounts need not know the
    credentials of the layers above it; an unauthenticated request is left to the 401.
    """

    def has_permission(self, request: Request, view: "APIView") -> bool:
        """Refuse any credential other than a JWT with 403."""
        if request.auth is not None and not isinstance(request.auth, Token):
            raise UserCredentialRequired()
        return True
