"""Error codes and exceptions of the API key layer."""

from enum import StrEnum

from healthmon.errors import DomainError


class ApiKeyErrorCode(StrEnum):
    """Stable codes clients can branch on."""

    INSUFFICIENT_SCOPE = "insufficient_scope"


class InsufficientScope(DomainError):
    """The API key lacks the scope the route needs."""

    status = 403
    code = ApiKeyErrorCode.INSUFFICIENT_SCOPE
    title = "Insufficient scope"
    default_detail = "This API key lacks the scope this request needs."
