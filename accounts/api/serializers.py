"""Request parsing and response shapes of the accounts API."""

import unicodedata
import uuid
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from accounts.access import access_projects
from accounts.models import (
    AuditEvent,
    Invitation,
    Organization,
    Project,
    Role,
    User,
    normalize_email,
)
from healthmon.api.errors import field_errors
from healthmon.errors import InvalidInput

MAX_PASSWORD_LENGTH = 1024


def _no_control_characters(value: str) -> None:
    """Names end up in email subjects and pages: refuse newlines and other control characters."""
    if any(unicodedata.category(char)[0] == "C" or char in "\u2028\u2029" for char in value):
        raise serializers.ValidationError("Control characters are not allowed.")


class TextField(serializers.CharField):
    """A CharField that takes JSON strings only.

    DRF's would store the number `0` as the text "0": the schema says string, and a number
    where text belongs is the client's mistake, answered with a 400.
    """

    def to_internal_value(self, data: Any) -> str:
        """Refuse anything but a string, then validate as DRF does."""
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class NameField(TextField):
    """A trimmed, non-blank, single-line display name."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", 200)
        super().__init__(validators=[_no_control_characters], **kwargs)


class PasswordField(TextField):
    """A write-only password, kept exactly as typed (no trimming)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(
            write_only=True,
            trim_whitespace=False,
            max_length=MAX_PASSWORD_LENGTH,
            style={"input_type": "password"},
            **kwargs,
        )


class TokenField(TextField):
    """A token from a mailed link."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(write_only=True, max_length=512, **kwargs)


class EmailAddressField(serializers.EmailField):
    """An email address, normalized (trimmed, lowercased) and then checked for length.

    Lowercasing can lengthen a string (`İ` becomes two characters), so the limit applies
    to the value that is stored.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_length=254, **kwargs)

    def to_internal_value(self, data: Any) -> str:
        """Validate, normalize, re-check the length."""
        email = normalize_email(super().to_internal_value(data))
        if len(email) > 254:
            self.fail("max_length", max_length=254)
        return email


class OrganizationSerializer(serializers.ModelSerializer[Organization]):
    class Meta:
        model = Organization
        fields = ["id", "name"]


class ProjectSerializer(serializers.ModelSerializer[Project]):
    name = NameField()

    class Meta:
        model = Project
        fields = ["id", "name", "ping_key", "created_at"]
        read_only_fields = ["id", "ping_key", "created_at"]
        extra_kwargs = {
            "ping_key": {
                "help_text": "The first part of the project's heartbeat slug URLs, "
                "`/ping/<ping_key>/<slug>`; rotate it with `rotate-ping-key`."
            }
        }


class UserSerializer(serializers.ModelSerializer[User]):
    """The user summary: `{id, email, role, organization_id}` plus a few more fields."""

    organization_id = serializers.UUIDField(read_only=True)

    class Meta:
        model = User
        fields = ["id", "email", "role", "organization_id", "email_verified", "date_joined"]
        read_only_fields = fields


class UserDetailSerializer(UserSerializer):
    """A user as owners and admins see it, with the projects granted to it."""

    projects: serializers.PrimaryKeyRelatedField[Project] = serializers.PrimaryKeyRelatedField(
        many=True, read_only=True
    )

    class Meta(UserSerializer.Meta):
        fields = [*UserSerializer.Meta.fields, "projects"]
        read_only_fields = fields


class MeSerializer(UserSerializer):
    """The caller and its organization."""

    organization = OrganizationSerializer(read_only=True)

    class Meta(UserSerializer.Meta):
        fields = [*UserSerializer.Meta.fields, "organization"]
        read_only_fields = fields


class TokenSerializer(serializers.Serializer[Any]):
    """A JWT and when it expires."""

    token = serializers.CharField()
    expires_at = serializers.DateTimeField()


class LoginResponseSerializer(TokenSerializer):
    user = UserSerializer()


class RegisterResponseSerializer(LoginResponseSerializer):
    organization = OrganizationSerializer()
    project = ProjectSerializer()


class DetailSerializer(serializers.Serializer[Any]):
    """A plain acknowledgement."""

    detail = serializers.CharField()


class RegisterSerializer(serializers.Serializer[Any]):
    email = EmailAddressField()
    password = PasswordField()
    organization_name = NameField()


class LoginSerializer(serializers.Serializer[Any]):
    email = EmailAddressField()
    password = PasswordField()


class EmailSerializer(serializers.Serializer[Any]):
    email = EmailAddressField()


class TokenPasswordSerializer(serializers.Serializer[Any]):
    """A mailed token and the password to set with it."""

    token = TokenField()
    password = PasswordField()


class ChangePasswordSerializer(serializers.Serializer[Any]):
    current_password = PasswordField()
    new_password = PasswordField()


class VerifyEmailSerializer(serializers.Serializer[Any]):
    token = TokenField()


class RoleSerializer(serializers.Serializer[Any]):
    role = serializers.ChoiceField(choices=Role.choices)


class ProjectIdsField(serializers.ListField):
    """Project UUIDs the caller can see; an unknown or foreign id is a validation error."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(child=serializers.UUIDField(), max_length=500, **kwargs)

    def to_internal_value(self, data: Any) -> list[Project]:
        """Resolve the ids to projects of the caller's organization.

        The length is checked first: DRF checks it last, after validating every item and
        after the query below.
        """
        if isinstance(data, list) and len(data) > self.max_length:  # type: ignore[operator]
            self.fail("max_length", max_length=self.max_length)
        ids = super().to_internal_value(data)
        try:
            return access_projects(self.context["request"].user, ids)
        except InvalidInput as exc:
            raise field_errors(exc) from exc


class VisibleProjectField(serializers.PrimaryKeyRelatedField[Project]):
    """One project the caller can see, by id; any other id is a validation error."""

    def get_queryset(self) -> Any:
        """Projects visible to the caller."""
        return Project.objects.visible_to(self.context["request"].user)

    def to_internal_value(self, data: Any) -> Project:
        """Refuse anything that is not a UUID before querying."""
        try:
            uuid.UUID(str(data))
        except ValueError:
            self.fail("does_not_exist", pk_value=data)
        return super().to_internal_value(data)


class UserProjectsSerializer(serializers.Serializer[Any]):
    projects = ProjectIdsField()


class InvitationCreateSerializer(serializers.Serializer[Any]):
    email = EmailAddressField()
    role = serializers.ChoiceField(choices=Role.choices)
    projects = ProjectIdsField(required=False, default=list)


class InvitationSerializer(serializers.ModelSerializer[Invitation]):
    projects: serializers.PrimaryKeyRelatedField[Project] = serializers.PrimaryKeyRelatedField(
        many=True, read_only=True
    )
    invited_by: serializers.PrimaryKeyRelatedField[User] = serializers.PrimaryKeyRelatedField(
        read_only=True
    )

    class Meta:
        model = Invitation
        fields = ["id", "email", "role", "projects", "invited_by", "created_at", "expires_at"]
        read_only_fields = fields


class AuditActorSerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField(allow_null=True, help_text="Null once the user is deleted.")
    email = serializers.CharField()
    via = serializers.CharField(help_text="session, jwt, api_key:<prefix>, or empty.")


class AuditTargetSerializer(serializers.Serializer[Any]):
    type = serializers.CharField()
    id = serializers.CharField()
    repr = serializers.CharField()


class AuditEventSerializer(serializers.ModelSerializer[AuditEvent]):
    """One audit event: action, actor, address, target and details (never a secret)."""

    actor = serializers.SerializerMethodField()
    target = serializers.SerializerMethodField()

    class Meta:
        model = AuditEvent
        fields = ["id", "action", "created_at", "actor", "ip", "target", "details"]
        read_only_fields = fields

    @extend_schema_field(AuditActorSerializer(allow_null=True))
    def get_actor(self, event: AuditEvent) -> dict[str, Any] | None:
        """Who acted; null when nobody was signed in (a failed sign-in)."""
        if not event.actor_email:
            return None
        actor_id = str(event.actor_id) if event.actor_id else None
        return {"id": actor_id, "email": event.actor_email, "via": event.via}

    @extend_schema_field(AuditTargetSerializer(allow_null=True))
    def get_target(self, event: AuditEvent) -> dict[str, Any] | None:
        """What was acted on."""
        if not event.target_type:
            return None
        return {"type": event.target_type, "id": event.target_id, "repr": event.target_repr}
