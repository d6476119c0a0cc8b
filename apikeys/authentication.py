"""`Authorization: Bearer <API key>`, tried before the JWT class on every API request."""

import hmac
from datetime import datetime

from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from accounts.audit import authentication_failed
from accounts.authentication import INVALID_CREDENTIAL
from accounts.models import User
from apikeys import keys
from apikeys.models import ApiKey
from apikeys.services import api_key_mark_used


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """Authenticate a key as its creator, with the key as `request.auth`.

    A malformed, unknown, expired or revoked key, or one whose creator is gone or inactive,
    answers the same 401 as a bad JWT. A credential that is not shaped like a key is left to
    the JWT class.
    """

    def authenticate(self, request: Request) -> tuple[User, ApiKey] | None:
        """Return (creator, key), None for a non-key credential, or raise a 401."""
        parts = authentication.get_authorization_header(request).split()
        if len(parts) != 2 or parts[0].lower() != b"bearer":
            return None
        credential = parts[1].decode("latin-1")
        if not keys.looks_like_key(credential):
            return None
        parsed = keys.parse(credential)
        if parsed is None:  # malformed or a bad checksum: no database query
            authentication_failed(method="api_key", reason="malformed key")
            raise exceptions.AuthenticationFailed(INVALID_CREDENTIAL)
        now = timezone.now()
        api_key = self._usable_key(parsed, now)
        api_key_mark_used(api_key=api_key, now=now)
        assert api_key.created_by is not None  # noqa: S101 - checked by _usable_key
        return api_key.created_by, api_key

    def _usable_key(self, parsed: keys.ParsedKey, now: datetime) -> ApiKey:
        found = (
            ApiKey.objects.select_related("created_by__organization")
            .filter(lookup_id=parsed.lookup_id)
            .order_by()[:1]  # the lookup id is unique: no sort
        )
        api_key = next(iter(found), None)
        if (
            api_key is None
            or not hmac.compare_digest(api_key.digest, parsed.digest)
            or not api_key.is_usable(now)
            or api_key.created_by is None
            or not api_key.created_by.is_active
            or api_key.created_by.organization_id != api_key.organization_id
        ):
            # The display prefix (`hm_live_<lookup id>`) is shown in the API: not a secret.
            authentication_failed(
                method="api_key", reason="unknown or unusable key", key_prefix=parsed.display_prefix
            )
            raise exceptions.AuthenticationFailed(INVALID_CREDENTIAL)
        return api_key

    def authenticate_header(self, request: Request) -> str:
        """The challenge sent with a 401."""
        return 'Bearer realm="api"'
