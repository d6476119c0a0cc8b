"""The one exception handler of the API: every error as RFC 9457 problem+json.

It maps the domain's exceptions (`healthmon.errors.DomainError` and the apps' own) to
problem documents, and wraps DRF's handler for DRF's own errors, so the headers DRF adds
(`WWW-Authenticate` on 401, `Retry-After` on 429) survive. Also the JSON parsers with the
body limits, and the renderer that answers `Accept: application/problem+json`.
"""

import json
import logging
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation, TooManyFieldsSent
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from rest_framework import exceptions, parsers, renderers, status
from rest_framework.response import Response
from rest_framework.serializers import as_serializer_error

from healthmon.dbrouting import replica_in_use
from healthmon.errors import (
    DATABASE_UNAVAILABLE,
    NON_FIELD,
    PROBLEM_CONTENT_TYPE,
    RETRY_AFTER_SECONDS,
    TITLES,
    UNAVAILABLE_DETAIL,
    DomainError,
    ErrorCode,
    FieldErrors,
    InvalidInput,
    PayloadTooLarge,
    TooManyRequests,
    first_message,
    flatten_errors,
    problem,
)

logger = logging.getLogger(__name__)

# Checked in order: the first class that matches the exception names its code.
_CODES_BY_EXCEPTION: list[tuple[type[Exception], str]] = [
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


def field_errors(exc: InvalidInput) -> exceptions.ValidationError:
    """A domain validation error as a serializer field's (DRF nests it under the field)."""
    return exceptions.ValidationError(exc.errors)


def _validation_problem(errors: FieldErrors) -> dict[str, Any]:
    body = problem(400, ErrorCode.VALIDATION_ERROR, first_message(errors) or "Invalid input.")
    body["errors"] = errors
    return body


def _domain_response(exc: DomainError) -> Response:
    headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, TooManyRequests) else None
    response = Response(status=exc.status, headers=headers)
    if isinstance(exc, InvalidInput):
        response.data = _validation_problem(exc.errors)
    else:
        response.data = problem(exc.status, exc.code, exc.detail, exc.title)
    return response


def _as_drf(exc: Exception) -> Exception:
    """Django's own refusals raised inside a view, as the DRF errors they amount to."""
    if isinstance(exc, DjangoValidationError):
        return exceptions.ValidationError(as_serializer_error(exc))
    if isinstance(exc, TooManyFieldsSent):  # read inside the view: Django's 400 comes too late
        return exceptions.ParseError(
            f"At most {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS} parameters."
        )
    if isinstance(exc, SuspiciousOperation):
        return exceptions.ParseError("The request is malformed.")
    return exc


def problem_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Render any exception raised in an API view as problem+json."""
    # Imported here: rest_framework.views loads the renderer and parser settings of this module.
    from rest_framework.views import exception_handler as drf_exception_handler

    if isinstance(exc, DATABASE_UNAVAILABLE) and replica_in_use():
        return None  # DRF re-raises it: healthmon.dbrouting answers from the primary instead
    if isinstance(exc, RequestDataTooBig):
        exc = PayloadTooLarge()
    if isinstance(exc, DomainError):
        return _finish(_domain_response(exc))
    exc = _as_drf(exc)
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
    elif isinstance(exc, exceptions.ValidationError):
        body = _validation_problem(flatten_errors(_as_mapping(response.data)))
    elif isinstance(exc, exceptions.ParseError | exceptions.UnsupportedMediaType):
        body = _validation_problem({NON_FIELD: [str(exc.detail)]})
    else:
        body = _other_problem(exc, response.status_code)
    response.data = body
    return _finish(response)


def _as_mapping(errors: Any) -> dict[str, Any]:
    if isinstance(errors, dict):
        return errors
    return {NON_FIELD: errors if isinstance(errors, list) else [errors]}


def _other_problem(exc: Exception, status_code: int) -> dict[str, Any]:
    code = next(
        (code for exc_class, code in _CODES_BY_EXCEPTION if isinstance(exc, exc_class)),
        ErrorCode.SERVER_ERROR if status_code >= 500 else ErrorCode.VALIDATION_ERROR,
    )
    detail = getattr(exc, "detail", None)
    if isinstance(exc, Http404):
        detail = "No such resource."
    elif not isinstance(detail, str):
        detail = TITLES.get(code, "Error")
    return problem(status_code, code, str(detail))


def _finish(response: Response) -> Response:
    response.content_type = PROBLEM_CONTENT_TYPE
    if response.status_code == status.HTTP_401_UNAUTHORIZED and not response.has_header(
        "WWW-Authenticate"
    ):
        response["WWW-Authenticate"] = 'Bearer realm="api"'
    return response


class ProblemJSONRenderer(renderers.JSONRenderer):
    """Lets clients that ask only for `application/problem+json` negotiate successfully."""

    media_type = PROBLEM_CONTENT_TYPE


class PlainTextRenderer(renderers.JSONRenderer):
    """Lets clients that ask for `text/plain` reach a view that answers text itself (a
    plain `HttpResponse`, which is never rendered). All it renders are that view's errors:
    as problem+json, whatever was asked, like every other error of the API."""

    media_type = "text/plain"


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
