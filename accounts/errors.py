"""Error codes and exceptions of the accounts app."""

from enum import StrEnum

from rest_framework import status

from healthmon.errors import ErrorCode, ProblemError


class AccountsErrorCode(StrEnum):
    """Stable codes clients can branch on."""

    CANNOT_REMOVE_SELF = "cannot_remove_self"
    LAST_OWNER = "last_owner"
    INVALID_CREDENTIALS = "invalid_credentials"
    EMAIL_NOT_VERIFIED = "email_not_verified"


class CannotRemoveSelf(ProblemError):
    """A user tried to remove its own account."""

    code = AccountsErrorCode.CANNOT_REMOVE_SELF
    title = "Cannot remove yourself"
    default_detail = "You cannot remove your own account."


class LastOwner(ProblemError):
    """The change would leave the organization without an owner."""

    code = AccountsErrorCode.LAST_OWNER
    title = "Last owner"
    default_detail = "An organization must keep at least one owner."


class InvalidCredentials(ProblemError):
    """Wrong email or password; the same answer for both."""

    status_code = status.HTTP_401_UNAUTHORIZED
    code = AccountsErrorCode.INVALID_CREDENTIALS
    title = "Invalid credentials"
    default_detail = "The email or password is incorrect."


class EmailNotVerified(ProblemError):
    """Login refused until the account's email address is verified."""

    status_code = status.HTTP_403_FORBIDDEN
    code = AccountsErrorCode.EMAIL_NOT_VERIFIED
    title = "Email not verified"
    default_detail = "Verify your email address with the link we sent, then sign in."


class OwnerRoleRequired(ProblemError):
    """Granting, changing or removing the owner role is for owners only."""

    status_code = status.HTTP_403_FORBIDDEN
    code = ErrorCode.PERMISSION_DENIED
    title = "Permission denied"
    default_detail = "Only an owner can do this."
