"""Plumbing shared by the server-rendered pages.

Pages check their forms with the API's own serializers and call the same services, so a
rule (password strength, roles, the last owner, foreign ids) holds alike in both; this
module turns those serializers' and services' errors into messages beside the form fields.
"""

from collections.abc import Callable, Mapping
from functools import wraps
from typing import Any, TypeVar

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.utils.http import url_has_allowed_host_and_scheme
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.serializers import BaseSerializer

from accounts.models import User

NON_FIELD = "__all__"
R = TypeVar("R")


def _flatten(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """Field -> messages; nested errors (`config.method`) stay on their top-level field."""
    if isinstance(detail, Mapping):
        found: dict[str, list[str]] = {}
        for name, inner in detail.items():
            key = prefix or (NON_FIELD if name == "non_field_errors" else str(name))
            label = f"{name}: " if prefix else ""
            for field, messages in _flatten(inner, key).items():
                found.setdefault(field, []).extend(f"{label}{m}" for m in messages)
        return found
    if isinstance(detail, list | tuple):
        found = {}
        for item in detail:
            for field, messages in _flatten(item, prefix).items():
                found.setdefault(field, []).extend(messages)
        return found
    return {prefix or NON_FIELD: [str(detail)]}


class PageForm:
    """A posted form: the values to show again and the errors per field."""

    def __init__(self, data: Mapping[str, Any] | None = None) -> None:
        self.data: Mapping[str, Any] = data or {}
        self.errors: dict[str, list[str]] = {}
        self.validated: dict[str, Any] = {}
        self.status = 400  # the answer's status while the form has errors

    @classmethod
    def check(
        cls,
        serializer_class: type[BaseSerializer[Any]],
        data: Mapping[str, Any],
        **kwargs: Any,
    ) -> "PageForm":
        """Validate the posted data with an API serializer."""
        form = cls(data)
        serializer = serializer_class(data=data, **kwargs)
        if serializer.is_valid():
            form.validated = dict(serializer.validated_data)
        else:
            form.errors = _flatten(serializer.errors)
        return form

    @property
    def is_valid(self) -> bool:
        """No errors so far."""
        return not self.errors

    @property
    def non_field_errors(self) -> list[str]:
        """Errors about the form as a whole."""
        return self.errors.get(NON_FIELD, [])

    def fail(self, exc: APIException) -> None:
        """Show a service's refusal (validation, conflict, role rule) on the form."""
        detail = exc.detail if isinstance(exc, ValidationError) else str(exc.detail)
        for field, messages in _flatten(detail).items():
            self.errors.setdefault(field, []).extend(messages)
        self.status = exc.status_code

    def attempt(self, call: Callable[..., R], **kwargs: Any) -> R | None:
        """Run a service with the validated values (and `kwargs`) when the form is valid;
        its refusal lands on the form. Check `is_valid` afterwards."""
        if not self.is_valid:
            return None
        try:
            return call(**self.validated, **kwargs)
        except APIException as exc:
            self.fail(exc)
            return None

    def value(self, name: str) -> Any:
        """The posted value of a field, for the template."""
        return self.data.get(name, "")


def page_user(request: HttpRequest) -> User:
    """The signed-in user of a page behind `member_required`."""
    user = request.user
    if not isinstance(user, User):  # `login_required` lets only real users through
        raise PermissionDenied
    return user


def member_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Signed-in organization users only; others go to the login page and come back."""
    return login_required(view)


def manager_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Signed-in owners and admins only; members get a 403 page."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not page_user(request).is_manager:
            raise PermissionDenied("This page needs the owner or admin role.")
        return view(request, *args, **kwargs)

    return login_required(wrapped)


def safe_next(request: HttpRequest, default: str = "/") -> str:
    """Where to go after signing in: `?next=` only when it is a path on this site."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    if (
        target.startswith("/")
        and not target.startswith(("//", "/\\"))
        and url_has_allowed_host_and_scheme(target, allowed_hosts=None)
    ):
        return target
    return default
