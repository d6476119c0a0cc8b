"""The permission every API view uses: an authenticated member, and a key within its scopes.

Each view declares the scope a key needs to read (`read_scope`, for GET, HEAD and OPTIONS)
and to write (`write_scope`); an `@action` may override either. An undeclared scope (None)
means the route is for JWTs and `admin` keys only, so a new view is closed to narrow keys
until it says otherwise. Views below this layer (accounts) declare scopes by value and get
`HasScope` as the default permission class from settings. Routes no key may use at all
add `accounts.permissions.IsUserCredential`. Roles are checked separately, against the key
creator's current role, so a key never exceeds what its creator may do now.
"""

from typing import TYPE_CHECKING

from rest_framework import permissions
from rest_framework.request import Request

from accounts.permissions import IsOrganizationMember
from apikeys.errors import InsufficientScope
from apikeys.models import ApiKey, Scope

if TYPE_CHECKING:
    from rest_framework.views import APIView


def required_scope(method: str | None, view: "APIView") -> str | None:
    """The scope a key needs for this method on this view (None: `admin` only)."""
    attribute = "read_scope" if method in permissions.SAFE_METHODS else "write_scope"
    return getattr(view, attribute, None)


class HasScope(IsOrganizationMember):
    """Authenticated; with an API key, the key also holds the scope the view declares."""

    def has_permission(self, request: Request, view: "APIView") -> bool:
        """Refuse a key without the scope with 403 `insufficient_scope`."""
        if not super().has_permission(request, view):
            return False
        api_key = request.auth
        if isinstance(api_key, ApiKey):
            scope = required_scope(request.method, view)
            if not api_key.allows(scope):
                raise InsufficientScope(
                    f"This API key needs the `{scope or Scope.ADMIN}` scope for this request."
                )
        return True
