"""Bearer JWT authentication that also honours the per-user token version."""

import uuid
from typing import Any

from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework_simplejwt import authentication
from rest_framework_simplejwt.exceptions import TokenError
from rest_framework_simplejwt.tokens import Token

from accounts.audit import authentication_failed
from accounts.models import User
from accounts.tokens import TOKEN_VERSION_CLAIM

INVALID_CREDENTIAL = "The credential is invalid or has expired."


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
        user = User.objects.select_related("organization").filter(pk=user_id).first()
        if user is None or not user.is_active or user.token_version != version:
            authentication_failed(method="jwt", reason="user gone, inactive or token revoked")
            raise exceptions.AuthenticationFailed(INVALID_CREDENTIAL)
        return user
