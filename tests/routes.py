"""Every API route from the URL configuration, for tests that must cover them all."""

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.permissions import AllowAny


@dataclass(frozen=True)
class Route:
    template: str  # "/api/v1/endpoints/{pk}"
    method: str  # "GET"
    basename: str
    view_class: Any
    action: str

    @property
    def has_pk(self) -> bool:
        return "{pk}" in self.template

    def path(self, pk: object = None, ping_id: object = None) -> str:
        """The path for `pk`; a route under a ping gets `ping_id`, else an unknown ping's."""
        return self.template.format(pk=pk, ping_id=ping_id or uuid.uuid4())


def _patterns(resolver: Any = None, prefix: str = "") -> Iterator[tuple[str, str, Any]]:
    """(template, regex, view) of every URL pattern, the `pk` (and a ping's `ping_id`) group
    shown as `{pk}` (`{ping_id}`)."""
    for pattern in (resolver or get_resolver()).url_patterns:
        regex = prefix + pattern.pattern.regex.pattern.lstrip("^").rstrip("$").replace("\\Z", "")
        if isinstance(pattern, URLResolver):
            yield from _patterns(pattern, regex)
        elif isinstance(pattern, URLPattern):
            template = re.sub(r"\(\?P<(pk|ping_id)>[^)]*\)", r"{\1}", regex)
            yield "/" + template, regex, pattern.callback


def api_patterns_with_parameters() -> list[tuple[str, tuple[str, ...], Any]]:
    """(template, path parameter names, view) of every pattern under /api/v1 taking any."""
    found = []
    for template, regex, callback in _patterns():
        names = tuple(re.compile(regex).groupindex)
        if template.startswith("/api/v1/") and names:
            found.append((template, names, callback))
    return found


def api_routes(include_public: bool = False) -> list[Route]:
    """(path, method) of every viewset route under /api/v1, public ones only if asked."""
    routes = []
    for template, _, callback in _patterns():
        if not template.startswith("/api/v1/") or not hasattr(callback, "actions"):
            continue
        view_class = callback.cls
        allowed = set(view_class.http_method_names) - {"head", "options"}
        for method, action in callback.actions.items():
            if method not in allowed:
                continue
            handler = getattr(view_class, action)
            kwargs = getattr(handler, "kwargs", {})
            permissions = kwargs.get("permission_classes", view_class.permission_classes)
            public = any(issubclass(p, AllowAny) for p in permissions)
            if public and not include_public:
                continue
            routes.append(
                Route(template, method.upper(), callback.initkwargs["basename"], view_class, action)
            )
    return routes
