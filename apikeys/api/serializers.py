"""Request parsing and response shapes of the API key routes."""

from datetime import datetime
from typing import Any

from django.utils import timezone
from rest_framework import serializers

from accounts.api.serializers import NameField
from accounts.models import User
from apikeys.models import ApiKey, Scope


class ApiKeySerializer(serializers.ModelSerializer[ApiKey]):
    """A key's public record; never the key itself."""

    scopes = serializers.ListField(child=serializers.ChoiceField(choices=Scope.choices))
    created_by: serializers.PrimaryKeyRelatedField[User] = serializers.PrimaryKeyRelatedField(
        read_only=True, allow_null=True, help_text="The creator; null once it was removed."
    )

    class Meta:
        model = ApiKey
        fields = [
            "id",
            "name",
            "scopes",
            "prefix",
            "expires_at",
            "created_at",
            "last_used_at",
            "created_by",
        ]
        read_only_fields = fields


class ApiKeyCreatedSerializer(ApiKeySerializer):
    """The creation answer: the only time the key is ever shown."""

    key = serializers.CharField(
        read_only=True, help_text="The secret key. Shown once: store it now."
    )

    class Meta(ApiKeySerializer.Meta):
        fields = [*ApiKeySerializer.Meta.fields, "key"]
        read_only_fields = fields


class ApiKeyCreateSerializer(serializers.Serializer[Any]):
    name = NameField()
    scopes = serializers.ListField(
        child=serializers.ChoiceField(choices=Scope.choices), allow_empty=False, max_length=20
    )
    expires_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        default=None,
        help_text="When the key stops working (UTC); null or absent: never.",
    )

    def validate_expires_at(self, value: datetime | None) -> datetime | None:
        """An expiry must lie in the future."""
        if value is not None and value <= timezone.now():
            raise serializers.ValidationError("Must be in the future.")
        return value
