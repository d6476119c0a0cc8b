"""RFC 9457 problem details for every API error, with a stable machine-readable `code`.

One exception handler wraps DRF's, so the headers DRF adds (`WWW-Authenticate` on 401,
`Retry-After` on 429) survive, and then replaces the body with a problem document.
"""

import json
import logging
import sys
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation, TooManyFieldsSent
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.template import loader
from django.views import defaults
from rest_framework import exceptions, parsers, renderers, status
from rest_framework.response import Response
from rest_framework.serializers import as_serializer_error

logger = logging.getLogger(__name__)

PROBLEM_CONTENT_TYPE = "application/problem+json"
TYPE_BASE = "https://healthmon.dev/errors/"


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

# The database is down, out of reach or timed out (settings: DATABASE_CONNECT_TIMEOUT and
# DATABASE_TCP_TIMEOUT bound the wait): a 503 the client may retry, not a 500.
DATABASE_UNAVAILABLE = (OperationalError, InterfaceError)
RETRY_AFTER_SECONDS = 5
UNAVAILABLE_DETAIL = "The service is briefly unavailable; try again in a few seconds."

# Checked in order: the first class that matches the exception names its code.
_CODES_BY_EXCEPTION: list[tuple[type[Exception], str]] = [
    (exceptions.ValidationError, ErrorCode.VALIDATION_ERROR),
    (exceptions.ParseError, ErrorCode.VALIDATION_ERROR),
    (exceptions.UnsupportedMediaType, ErrorCode.VALIDATION_ERROR),
    (exceptions.NotAuthenticated, ErrorCode.NOT_AUTHENTICATED),
    (exceptions.AuthenticationFailed, ErrorCode.INVALID_TOKEN),
    (exceptions.PermissionDenied, ErrorCode.PERMISSION_DENIED),
    (DjangoPermissionDenied, ErrorCode.PERMISSION_DENIED),
    (exceptions.NotFound, ErrorCode.NOT_FOUND),
    (Http404, ErrorCode.NOT_FOUND),
    (exceptions.MethodNotAllowed, ErrorCode.METHOD_NOT_ALLOWED),
    (exceptions.NotAcceptable, ErrorCode.NOT_ACCEPTABLE),
    (exceptions.Throttled, ErrorCode.THROTTLED),
]


class ProblemError(exceptions.APIException):
    """An API error with its own stable code; subclass it per error an app can raise."""

    status_code: int = status.HTTP_400_BAD_REQUEST
    code: str = ErrorCode.VALIDATION_ERROR
    title = "Bad request"
    default_detail = "The request cannot be processed."

    def __init__(self, detail: str | None = None) -> None:
        super().__init__(detail=detail or self.default_detail, code=self.code)


class Conflict(ProblemError):
    """The request conflicts with existing state, such as a duplicate email."""

    status_code = status.HTTP_409_CONFLICT
    code = ErrorCode.CONFLICT
    title = "Conflict"
    default_detail = "The resource already exists."


class PayloadTooLarge(ProblemError):
    """The request body is larger than the server accepts."""

    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    code = ErrorCode.PAYLOAD_TOO_LARGE
    title = "Payload too large"
    default_detail = "The request body is too large."


def problem(status_code: int, code: str, detail: str, title: str | None = None) -> dict[str, Any]:
    """Build a problem details document."""
    return {
        "type": TYPE_BASE + code.replace("_", "-"),
        "title": title or TITLES.get(code, "Error"),
        "status": status_code,
        "code": code,
        "detail": detail,
    }


def _code_for(exc: Exception, status_code: int) -> str:
    if isinstance(exc, ProblemError):
        return exc.code
    for exc_class, code in _CODES_BY_EXCEPTION:
        if isinstance(exc, exc_class):
            return code
    return ErrorCode.SERVER_ERROR if status_code >= 500 else ErrorCode.VALIDATION_ERROR


def _first_message(errors: Any, path: str = "") -> str:
    """The first message of a (possibly nested) DRF error structure, prefixed by its field."""
    if isinstance(errors, dict):
        for key, value in errors.items():
            name = "" if key == "non_field_errors" else str(key)
            return _first_message(value, f"{path}.{name}" if path and name else path or name)
    if isinstance(errors, list) and errors:
        return _first_message(errors[0], path)
    return f"{path}: {errors}" if path else str(errors)


def _flatten(errors: Any, path: str = "") -> dict[str, list[str]]:
    """Nested DRF errors as `{"field.sub.0": [messages]}`, the shape the schema promises."""
    if isinstance(errors, dict):
        flat: dict[str, list[str]] = {}
        for key, value in errors.items():
            name = str(key)
            if path:
                name = path if name == "non_field_errors" else f"{path}.{name}"
            for field, messages in _flatten(value, name).items():
                flat.setdefault(field, []).extend(messages)
        return flat
    if isinstance(errors, list) and any(isinstance(item, dict | list) for item in errors):
        flat = {}
        for item in errors:
            for field, messages in _flatten(item, path).items():
                flat.setdefault(field, []).extend(messages)
        return flat
    messages = errors if isinstance(errors, list) else [errors]
    return {path or "non_field_errors": [str(message) for message in messages]}


def _validation_problem(errors: Any) -> dict[str, Any]:
    if not isinstance(errors, dict):
        errors = {"non_field_errors": errors if isinstance(errors, list) else [errors]}
    body = problem(400, ErrorCode.VALIDATION_ERROR, _first_message(errors) or "Invalid input.")
    body["errors"] = _flatten(errors)
    return body


def problem_exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    """Render any exception raised in an API view as problem+json."""
    # Imported here: rest_framework.views loads the renderer and parser settings of this module.
    from rest_framework.views import exception_handler as drf_exception_handler

    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(as_serializer_error(exc))
    elif isinstance(exc, RequestDataTooBig):
        exc = PayloadTooLarge()
    elif isinstance(exc, TooManyFieldsSent):  # read inside the view: Django's 400 comes too late
        exc = exceptions.ParseError(f"At most {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS} parameters.")
    elif isinstance(exc, SuspiciousOperation):
        exc = exceptions.ParseError("The request is malformed.")
    response = drf_exception_handler(exc, context)
    if response is None and isinstance(exc, DATABASE_UNAVAILABLE):
        logger.warning("Database unavailable: %s", exc)
        response = Response(status=503, headers={"Retry-After": str(RETRY_AFTER_SECONDS)})
        body = problem(503, ErrorCode.SERVICE_UNAVAILABLE, UNAVAILABLE_DETAIL)
    elif response is None:
        view = context.get("view")
        logger.error("Unhandled error in %s", type(view).__name__, exc_info=exc)
        response = Response(status=status.HTTP_500_INTERNAL_SERVER_ERROR)
        body = problem(500, ErrorCode.SERVER_ERROR, "An unexpected error occurred.")
    elif isinstance(exc, exceptions.ValidationError | exceptions.ParseError):
        errors = response.data if isinstance(exc, exceptions.ValidationError) else None
        body = _validation_problem(errors if errors is not None else [str(exc.detail)])
    else:
        code = _code_for(exc, response.status_code)
        detail = getattr(exc, "detail", None)
        if isinstance(exc, Http404):
            detail = "No such resource."
        elif not isinstance(detail, str):
            detail = TITLES.get(code, "Error")
        title = exc.title if isinstance(exc, ProblemError) else None
        body = problem(response.status_code, code, str(detail), title)
    response.data = body
    response.content_type = PROBLEM_CONTENT_TYPE
    if response.status_code == status.HTTP_401_UNAUTHORIZED and not response.has_header(
        "WWW-Authenticate"
    ):
        response["WWW-Authenticate"] = 'Bearer realm="api"'
    return response


class ProblemJSONRenderer(renderers.JSONRenderer):
    """Lets clients that ask only for `application/problem+json` negotiate successfully."""

    media_type = PROBLEM_CONTENT_TYPE


# No request of this API nests deeper than 4 levels. Code that walks a body (DRF's error
# details, restoring masked secrets) recurses, so the few hundred the parser allows crash it.
MAX_JSON_DEPTH = 32
NESTED_TOO_DEEPLY = f"JSON nested too deeply (at most {MAX_JSON_DEPTH} levels)."


def _too_deep(data: Any) -> bool:
    """Whether an array or object lies deeper than MAX_JSON_DEPTH (the top level is 1)."""
    level = [data]
    for _ in range(MAX_JSON_DEPTH):
        level = [
            child
            for node in level
            if isinstance(node, dict | list)
            for child in (node.values() if isinstance(node, dict) else node)
        ]
    return any(isinstance(node, dict | list) for node in level)


class AnyBodyAsJSONParser(parsers.JSONParser):
    """Parses bodies of any declared type as JSON, so non-JSON input is a 400, not a 415.

    Also caps the body size (DRF reads the stream directly, bypassing Django's
    DATA_UPLOAD_MAX_MEMORY_SIZE) and turns deep nesting and lone surrogates into parse errors.
    """

    media_type = "*/*"

    def parse(
        self,
        stream: Any,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        """Parse the body as JSON within the size limit."""
        request = (parser_context or {}).get("request")
        length = request.META.get("CONTENT_LENGTH") if request is not None else None
        if length and length.isdigit() and int(length) > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
            raise PayloadTooLarge()
        try:
            data = super().parse(stream, "application/json", parser_context)
        except RecursionError as exc:
            raise exceptions.ParseError(NESTED_TOO_DEEPLY) from exc
        except exceptions.ParseError as exc:
            raise exceptions.ParseError("Request body must be valid JSON.") from exc
        if _too_deep(data):
            raise exceptions.ParseError(NESTED_TOO_DEEPLY)
        try:  # a lone surrogate (`"\ud800"`) parses, but can be neither stored nor echoed back
            json.dumps(data, ensure_ascii=False).encode()
        except UnicodeEncodeError as exc:
            raise exceptions.ParseError(
                "Strings must be valid Unicode (no lone surrogates)."
            ) from exc
        return data


class JSONParser(AnyBodyAsJSONParser):
    """The declared parser for `application/json`, with the same limits."""

    media_type = "application/json"


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
