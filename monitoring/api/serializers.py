"""Request parsing and response shapes of the endpoint API."""

import json
from typing import Any

from django.conf import settings
from rest_framework import serializers

from accounts.api.serializers import NameField, VisibleProjectField
from monitoring.config import CONFIG_SERIALIZERS, validate_config
from monitoring.models import (
    MAX_INTERVAL_SECONDS,
    MAX_TIMEOUT_SECONDS,
    Endpoint,
    EndpointType,
)
from monitoring.targets import (
    MASK,
    MAX_TARGET_LENGTH,
    TargetError,
    mask_config,
    restore_config_secrets,
    restore_target_secrets,
    same_origin,
    validate_target,
)

DEFAULT_INTERVAL = 60
DEFAULT_TIMEOUT = 10


class TargetField(serializers.CharField):
    """The target: read with its secrets masked, written in clear (or masked, to keep them)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(
            trim_whitespace=False,
            max_length=MAX_TARGET_LENGTH,
            help_text=(
                "A URL whose scheme fits the type, or host:port for custom. Passwords and "
                "secret query parameters are answered as ****; send **** back to keep them."
            ),
            **kwargs,
        )

    def get_attribute(self, instance: Endpoint) -> str:
        """The masked form, without decrypting the stored target."""
        return instance.target_masked


class ConfigField(serializers.JSONField):
    """Per-type options; secret values (authorization headers and the like) read masked."""

    def to_representation(self, value: Any) -> Any:
        """Mask secret values."""
        return mask_config(value)


class EndpointSerializer(serializers.ModelSerializer[Endpoint]):
    """An endpoint as the API shows and accepts it.

    Validation looks at the fields together: the target must fit the type, the config is
    checked against the type's options, and the timeout stays below the interval.
    """

    project = VisibleProjectField()
    name = NameField()
    type = serializers.ChoiceField(choices=EndpointType.choices)
    target = TargetField()
    interval_seconds = serializers.IntegerField(
        min_value=1,
        max_value=MAX_INTERVAL_SECONDS,
        default=DEFAULT_INTERVAL,
        help_text="Seconds between checks, from MIN_CHECK_INTERVAL (10 by default) to 1 day.",
    )
    timeout_seconds = serializers.IntegerField(
        min_value=1,
        max_value=MAX_TIMEOUT_SECONDS,
        required=False,
        help_text="Seconds one check may take; below the interval. Default 10.",
    )
    config = ConfigField(required=False, help_text="Per-type options; defaults filled in.")

    class Meta:
        model = Endpoint
        fields = [
            "id",
            "project",
            "name",
            "type",
            "target",
            "interval_seconds",
            "timeout_seconds",
            "config",
            "enabled",
            "status",
            "last_checked_at",
            "next_check_at",
            "created_at",
            "updated_at",
        ]
        read_only_fields = [
            "id",
            "status",
            "last_checked_at",
            "next_check_at",
            "created_at",
            "updated_at",
        ]

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """Check interval, timeout, target and config against each other and the type."""
        errors: dict[str, list[str]] = {}
        self._validate_timing(attrs, errors)
        endpoint_type = attrs.get("type") or self.instance.type  # type: ignore[union-attr]
        if "target" in attrs or "type" in attrs:
            try:
                attrs["target"] = validate_target(endpoint_type, self._target(attrs))
            except TargetError as exc:
                errors["target"] = [str(exc)]
        if "config" in attrs or "type" in attrs or self.instance is None:
            try:
                attrs["config"] = validate_config(endpoint_type, self._config(attrs, endpoint_type))
            except TargetError as exc:
                errors["config"] = [str(exc)]
            except serializers.ValidationError as exc:
                errors.update(_prefixed("config", exc.detail))
        if errors:
            raise serializers.ValidationError(errors)
        return attrs

    def _validate_timing(self, attrs: dict[str, Any], errors: dict[str, list[str]]) -> None:
        current = self.instance
        interval: int = attrs.get("interval_seconds", current and current.interval_seconds)
        if "interval_seconds" in attrs and interval < settings.MIN_CHECK_INTERVAL:
            errors["interval_seconds"] = [
                f"Ensure this value is greater than or equal to {settings.MIN_CHECK_INTERVAL}."
            ]
            return
        if current is None and "timeout_seconds" not in attrs:
            attrs["timeout_seconds"] = min(DEFAULT_TIMEOUT, interval - 1)
        timeout: int = attrs.get("timeout_seconds", current and current.timeout_seconds)
        if timeout >= interval:
            errors["timeout_seconds"] = ["Must be less than interval_seconds."]

    def _target(self, attrs: dict[str, Any]) -> str:
        if self.instance is None:
            return str(attrs["target"])
        if "target" not in attrs:
            return self.instance.target
        return restore_target_secrets(attrs["target"], self.instance.target)

    def _config(self, attrs: dict[str, Any], endpoint_type: str) -> Any:
        if self.instance is None:
            return attrs.get("config", {})
        old: Any = self.instance.config
        if "config" not in attrs:  # a new type keeps the options it shares with the old one
            known = CONFIG_SERIALIZERS[endpoint_type]().fields
            return {name: value for name, value in old.items() if name in known}
        new = attrs["config"]
        target = attrs.get("target", self.instance.target)
        if MASK in json.dumps(new) and not same_origin(target, self.instance.target):
            raise TargetError("Enter the secret values again: the target's host or user changed.")
        return restore_config_secrets(new, old)


def _prefixed(prefix: str, detail: Any) -> dict[str, Any]:
    if isinstance(detail, dict):
        return {f"{prefix}.{key}": value for key, value in detail.items()}
    return {prefix: detail}
