"""One log line per HTTP request, and the request id every line of that request carries."""

import re
import time
import uuid
from collections.abc import Callable
from typing import Any

import structlog
from django.core.signals import request_finished
from django.http import HttpRequest, HttpResponse

from healthmon.logging import get_logger
from healthmon.metrics import route_of

REQUEST_ID_HEADER = "X-Request-ID"
# A proxy's id is kept only when it is a plain token: anything else (long, spaced, a control
# character) would let a client write what it likes into every line of its request.
_SANE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")

logger = get_logger("healthmon.request")


def request_id_of(request: HttpRequest) -> str:
    """Return the caller's `X-Request-ID` when it is a sane token, else a fresh one."""
    offered = request.headers.get(REQUEST_ID_HEADER, "")
    if _SANE_ID.fullmatch(offered):
        return offered
    return uuid.uuid4().hex


class RequestLogMiddleware:
    """Bind a request id to every line of a request, return it, and log the request once."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        """Answer the request with its id bound, then write its line."""
        request_id = request_id_of(request)
        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(request_id=request_id)
        started = time.perf_counter()
        response = self.get_response(request)
        response[REQUEST_ID_HEADER] = request_id
        logger.info(
            "request",
            method=request.method,
            route=route_of(request),
            status=response.status_code,
            duration_ms=round((time.perf_counter() - started) * 1000, 1),
        )
        return response


def forget_request(**kwargs: Any) -> None:
    """Unbind the request id once the answer is sent.

    Not at the end of the middleware: Django logs a 4xx or 5xx answer (`django.request`)
    after the middleware chain returns, and that line belongs to the request too.
    """
    structlog.contextvars.clear_contextvars()


request_finished.connect(forget_request, dispatch_uid="healthmon.requestlog.forget_request")
