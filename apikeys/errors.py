"""Error codes and exceptions of the API key layer."""

from enum import StrEnum

from healthmon.errors import DomainError, ErrorCode


class ApiKeyErrorCode(StrEnum):
    """Stable codes clients can branch on."""

    INSUFFICIENT_SCOPE = "insufficient_scope"


class InsufficientScope(DomainError):
    """The API key lacks the scope the route needs."""

    status = 403
    code = ApiKeyErrorCode.INSUFFICIENT_SCOPE
    title = "Insufficient scope"
    default_detail = "This API key lacks the scope this request needs."


class UserCredentialRequired(DomainError):
    """A route that only a person, signed in with a password, may use."""

    status = 403
    code = ErrorCode.PERMISSION_DENIED
    title = "Permission denied"
    default_detail = "API keys cannot do this: sign in with your password and use the JWT."
