"""Request parsing and response shape of escalation policies:
`{id, name, steps: [{after_minutes, channels}], repeat_every_minutes, projects, endpoints,
created_at}`. The rules are `alerts.escalation_validation`'s, shared with the page form."""

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from accounts.api.serializers import NameField
from alerts import escalation_validation as rules
from alerts.api.serializers import ScopedListSerializer, ScopedSerializer
from alerts.escalation_selectors import StepView, load_steps
from alerts.models import EscalationPolicy
from healthmon.errors import InvalidInput

STEPS_SCHEMA = {
    "type": "array",
    "minItems": 1,
    "maxItems": rules.MAX_STEPS,
    "description": "In order; `after_minutes` (from the incident's start) strictly increasing.",
    "items": {
        "type": "object",
        "properties": {
            "after_minutes": {"type": "integer", "minimum": 0, "maximum": rules.MAX_MINUTES},
            "channels": {
                "type": "array",
                "items": {"type": "string", "format": "uuid"},
                "minItems": 1,
                "maxItems": rules.MAX_STEP_CHANNELS,
            },
        },
        "required": ["after_minutes", "channels"],
        "additionalProperties": False,
    },
}
REPEAT_SCHEMA = {
    "type": "integer",
    "nullable": True,
    "minimum": 1,
    "maximum": rules.MAX_MINUTES,
    "description": "Re-send the last step every so many minutes while the incident is open "
    "and unacknowledged; null: no reminders.",
}


class PolicyListSerializer(ScopedListSerializer):
    """A page of policies: scopes and steps read in four queries for the whole page."""

    def to_representation(self, data: Any) -> list[Any]:
        """Load the page's steps, then render it as channels and windows are."""
        rows = list(data.all() if hasattr(data, "all") else data)
        load_steps(rows)
        return super().to_representation(rows)


@extend_schema_field(STEPS_SCHEMA)
class StepsField(serializers.Field):
    """The steps as sent (checked in `validate`, which knows the organization)."""

    def to_internal_value(self, data: Any) -> Any:
        """Kept as sent."""
        return data

    def get_attribute(self, instance: EscalationPolicy) -> list[StepView]:
        """The loaded steps."""
        steps: list[StepView] = instance.step_list  # type: ignore[attr-defined]
        return steps

    def to_representation(self, value: list[StepView]) -> list[dict[str, Any]]:
        """Each step's delay and channel ids."""
        return [
            {"after_minutes": s.after_minutes, "channels": [str(pk) for pk in s.channel_ids]}
            for s in value
        ]


@extend_schema_field(REPEAT_SCHEMA)
class RepeatField(serializers.Field):
    """Minutes between reminders, or null (checked in `validate`)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(allow_null=True, **kwargs)

    def to_internal_value(self, data: Any) -> Any:
        """Kept as sent."""
        return data

    def to_representation(self, value: Any) -> Any:
        """As stored."""
        return value


class EscalationPolicySerializer(ScopedSerializer):
    """An escalation policy as the API shows and accepts it."""

    name = NameField()
    steps = StepsField()
    repeat_every_minutes = RepeatField(required=False, default=None)

    class Meta:
        model = EscalationPolicy
        list_serializer_class = PolicyListSerializer
        fields = [
            "id",
            "name",
            "steps",
            "repeat_every_minutes",
            "projects",
            "endpoints",
            "created_at",
        ]
        read_only_fields = ["id", "created_at"]

    def to_representation(self, instance: Any) -> dict[str, Any]:
        """Read the steps unless the list serializer did."""
        if not isinstance(self.parent, serializers.ListSerializer):
            load_steps([instance])
        return super().to_representation(instance)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """Check the steps against the caller's organization's channels, and the reminder
        interval, naming every bad field at once."""
        errors: dict[str, list[str]] = {}
        organization_id = self.context["request"].user.organization_id
        if "steps" in attrs:
            try:
                attrs["steps"] = rules.steps(attrs["steps"], organization_id=organization_id)
            except InvalidInput as exc:
                errors.update(exc.errors)
        if "repeat_every_minutes" in attrs:
            try:
                attrs["repeat_every_minutes"] = rules.repeat_every(attrs["repeat_every_minutes"])
            except InvalidInput as exc:
                errors.update(exc.errors)
        if errors:
            raise serializers.ValidationError(errors)
        return attrs
