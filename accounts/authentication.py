"""Bearer JWT authentication that also honours the per-user token version, and the
process-local snapshots of the users (and API keys) that authenticated requests act as."""

import time
import uuid
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

from django.db import connections, router
from django.db.models import Model
from django.db.models.base import ModelState
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework_simplejwt import authentication
from rest_framework_simplejwt.exceptions import TokenError
from rest_framework_simplejwt.tokens import Token

from accounts.audit import authentication_failed
from accounts.models import User
from accounts.tokens import TOKEN_VERSION_CLAIM
from healthmon.db import fetch_prepared

INVALID_CREDENTIAL = "The credential is invalid or has expired."

# How long a process trusts its copy of a credential's rows for what is not re-read on each
# request (names, the organization's name). What decides access (active, role, organization,
# token version; a key's revocation and expiry) is read on every request: a change to it
# applies from the next request on, in every process.
SNAPSHOT_SECONDS = 30.0
SNAPSHOT_LIMIT = 10_000  # distinct credentials a process keeps; past it, it starts over

K = TypeVar("K", bound=Hashable)
M = TypeVar("M", bound=Model)


class Snapshots(Generic[K, M]):
    """Copies of authenticated rows, each trusted while its freshly read state is unchanged.

    Loading a user (or a key with its creator) through the ORM costs ~0.9 ms of CPU per
    request, most of it compiling the query; the state that decides access is one row read
    with a fixed statement (~0.1 ms). A copy is handed out per request, so that a view that
    changes its user never changes the snapshot.
    """

    def __init__(self, copy_of: Callable[[M], M]) -> None:
        self._entries: dict[K, tuple[M, tuple[Any, ...], float]] = {}
        self._copy_of = copy_of

    def get(self, key: K, state: tuple[Any, ...]) -> M | None:
        """A copy of the snapshot taken under this very state, if young enough."""
        entry = self._entries.get(key)
        if entry is None or entry[1] != state or time.time() - entry[2] > SNAPSHOT_SECONDS:
            return None
        return self._copy_of(entry[0])

    def put(self, key: K, row: M, state: tuple[Any, ...]) -> None:
        """Keep a copy of `row`, read after `state` was (so a change between the two
        reads shows as a different state next time, never as a stale snapshot)."""
        if len(self._entries) >= SNAPSHOT_LIMIT:
            self._entries.clear()
        self._entries[key] = (self._copy_of(row), state, time.time())

    def holds(self, key: K) -> bool:
        """Whether a snapshot is kept under `key` (to be checked against its state)."""
        return key in self._entries

    def amend(self, key: K, change: Callable[[M], None]) -> None:
        """Apply `change` to the snapshot too (what a request noted on its copy)."""
        entry = self._entries.get(key)
        if entry is not None:
            change(entry[0])

    def clear(self) -> None:
        """Forget every snapshot."""
        self._entries.clear()


def read_state(model: type[Model], sql: str, value: str | uuid.UUID) -> tuple[Any, ...] | None:
    """One row of a fixed statement about `model` with one parameter (a str, or a UUID
    given as the database stores it), prepared once per connection: planning it cost the
    server three times what running it did, on every API request."""
    alias = router.db_for_read(model)
    param: Any = value
    if isinstance(value, uuid.UUID):
        param = model._meta.pk.get_db_prep_value(value, connections[alias])
    # Its uuids read as text: `uuid_hex` compares them without making `UUID`s.
    rows = fetch_prepared(alias, sql, [param], uuid_text=True)
    return tuple(rows[0]) if rows else None


def copy_row(row: M) -> M:
    """A copy of a loaded row without its cached relations (a third of `copy.copy`'s cost)."""
    twin = row.__class__.__new__(row.__class__)
    twin.__dict__.update(row.__dict__)
    twin._state = ModelState()
    twin._state.db, twin._state.adding = row._state.db, False
    return twin


def copy_user(user: User) -> User:
    """A copy of a user with its own copy of its organization."""
    duplicate = copy_row(user)
    duplicate.organization = copy_row(user.organization)
    return duplicate


def uuid_hex(value: object) -> str | None:
    """A UUID as the ORM (a `UUID`), PostgreSQL (its text form, as `read_state` reads it)
    or SQLite (32 hex digits) returns it, made comparable: 32 lowercase hex digits."""
    if value is None:
        return None
    if isinstance(value, uuid.UUID):
        return value.hex
    return str(value).replace("-", "").lower()


def user_state(
    is_active: object, role: object, organization_id: object, version: object
) -> tuple[Any, ...]:
    """What decides a user's access, comparable whether read raw or through the ORM."""
    return (bool(is_active), role, uuid_hex(organization_id), version)


def _user_state_sql() -> str:
    table = User._meta.db_table
    return (
        "SELECT is_active, role, organization_id, token_version "  # noqa: S608 - model names
        f'FROM "{table}" WHERE id = %s'
    )


USER_STATE_SQL = _user_state_sql()
users: Snapshots[uuid.UUID, User] = Snapshots(copy_user)


def user_for_token(user_id: uuid.UUID) -> User | None:
    """The user with its organization: this process's snapshot while the user's active
    flag, role, organization and token version read now are as they were, else the rows."""
    if users.holds(user_id):
        row = read_state(User, USER_STATE_SQL, user_id)
        if row is None:
            return None
        user = users.get(user_id, user_state(*row))
        if user is not None:
            return user
    # The snapshot's state is taken from the very rows it keeps: no gap between them.
    loaded = User.objects.select_related("organization").filter(pk=user_id).first()
    if loaded is not None:
        state = user_state(
            loaded.is_active, loaded.role, loaded.organization_id, loaded.token_version
        )
        users.put(user_id, loaded, state)
    return loaded


class JWTAuthentication(authentication.JWTAuthentication):
    """`Authorization: Bearer <JWT>`; every failure answers the same 401.

    The user is read from the database on every request, so a role change applies at once
    and a removed user, or a token issued before a password change, is refused.
    """

    www_authenticate_realm = "api"

    def authenticate(self, request: Request) -> tuple[User, Token] | None:  # type: ignore[override]
        """Return (user, token), None when no bearer credential is sent, or raise a 401."""
        header = self.get_header(request)
        if header is None:
            return None
        raw_token = self.get_raw_token(header)
        if raw_token is None:
            return None
        try:
            validated = self.get_validated_token(raw_token)
        except (TokenError, exceptions.AuthenticationFailed) as exc:
            authentication_failed(method="jwt", reason="invalid token")
            raise exceptions.AuthenticationFailed(INVALID_CREDENTIAL) from exc
        return self.get_user(validated), validated

    def get_raw_token(self, header: bytes) -> bytes | None:
        """The token part of the header; a malformed header is an invalid credential.

        The scheme is case-insensitive (RFC 9110 §11.1), as for API keys: `bearer` works too.
        """
        parts = header.split()
        if parts and parts[0].lower() == b"bearer":
            header = b" ".join([b"Bearer", *parts[1:]])
        try:
            return super().get_raw_token(header)
        except exceptions.AuthenticationFailed as exc:
            authentication_failed(method="jwt", reason="malformed header")
            raise exceptions.AuthenticationFailed(INVALID_CREDENTIAL) from exc

    def get_user(self, validated_token: Token) -> User:  # type: ignore[override]
        """The active user the token names, if the token's version is still current."""
        try:
            user_id = uuid.UUID(str(validated_token["user_id"]))
            version: Any = validated_token[TOKEN_VERSION_CLAIM]
        except (KeyError, ValueError) as exc:
            authentication_failed(method="jwt", reason="malformed claims")
            raise exceptions.AuthenticationFailed(INVALID_CREDENTIAL) from exc
        user = user_for_token(user_id)
        if user is None or not user.is_active or user.token_version != version:
            authentication_failed(method="jwt", reason="user gone, inactive or token revoked")
            raise exceptions.AuthenticationFailed(INVALID_CREDENTIAL)
        return user
