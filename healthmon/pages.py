"""Plumbing shared by the server-rendered pages.

Pages check their forms with the same validation as the API and call the same services, so
a rule (password strength, roles, the last owner, foreign ids) holds alike in both; this
module shows the domain's refusals (`healthmon.errors.DomainError`) beside the form fields.
"""

from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

from django.http import HttpRequest
from django.utils.http import url_has_allowed_host_and_scheme

from healthmon.errors import NON_FIELD as FLAT_NON_FIELD
from healthmon.errors import DomainError, InvalidInput, flatten_errors

NON_FIELD = "__all__"
R = TypeVar("R")


class Checker(Protocol):
    """What checks a posted form: an API serializer, whose fields call the domain's
    validation (`<app>/validation.py`), so a page and the API refuse alike."""

    @property
    def errors(self) -> Any: ...

    @property
    def validated_data(self) -> Any: ...

    def is_valid(self) -> bool: ...


def _by_field(errors: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """Flat errors on the form's fields: `config.method` shows on `config` as `method: ...`."""
    found: dict[str, list[str]] = {}
    for name, messages in errors.items():
        field, _, rest = name.partition(".")
        field = NON_FIELD if field == FLAT_NON_FIELD else field
        label = f"{rest}: " if rest else ""
        found.setdefault(field, []).extend(f"{label}{m}" for m in messages)
    return found


class PageForm:
    """A posted form: the values to show again and the errors per field.

    `labels` names the fields as the page does ("Interval (s)"): a form that has them lists
    its field errors at the top too, each with its field's label and a link to it.
    """

    def __init__(
        self, data: Mapping[str, Any] | None = None, labels: Mapping[str, str] | None = None
    ) -> None:
        self.data: Mapping[str, Any] = data or {}
        self.labels: Mapping[str, str] = labels or {}
        self.errors: dict[str, list[str]] = {}
        self.validated: dict[str, Any] = {}
        self.status = 400  # the answer's status while the form has errors

    @classmethod
    def check(
        cls,
        checker_class: Callable[..., Checker],
        data: Mapping[str, Any],
        labels: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> "PageForm":
        """Validate the posted data as the API does."""
        form = cls(data, labels)
        checker = checker_class(data=data, **kwargs)
        if checker.is_valid():
            form.validated = dict(checker.validated_data)
        else:
            form.errors = _by_field(flatten_errors(checker.errors))
        return form

    @property
    def is_valid(self) -> bool:
        """No errors so far."""
        return not self.errors

    @property
    def non_field_errors(self) -> list[str]:
        """Errors about the form as a whole."""
        return self.errors.get(NON_FIELD, [])

    @property
    def error_summary(self) -> list[tuple[str, str, str]]:
        """`(field, label, message)` of each field error, in the order of `labels`."""
        return [
            (name, label, message)
            for name, label in self.labels.items()
            for message in self.errors.get(name, [])
        ]

    def fail(self, exc: DomainError) -> None:
        """Show a service's refusal (validation, conflict, role rule) on the form."""
        errors = exc.errors if isinstance(exc, InvalidInput) else {FLAT_NON_FIELD: [exc.detail]}
        for field, messages in _by_field(errors).items():
            self.errors.setdefault(field, []).extend(messages)
        self.status = exc.status

    def attempt(self, call: Callable[..., R], **kwargs: Any) -> R | None:
        """Run a service with the validated values (and `kwargs`) when the form is valid;
        its refusal lands on the form. Check `is_valid` afterwards."""
        if not self.is_valid:
            return None
        try:
            return call(**self.validated, **kwargs)
        except DomainError as exc:
            self.fail(exc)
            return None

    def value(self, name: str) -> Any:
        """The posted value of a field, for the template."""
        return self.data.get(name, "")


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
