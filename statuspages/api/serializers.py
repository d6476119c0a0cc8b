"""Request parsing and response shapes of the status pages API."""

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from accounts.api.serializers import NameField, PasswordField, TextField
from accounts.models import User
from alerts.api.serializers import StrictBooleanField
from healthmon.api.serializers import AllErrorsMixin
from healthmon.errors import InvalidInput
from monitoring.api.serializers import BadgeUrlsSerializer, badge_urls
from statuspages import validation
from statuspages.feeds import page_url
from statuspages.models import (
    DEFAULT_UPTIME_DAYS,
    MAX_UPTIME_DAYS,
    MIN_UPTIME_DAYS,
    StatusPage,
    Visibility,
)


class StatusPageSectionSerializer(serializers.Serializer[Any]):
    """A section as the schema shows it (the `sections` field reads and checks it)."""

    name = serializers.CharField(max_length=validation.MAX_NAME_LENGTH)
    endpoints = serializers.ListField(
        child=serializers.UUIDField(),
        required=False,
        help_text="Endpoint ids, in the order shown; left out: none.",
    )


@extend_schema_field(StatusPageSectionSerializer(many=True))
class SectionsField(serializers.Field):
    """The page's sections in order, each `{name, endpoints}`; the whole list replaces the
    stored one. A member reads only the endpoints it can see."""

    default_error_messages = {"not_a_list": "Expected a list of sections."}

    def get_attribute(self, instance: StatusPage) -> StatusPage:
        """The page itself: its prefetched sections are read below."""
        return instance

    def to_representation(self, value: StatusPage) -> list[dict[str, Any]]:
        """`[{name, endpoints: [ids]}]` from the prefetched sections and components."""
        visible = self.context.get("visible_endpoints")
        return [
            {
                "name": section.name,
                "endpoints": [
                    str(component.endpoint_id)
                    for component in section.components.all()
                    if visible is None or component.endpoint_id in visible
                ],
            }
            for section in value.sections.all()
        ]

    def to_internal_value(self, data: Any) -> list[Any]:
        """A list; its sections are checked with the page (`statuspages.validation`)."""
        if not isinstance(data, list):
            self.fail("not_a_list")
        return data


class StatusPageSerializer(AllErrorsMixin, serializers.ModelSerializer[StatusPage]):
    """A status page as the API shows and accepts it; `password` is write-only."""

    name = NameField()
    slug = TextField(help_text="3-63 of `[a-z0-9-]`, unique: the page is at /status/<slug>.")
    title = NameField(required=False, allow_blank=True, help_text="The heading; blank: name.")
    description = TextField(required=False, allow_blank=True, max_length=2_000)
    visibility = serializers.ChoiceField(choices=Visibility.choices, required=False)
    password = PasswordField(
        required=False,
        help_text="Write-only. Required for visibility `password` unless the page has one.",
    )
    custom_domain = TextField(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=validation.MAX_DOMAIN_LENGTH,
        help_text="A host name pointed at healthmon (unique across organizations); "
        "null or blank: none.",
    )
    uptime_days = serializers.IntegerField(
        required=False,
        help_text=f"Days of uptime shown, {MIN_UPTIME_DAYS} to {MAX_UPTIME_DAYS} "
        f"(default {DEFAULT_UPTIME_DAYS}).",
    )
    show_response_times = StrictBooleanField(required=False)
    sections = SectionsField(required=False)
    url = serializers.SerializerMethodField(help_text="The public URL of the page.")
    badges = serializers.SerializerMethodField(
        help_text="The page's badges (served while the page is public; response time while "
        "it shows response times)."
    )

    class Meta:
        model = StatusPage
        fields = [
            "id",
            "name",
            "slug",
            "title",
            "description",
            "visibility",
            "password",
            "custom_domain",
            "sections",
            "uptime_days",
            "show_response_times",
            "url",
            "badges",
            "created_at",
        ]
        read_only_fields = ["id", "created_at"]
        # Uniqueness is the validation's (one message, the same on the pages).
        validators: list[Any] = []

    def get_url(self, page: StatusPage) -> str:
        """The custom domain's root, else `<WEB_BASE_URL>/status/<slug>`."""
        return page_url(page)

    @extend_schema_field(BadgeUrlsSerializer)
    def get_badges(self, page: StatusPage) -> dict[str, str]:
        """The page's badge URLs (its random `badge_key`, nothing else)."""
        return badge_urls(page.badge_key)

    def get_fields(self) -> dict[str, Any]:
        """No model-derived unique validators on slug or domain: the validation checks them."""
        fields = super().get_fields()
        for name in ("slug", "custom_domain"):
            fields[name].validators = [
                v for v in fields[name].validators if not hasattr(v, "queryset")
            ]
        return fields

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """Every rule of `statuspages.validation` on the fields that passed their own check;
        answers the page as it will be stored, as `page`."""
        caller: User = self.context["request"].user
        try:
            page = validation.page_input(
                caller=caller, page=self.instance, given=attrs, failed=self.failed
            )
        except InvalidInput as exc:
            raise serializers.ValidationError(exc.errors) from exc
        return {"page": page}
