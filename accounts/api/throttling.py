"""Throttles for the unauthenticated auth routes: per client IP and per account."""

import hashlib
from typing import TYPE_CHECKING

from django.conf import settings
from django.http import HttpRequest
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from accounts.audit import client_ip
from accounts.models import normalize_email

if TYPE_CHECKING:  # rest_framework.views imports the permission and throttle settings
    from rest_framework.views import APIView


class _AuthThrottle(SimpleRateThrottle):
    """Rate from AUTH_THROTTLE_RATE, read when the throttle is built so tests can change it."""

    def get_rate(self) -> str:
        """The configured auth rate."""
        return settings.AUTH_THROTTLE_RATE

    def get_ident(self, request: Request | HttpRequest) -> str:
        """The client address, read by the one function the audit log uses too."""
        plain = request if isinstance(request, HttpRequest) else request._request
        return client_ip(plain) or ""

    def _key(self, view: "APIView", kind: str, ident: str) -> str:
        action = getattr(view, "action", None) or type(view).__name__
        return f"throttle:auth:{action}:{kind}:{ident}"


class AuthIPThrottle(_AuthThrottle):
    """Per client IP; X-Forwarded-For is honoured only through NUM_PROXIES."""

    def get_cache_key(self, request: Request, view: "APIView") -> str | None:
        """One bucket per route and client address."""
        return self._key(view, "ip", self.get_ident(request))


class AuthUserThrottle(_AuthThrottle):
    """Per authenticated user, for routes that check a password (a stolen JWT guessing it)."""

    def get_cache_key(self, request: Request, view: "APIView") -> str | None:
        """One bucket per route and user."""
        user_id = getattr(request.user, "pk", None)
        return self._key(view, "user", str(user_id)) if user_id else None


class AuthAccountThrottle(_AuthThrottle):
    """Per account: the email in the body, or the mailed token for token-based routes."""

    def get_cache_key(self, request: Request, view: "APIView") -> str | None:
        """One bucket per route and account; requests naming no account are not counted."""
        data = request.data if isinstance(request.data, dict) else {}
        email, token = data.get("email"), data.get("token")
        if isinstance(email, str) and email.strip():
            subject = normalize_email(email)
        elif isinstance(token, str) and token:
            subject = token
        else:
            return None
        digest = hashlib.sha256(subject.encode()).hexdigest()[:32]
        return self._key(view, "account", digest)


class _BucketThrottle(_AuthThrottle):
    """One named bucket at the auth rate."""

    def __init__(self, key: str) -> None:
        super().__init__()
        self.key = key

    def get_cache_key(self, request: Request, view: "APIView") -> str | None:
        """The bucket given."""
        return self.key


class _PageView:
    """Stands in for an API view: pages share the API route's buckets (`action`)."""

    def __init__(self, action: str) -> None:
        self.action = action


def page_throttle_wait(
    request: HttpRequest, action: str, account: str = "", user_id: object = None
) -> float | None:
    """Seconds to wait when a page's form post is over the auth limits, else None.

    The page counts in the same per-IP, per-account and per-user buckets as the API route
    of the same name, so alternating between the two gains an attacker nothing.
    """
    view = _PageView(action)
    throttle = AuthIPThrottle()
    keys = [throttle._key(view, "ip", throttle.get_ident(request))]  # type: ignore[arg-type]
    if account.strip():
        subject = normalize_email(account) if "@" in account else account
        digest = hashlib.sha256(subject.encode()).hexdigest()[:32]
        keys.append(throttle._key(view, "account", digest))  # type: ignore[arg-type]
    if user_id is not None:  # a signed-in user checking its password, as AuthUserThrottle
        keys.append(throttle._key(view, "user", str(user_id)))  # type: ignore[arg-type]
    waits = []
    for key in keys:
        limiter = _BucketThrottle(key)
        if not limiter.allow_request(request, view):  # type: ignore[arg-type]
            waits.append(limiter.wait() or 1.0)
    return max(waits) if waits else None
