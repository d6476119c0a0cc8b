"""`Authorization: Bearer <API key>`, tried before the JWT class on every API request."""

import hmac
from datetime import datetime
from typing import Any

from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from accounts.audit import authentication_failed
from accounts.authentication import (
    INVALID_CREDENTIAL,
    Snapshots,
    copy_row,
    copy_user,
    read_state,
    user_state,
    uuid_hex,
)
from accounts.models import User
from apikeys import keys
from apikeys.models import ApiKey
from apikeys.services import api_key_mark_used


def copy_key(api_key: ApiKey) -> ApiKey:
    """A copy of a key with its own copies of its creator and the creator's organization."""
    duplicate = copy_row(api_key)
    if api_key.created_by is not None:
        duplicate.created_by = copy_user(api_key.created_by)
    return duplicate


def _key_state_sql() -> str:
    key_table, user_table = ApiKey._meta.db_table, User._meta.db_table
    # Everything that decides whether the key works, and as whom (its scopes and expiry
    # never change once it is issued).
    return (
        "SELECT k.id, k.revoked_at IS NULL, k.organization_id, k.created_by_id, "  # noqa: S608
        "u.is_active, u.role, u.organization_id, u.token_version "
        f'FROM "{key_table}" k LEFT JOIN "{user_table}" u ON u.id = k.created_by_id '
        "WHERE k.lookup_id = %s"
    )


KEY_STATE_SQL = _key_state_sql()


def key_state(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """The key's state as `KEY_STATE_SQL` reads it, comparable with `key_state_of`'s."""
    key_id, active, organization_id, creator_id, *creator = row
    ids = (uuid_hex(key_id), bool(active), uuid_hex(organization_id), uuid_hex(creator_id))
    return ids + (user_state(*creator) if creator[0] is not None else ())


def key_state_of(api_key: ApiKey) -> tuple[Any, ...]:
    """The same state, from a key loaded with its creator."""
    creator = api_key.created_by
    row = (api_key.pk, api_key.revoked_at is None, api_key.organization_id, api_key.created_by_id)
    if creator is None:
        return key_state((*row, None, None, None, None))
    return key_state(
        (*row, creator.is_active, creator.role, creator.organization_id, creator.token_version)
    )


# By the digest of the presented key: only a key that matched its stored digest gets in.
api_keys: Snapshots[str, ApiKey] = Snapshots(copy_key)


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
        used = api_key.last_used_at
        api_key_mark_used(api_key=api_key, now=now)
        if api_key.last_used_at != used:  # recorded: the snapshot must not write it again
            api_keys.amend(parsed.digest, lambda kept: setattr(kept, "last_used_at", now))
        assert api_key.created_by is not None  # noqa: S101 - checked by _usable_key
        return api_key.created_by, api_key

    def _usable_key(self, parsed: keys.ParsedKey, now: datetime) -> ApiKey:
        api_key = self._known_key(parsed)
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

    def _known_key(self, parsed: keys.ParsedKey) -> ApiKey | None:
        """The key with its creator: this process's snapshot while the key's and the
        creator's state read now is what it was, else the rows."""
        if api_keys.holds(parsed.digest):
            row = read_state(ApiKey, KEY_STATE_SQL, parsed.lookup_id)
            if row is None:
                return None
            api_key = api_keys.get(parsed.digest, key_state(row))
            if api_key is not None:
                return api_key
        found = ApiKey.objects.select_related("created_by__organization").filter(
            lookup_id=parsed.lookup_id
        )
        api_key = next(iter(found.order_by()[:1]), None)  # the lookup id is unique: no sort
        if api_key is not None and hmac.compare_digest(api_key.digest, parsed.digest):
            # The snapshot's state is taken from the very rows it keeps: no gap between them.
            api_keys.put(parsed.digest, api_key, key_state_of(api_key))
        return api_key

    def authenticate_header(self, request: Request) -> str:
        """The challenge sent with a 401."""
        return 'Bearer realm="api"'
