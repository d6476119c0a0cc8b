"""The audit log: who did what, in which organization, when, from which address.

Services record events (so the API, the pages and the admin all do), with
`audit_record`. Where the request is needed (the client IP, how the actor signed in),
`AuditContextMiddleware` has put it in a context variable for the length of the request;
outside a request (tasks, commands) those fields stay empty.
"""

import contextvars
from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable
from uuid import UUID

from django.conf import settings
from django.db import models
from django.http import HttpRequest, HttpResponse

from accounts.models import AuditEvent, User
from healthmon.logging import get_logger

auth_logger = get_logger("healthmon.auth")

_request: contextvars.ContextVar[HttpRequest | None] = contextvars.ContextVar(
    "audit_request", default=None
)


class AuditContextMiddleware:
    """Make the current request known to `audit_record` while it is handled."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        """Handle the request with it set as the current one."""
        token = _request.set(request)
        try:
            return self.get_response(request)
        finally:
            _request.reset(token)


@runtime_checkable
class AuditedCredential(Protocol):
    """A credential that names itself in the log (an API key: `api_key:<prefix>`).

    Credentials of the layers above accounts describe themselves, so this module needs
    to know none of them.
    """

    @property
    def audit_via(self) -> str:
        """How the log shows a request authenticated with this credential."""
        ...


def _ident(request: HttpRequest) -> str:
    """The client address as the throttles key it: the REMOTE_ADDR, or the entry of
    X-Forwarded-For that the outermost of NUM_PROXIES trusted proxies appended."""
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR")
    remote = str(request.META.get("REMOTE_ADDR") or "")
    # The trusted proxy count is the API's setting: throttles and the log read one value.
    proxies = settings.REST_FRAMEWORK.get("NUM_PROXIES")
    if proxies is None:  # no count configured: the whole chain, as one identity
        return "".join(forwarded.split()) if forwarded else remote
    if proxies == 0 or forwarded is None:
        return remote
    hops = forwarded.split(",")
    return hops[-min(proxies, len(hops))].strip()


def client_ip(request: HttpRequest | None = None) -> str | None:
    """The client address of a request (the current one by default), through NUM_PROXIES
    trusted proxies exactly as the throttles see it."""
    request = request or _request.get()
    if request is None:
        return None
    return _ident(request) or None


def _via(request: HttpRequest) -> str:
    """How the request was authenticated: `api_key:<prefix>`, `jwt` or `session`."""
    auth = getattr(request, "auth", None)
    if isinstance(auth, AuditedCredential):
        return auth.audit_via
    if auth is not None:
        return "jwt"
    return "session" if isinstance(getattr(request, "user", None), User) else ""


def _target(target: models.Model | None) -> dict[str, str]:
    if target is None:
        return {}
    return {
        "target_type": target._meta.model_name or "",
        "target_id": str(target.pk),
        "target_repr": str(target)[:300],
    }


def audit_record(
    *,
    action: str,
    organization_id: UUID | None,
    actor: User | None = None,
    target: models.Model | None = None,
    details: Mapping[str, Any] | None = None,
    ip: str | None = None,
) -> AuditEvent:
    """Record one event; the actor defaults to the current request's user.

    Never pass secrets in `details`: the log is shown to every owner and admin.
    """
    request = _request.get()
    if actor is None and request is not None:
        user = getattr(request, "user", None)
        actor = user if isinstance(user, User) else None
    return AuditEvent.objects.create(
        organization_id=organization_id,
        action=action,
        actor=actor,
        actor_email=actor.email if actor else "",
        via=_via(request) if request is not None else "",
        ip=ip or client_ip(request),
        details=dict(details or {}),
        **_target(target),
    )


def authentication_failed(*, method: str, reason: str, key_prefix: str = "") -> None:
    """Log a refused credential: how it was sent and why, never the credential itself."""
    auth_logger.warning("auth_failed", method=method, reason=reason, key_prefix=key_prefix or None)
