"""What the apps' serializers share: one answer naming every bad field of a request."""

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework.exceptions import ValidationError
from rest_framework.fields import SkipField, empty, get_error_detail
from rest_framework.serializers import as_serializer_error
from rest_framework.settings import api_settings


class AllErrorsMixin:
    """Run `validate()` on the fields that passed even when others failed, and answer the
    errors of both stages together.

    DRF stops after the field checks when one fails, so the rules across fields (a target
    that fits its type, a timeout below the interval) showed only on the next try. Here
    `validate()` always runs, with `self.failed` naming the fields whose own check failed:
    their values are absent from `attrs`, and a rule that needs one of them is skipped.
    Model validators (unique together) still run only on a clean set of fields.
    """

    failed: frozenset[str] = frozenset()

    def run_validation(self, data: Any = empty) -> Any:
        """The validated values, or every error of both stages at once."""
        serializer: Any = self
        is_empty, data = serializer.validate_empty_values(data)
        if is_empty:
            return data
        value, errors = self._fields_checked(data)
        self.failed = frozenset(errors)
        try:
            if not errors:
                serializer.run_validators(value)
            value = serializer.validate(value)
        except (ValidationError, DjangoValidationError) as exc:
            _merge(errors, as_serializer_error(exc))
        if errors:
            raise ValidationError(errors)
        return value

    def _fields_checked(self, data: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """DRF's field stage, keeping the values that passed beside the errors."""
        serializer: Any = self
        if not isinstance(data, Mapping):
            message = serializer.error_messages["invalid"].format(datatype=type(data).__name__)
            raise ValidationError({api_settings.NON_FIELD_ERRORS_KEY: [message]}, code="invalid")
        values: dict[str, Any] = {}
        errors: dict[str, Any] = {}
        for field in serializer._writable_fields:
            validate_method = getattr(self, "validate_" + field.field_name, None)
            try:
                validated = field.run_validation(field.get_value(data))
                if validate_method is not None:
                    validated = validate_method(validated)
            except ValidationError as exc:
                errors[field.field_name] = exc.detail
            except DjangoValidationError as exc:
                errors[field.field_name] = get_error_detail(exc)
            except SkipField:
                pass
            else:
                serializer.set_value(values, field.source_attrs, validated)
        return values, errors


def _merge(errors: dict[str, Any], more: Mapping[str, Any]) -> None:
    """Add the object stage's errors to the field stage's (a field keeps its own first)."""
    for name, messages in more.items():
        found = errors.get(name)
        if found is None:
            errors[name] = messages
        elif isinstance(found, list) and isinstance(messages, list):
            found.extend(m for m in messages if m not in found)


def api_timestamp(value: datetime | None) -> str | None:
    """ISO 8601 in UTC with a `Z`, as DRF's DateTimeField writes it (for representations
    built directly, without DRF's field loop)."""
    if value is None:
        return None
    if value.tzinfo is not UTC:  # the database's values come in UTC already
        value = value.astimezone(UTC)
    return value.isoformat()[:-6] + "Z"  # "+00:00" in UTC
