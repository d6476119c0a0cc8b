"""Error codes and exceptions of the accounts app."""

from enum import StrEnum

from healthmon.errors import DomainError, ErrorCode


class AccountsErrorCode(StrEnum):
    """Stable codes clients can branch on."""

    CANNOT_REMOVE_SELF = "cannot_remove_self"
    LAST_OWNER = "last_owner"
    INVALID_CREDENTIALS = "invalid_credentials"
    EMAIL_NOT_VERIFIED = "email_not_verified"


class CannotRemoveSelf(DomainError):
    """A user tried to remove its own account."""

    code = AccountsErrorCode.CANNOT_REMOVE_SELF
    title = "Cannot remove yourself"
    default_detail = "You cannot remove your own account."


class LastOwner(DomainError):
    """The change would leave the organization without an owner."""

    code = AccountsErrorCode.LAST_OWNER
    title = "Last owner"
    default_detail = "An organization must keep at least one owner."


class InvalidCredentials(DomainError):
    """Wrong email or password; the same answer for both."""

    status = 401
    code = AccountsErrorCode.INVALID_CREDENTIALS
    title = "Invalid credentials"
    default_detail = "The email or password is incorrect."


class EmailNotVerified(DomainError):
    """Login refused until the account's email address is verified."""

    status = 403
    code = AccountsErrorCode.EMAIL_NOT_VERIFIED
    title = "Email not verified"
    default_detail = "Verify your email address with the link we sent, then sign in."


class OwnerRoleRequired(DomainError):
    """Granting, changing or removing the owner role is for owners only."""

    status = 403
    code = ErrorCode.PERMISSION_DENIED
    title = "Permission denied"
    default_detail = "Only an owner can do this."


class ManagerRoleRequired(DomainError):
    """The action is for owners and admins."""

    status = 403
    code = ErrorCode.PERMISSION_DENIED
    title = "Permission denied"
    default_detail = "This action needs the owner or admin role."


class UserCredentialRequired(DomainError):
    """A route that only a person, signed in with a password, may use."""

    status = 403
    code = ErrorCode.PERMISSION_DENIED
    title = "Permission denied"
    default_detail = "API keys cannot do this: sign in with your password and use the JWT."
