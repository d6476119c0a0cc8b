"""The domain's refusals, as plain exceptions with a stable machine-readable `code`.

Services, selectors, validation, models and probes raise these; they know nothing of HTTP
frameworks. One exception handler (`healthmon.api.errors`) renders them as RFC 9457
problem details, and the pages (`healthmon.pages`) show them beside their form fields. The
page-level handlers of Django (404, 400, 500 outside any view) live here too: they need no DRF.
"""

import logging
import sys
from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template import loader
from django.views import defaults

logger = logging.getLogger(__name__)

PROBLEM_CONTENT_TYPE = "application/problem+json"
TYPE_BASE = "https://healthmon.dev/errors/"
NON_FIELD = "non_field_errors"


class ErrorCode(StrEnum):
    """Codes shared by every app; apps add their own in their `errors.py`."""

    VALIDATION_ERROR = "validation_error"
    NOT_AUTHENTICATED = "not_authenticated"
    INVALID_TOKEN = "invalid_token"  # noqa: S105 - an error code, not a secret
    PERMISSION_DENIED = "permission_denied"
    NOT_FOUND = "not_found"
    CONFLICT = "conflict"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    NOT_ACCEPTABLE = "not_acceptable"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    THROTTLED = "throttled"
    SERVER_ERROR = "server_error"
    SERVICE_UNAVAILABLE = "service_unavailable"


TITLES: dict[str, str] = {
    ErrorCode.VALIDATION_ERROR: "Invalid input",
    ErrorCode.NOT_AUTHENTICATED: "Authentication required",
    ErrorCode.INVALID_TOKEN: "Invalid credential",
    ErrorCode.PERMISSION_DENIED: "Permission denied",
    ErrorCode.NOT_FOUND: "Not found",
    ErrorCode.CONFLICT: "Conflict",
    ErrorCode.METHOD_NOT_ALLOWED: "Method not allowed",
    ErrorCode.NOT_ACCEPTABLE: "Not acceptable",
    ErrorCode.PAYLOAD_TOO_LARGE: "Payload too large",
    ErrorCode.THROTTLED: "Too many requests",
    ErrorCode.SERVER_ERROR: "Server error",
    ErrorCode.SERVICE_UNAVAILABLE: "Service unavailable",
}


class DomainError(Exception):
    """A refusal of the domain; subclass it per error an app can raise.

    `status` is the HTTP status the API answers with (and a page, while its form shows
    the error); `code` the stable code clients branch on.
    """

    status: int = 400
    code: str = ErrorCode.VALIDATION_ERROR
    title: str = "Bad request"
    default_detail: str = "The request cannot be processed."

    def __init__(self, detail: str | None = None) -> None:
        self.detail = detail or self.default_detail
        super().__init__(self.detail)


FieldErrors = dict[str, list[str]]


class InvalidInput(DomainError):
    """Input that breaks a rule, naming every bad field at once.

    `errors` maps a field to its messages; a nested field is dotted (`config.method`,
    `headers.0`) and errors about the input as a whole are under `non_field_errors`.
    """

    title = "Invalid input"
    default_detail = "Invalid input."

    def __init__(self, errors: Mapping[str, Sequence[str] | str] | str) -> None:
        if isinstance(errors, str):
            errors = {NON_FIELD: [errors]}
        self.errors: FieldErrors = {
            field: [messages] if isinstance(messages, str) else [str(m) for m in messages]
            for field, messages in errors.items()
        }
        super().__init__(first_message(self.errors) or self.default_detail)

    def nested(self, field: str) -> "InvalidInput":
        """The same errors under `field` (a config's errors as the endpoint's `config.*`;
        a list element's `[2].part` as `field[2].part`)."""
        return InvalidInput(
            {_joined(field, name): messages for name, messages in self.errors.items()}
        )


def _joined(field: str, name: str) -> str:
    """A nested field's name: a list's index as `field[2]`, anything else as `field.name`."""
    if name == NON_FIELD:
        return field
    return f"{field}{name}" if name.startswith("[") else f"{field}.{name}"


def first_message(errors: Mapping[str, Sequence[str]]) -> str:
    """The first message, prefixed by its field (none for `non_field_errors`)."""
    for field, messages in errors.items():
        if messages:
            return messages[0] if field == NON_FIELD else f"{field}: {messages[0]}"
    return ""


def flatten_errors(errors: Any, path: str = "") -> FieldErrors:
    """Nested error messages (a serializer's, a form's) as `{"field.sub": [messages]}`."""
    if isinstance(errors, Mapping):
        flat: FieldErrors = {}
        for key, value in errors.items():
            name = str(key)
            if path:
                name = path if name == NON_FIELD else f"{path}.{name}"
            for field, messages in flatten_errors(value, name).items():
                flat.setdefault(field, []).extend(messages)
        return flat
    if isinstance(errors, list | tuple) and any(isinstance(i, Mapping | list) for i in errors):
        flat = {}
        for item in errors:
            for field, messages in flatten_errors(item, path).items():
                flat.setdefault(field, []).extend(messages)
        return flat
    items = errors if isinstance(errors, list | tuple) else [errors]
    return {path or NON_FIELD: [str(message) for message in items]}


class Conflict(DomainError):
    """The request conflicts with existing state, such as a duplicate email."""

    status = 409
    code = ErrorCode.CONFLICT
    title = "Conflict"
    default_detail = "The resource already exists."


class PayloadTooLarge(DomainError):
    """The request body is larger than the server accepts."""

    status = 413
    code = ErrorCode.PAYLOAD_TOO_LARGE
    title = "Payload too large"
    default_detail = "The request body is too large."


class TooManyRequests(DomainError):
    """The same thing again too soon; `retry_after` says in how many seconds."""

    status = 429
    code = ErrorCode.THROTTLED
    title = "Too many requests"
    default_detail = "Request was throttled."

    def __init__(self, retry_after: int, detail: str | None = None) -> None:
        self.retry_after = retry_after
        wait = f"Expected available in {retry_after} second{'s' if retry_after != 1 else ''}."
        super().__init__(detail or f"{self.default_detail} {wait}")


def problem(status_code: int, code: str, detail: str, title: str | None = None) -> dict[str, Any]:
    """Build a problem details document."""
    return {
        "type": TYPE_BASE + code.replace("_", "-"),
        "title": title or TITLES.get(code, "Error"),
        "status": status_code,
        "code": code,
        "detail": detail,
    }


# The database is down, out of reach or timed out (settings: DATABASE_CONNECT_TIMEOUT and
# DATABASE_TCP_TIMEOUT bound the wait): a 503 the client may retry, not a 500.
DATABASE_UNAVAILABLE = (OperationalError, InterfaceError)
RETRY_AFTER_SECONDS = 5
UNAVAILABLE_DETAIL = "The service is briefly unavailable; try again in a few seconds."


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def _problem_response(status_code: int, code: str, detail: str) -> HttpResponse:
    return JsonResponse(
        problem(status_code, code, detail), status=status_code, content_type=PROBLEM_CONTENT_TYPE
    )


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """404 outside any view: problem+json under /api/, the HTML page elsewhere."""
    if _is_api(request):
        return _problem_response(404, ErrorCode.NOT_FOUND, "No such resource.")
    return defaults.page_not_found(request, exception)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """400 outside any view (for example a disallowed Host header)."""
    if _is_api(request):
        return _problem_response(400, ErrorCode.VALIDATION_ERROR, "Bad request.")
    return defaults.bad_request(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    """500 outside any view, without a stack trace; 503 when the database is unavailable."""
    if isinstance(sys.exc_info()[1], DATABASE_UNAVAILABLE):  # Django calls this while handling
        return _unavailable(request)
    if _is_api(request):
        return _problem_response(500, ErrorCode.SERVER_ERROR, "An unexpected error occurred.")
    return defaults.server_error(request)


def _unavailable(request: HttpRequest) -> HttpResponse:
    if _is_api(request):
        response = _problem_response(503, ErrorCode.SERVICE_UNAVAILABLE, UNAVAILABLE_DETAIL)
    else:  # a page that needs neither the database nor a session
        response = HttpResponse(loader.render_to_string("503.html"), status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response
