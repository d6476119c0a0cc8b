"""JWT access tokens and the single-use links mailed for password resets and verification."""

import hashlib
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings
from django.contrib.auth.tokens import default_token_generator
from django.core import signing
from django.core.exceptions import ValidationError
from rest_framework_simplejwt.tokens import AccessToken

from accounts.models import User

TOKEN_VERSION_CLAIM = "ver"  # noqa: S105 - a claim name
_VERIFY_SALT = "healthmon.accounts.verify-email"


@dataclass(frozen=True)
class IssuedToken:
    """A signed JWT and the moment it stops working."""

    token: str
    expires_at: datetime


def issue_access_token(user: User) -> IssuedToken:
    """Sign a JWT for the user that carries its current token version."""
    token = AccessToken.for_user(user)
    token.set_exp(lifetime=settings.JWT_ACCESS_TTL)  # read per call: the setting is the truth
    token[TOKEN_VERSION_CLAIM] = user.token_version
    return IssuedToken(str(token), datetime.fromtimestamp(token["exp"], UTC))


def new_opaque_token() -> tuple[str, str]:
    """A random URL-safe token (256 bits) and the SHA-256 digest to store instead of it."""
    token = secrets.token_urlsafe(32)
    return token, hash_opaque_token(token)


def hash_opaque_token(token: str) -> str:
    """SHA-256 hex digest of a mailed token."""
    return hashlib.sha256(token.encode()).hexdigest()


def make_password_reset_token(user: User) -> str:
    """A reset token bound to the user's current password: it dies once the password changes."""
    return f"{user.pk.hex}-{default_token_generator.make_token(user)}"


def user_for_password_reset_token(token: str) -> User | None:
    """The user a valid, unexpired, unused reset token belongs to, else None.

    The row is locked (in the caller's transaction) before the token is checked, so two
    concurrent uses of one token cannot both see the old password.
    """
    user_hex, _, django_token = token.partition("-")
    if len(user_hex) != 32 or not django_token:
        return None
    try:
        user = User.objects.select_for_update().get(pk=user_hex, is_active=True)
    except (User.DoesNotExist, ValidationError, ValueError):
        return None
    return user if default_token_generator.check_token(user, django_token) else None


def _verification_signer() -> signing.TimestampSigner:
    # "." instead of ":" keeps the token URL-safe, so the link carries it unencoded.
    return signing.TimestampSigner(salt=_VERIFY_SALT, sep=".")


def make_email_verification_token(user: User) -> str:
    """A signed, timestamped token naming the user and the address being verified."""
    return _verification_signer().sign_object({"user": str(user.pk), "email": user.email})


def user_for_email_verification_token(token: str) -> User | None:
    """The user a valid verification token was issued to, if the address is unchanged."""
    max_age = settings.EMAIL_VERIFICATION_TTL
    try:
        payload = _verification_signer().unsign_object(token, max_age=max_age)
        return User.objects.get(pk=payload["user"], email=payload["email"], is_active=True)
    except (signing.BadSignature, User.DoesNotExist, ValidationError, KeyError, TypeError):
        return None
