"""Request parsing and response shapes of the incident API: incidents with their updates
and notes as answered, and the bodies that declare, update, annotate and edit them."""

from functools import cached_property
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from accounts.api.serializers import NameField, TextField
from accounts.models import User
from healthmon.api.errors import field_errors
from healthmon.api.serializers import AllErrorsMixin, api_timestamp
from healthmon.errors import InvalidInput
from monitoring.access import access_endpoints
from monitoring.incidents import incident_title
from monitoring.models import (
    Endpoint,
    Incident,
    IncidentImpact,
    IncidentNote,
    IncidentState,
    IncidentUpdate,
)
from monitoring.selectors import loaded
from monitoring.timeline import TimelineEntry, incident_timeline
from monitoring.validation.incidents import (
    MAX_DECLARED_ENDPOINTS,
    MAX_TEXT_LENGTH,
    MAX_TITLE_LENGTH,
    update_status_check,
)


class IncidentUpdateSerializer(serializers.ModelSerializer[IncidentUpdate]):
    """A public word on an incident: its `status` then, the Markdown `message` and the
    sanitised HTML rendered from it when it was posted."""

    status = serializers.ChoiceField(source="state", choices=IncidentState.choices)

    class Meta:
        model = IncidentUpdate
        fields = ["id", "status", "message", "message_html", "notify_subscribers", "created_at"]
        read_only_fields = fields
        extra_kwargs = {
            "notify_subscribers": {
                "help_text": "Whether status-page subscribers are mailed it (never for an "
                "incident that was not public when it was posted)."
            },
        }


class NoteAuthorSerializer(serializers.ModelSerializer[User]):
    """Who wrote a note."""

    class Meta:
        model = User
        fields = ["id", "email"]
        read_only_fields = fields


class IncidentNoteSerializer(serializers.ModelSerializer[IncidentNote]):
    """An internal note: for the team, never shown on a public route; `author` is null once
    its writer's account is gone."""

    author = NoteAuthorSerializer(read_only=True, allow_null=True)

    class Meta:
        model = IncidentNote
        fields = ["id", "text", "author", "created_at"]
        read_only_fields = fields


class LoadedListSerializer(serializers.ListSerializer[Any]):
    """An incident's related rows as its selector loaded them (`monitoring.selectors.loaded`),
    else read now."""

    def get_attribute(self, instance: Incident) -> list[Any]:
        """The loaded list of the relation named by `source`."""
        return loaded(instance, str(self.source))


class TimelineEntrySerializer(serializers.Serializer[TimelineEntry]):
    """One line of an incident's timeline."""

    at = serializers.DateTimeField(read_only=True)
    kind = serializers.CharField(
        read_only=True,
        help_text="opened | declared | update | note | acknowledged | escalated | reminded | "
        "delivered | delivery_failed | resolved",
    )
    text = serializers.CharField(
        read_only=True,
        help_text="The words: an update's or note's Markdown, or a line such as "
        '"Slack #ops: delivered" (channel names, never their URLs or secrets).',
    )
    actor = NoteAuthorSerializer(
        read_only=True, allow_null=True, help_text="The user, or null (the machinery, a link)."
    )
    detail = serializers.DictField(
        read_only=True,
        help_text="Kind-specific: an update's `{id, status}`, a note's `{id}`, an "
        "acknowledgement's `{id, via}`, a delivery's `{id, channel, channel_kind, event}`.",
    )


class IncidentSerializer(serializers.ModelSerializer[Incident]):
    """An incident: `automatic` ones are opened and resolved by the checks of one
    `endpoint`; `manual` ones are declared by a person on `endpoints` and resolved by a
    `resolved` update. `resolved_at` and `duration_seconds` are null while it lasts."""

    title = serializers.SerializerMethodField(
        help_text='The title given, else "<endpoint name> is down" for an automatic incident.'
    )
    endpoints = serializers.SerializerMethodField(
        help_text="Endpoint ids it concerns: an automatic incident's own endpoint, or those "
        "of a declared one that the caller can see."
    )
    duration_seconds = serializers.FloatField(read_only=True, allow_null=True)
    updates = LoadedListSerializer(child=IncidentUpdateSerializer(), read_only=True)
    notes = LoadedListSerializer(child=IncidentNoteSerializer(), read_only=True)
    acknowledged_by = NoteAuthorSerializer(
        read_only=True,
        allow_null=True,
        help_text="Who acknowledged it; null while unacknowledged, when acknowledged by the "
        "link in a notification, or once that account is gone.",
    )
    acknowledged_via = serializers.SerializerMethodField(
        help_text="`api`, `page` or `link`; null while unacknowledged."
    )
    timeline = serializers.SerializerMethodField(
        help_text="Every line in time order: opening, updates, internal notes, "
        "acknowledgement, escalation steps and reminders, each delivery's outcome, resolution."
    )

    class Meta:
        model = Incident
        fields = [
            "id",
            "kind",
            "title",
            "impact",
            "state",
            "public",
            "endpoint",
            "endpoints",
            "started_at",
            "resolved_at",
            "duration_seconds",
            "cause",
            "updated_at",
            "updates",
            "notes",
            "acknowledged_at",
            "acknowledged_by",
            "acknowledged_via",
            "timeline",
        ]
        read_only_fields = fields

    def to_representation(self, instance: Incident) -> dict[str, Any]:
        """The fields, built directly: DRF's generic path through the nested updates, notes
        and timeline cost ~6 ms of a page of 50 incidents' ~18 ms.

        A test checks that the answer equals the generic path's, field for field.
        """
        return {
            "id": str(instance.pk),
            "kind": instance.kind,
            "title": incident_title(instance),
            "impact": instance.impact,
            "state": instance.state,
            "public": instance.public,
            "endpoint": None if instance.endpoint_id is None else str(instance.endpoint_id),
            "endpoints": self.get_endpoints(instance),
            "started_at": api_timestamp(instance.started_at),
            "resolved_at": api_timestamp(instance.resolved_at),
            "duration_seconds": instance.duration_seconds,
            "cause": instance.cause,
            "updated_at": api_timestamp(instance.updated_at),
            "updates": [_update(update) for update in loaded(instance, "updates")],
            "notes": [_note(note) for note in loaded(instance, "notes")],
            "acknowledged_at": api_timestamp(instance.acknowledged_at),
            "acknowledged_by": _person(instance.acknowledged_by),
            "acknowledged_via": self.get_acknowledged_via(instance),
            "timeline": [_line(line) for line in incident_timeline(instance)],
        }

    @extend_schema_field(serializers.ChoiceField(choices=["api", "page", "link"], allow_null=True))
    def get_acknowledged_via(self, instance: Incident) -> str | None:
        """How it was acknowledged, or None."""
        return instance.acknowledged_via or None

    @extend_schema_field(TimelineEntrySerializer(many=True))
    def get_timeline(self, instance: Incident) -> list[dict[str, Any]]:
        """The merged lines, oldest first."""
        lines = incident_timeline(instance)
        return self._timeline.to_representation(lines)

    @cached_property
    def _timeline(self) -> serializers.ListSerializer[TimelineEntry]:
        # The generic path's (the schema and the test of the direct representation): one
        # for every incident, as a serializer copies its declared fields when first used.
        return TimelineEntrySerializer(many=True)  # type: ignore[return-value]

    def get_title(self, instance: Incident) -> str:
        """The title readers see."""
        return incident_title(instance)

    @extend_schema_field(serializers.ListField(child=serializers.UUIDField()))
    def get_endpoints(self, instance: Incident) -> list[str]:
        """The measured endpoint, or the declared ones (prefetched, visible ones only)."""
        if instance.endpoint_id is not None:
            return [str(instance.endpoint_id)]
        return [str(endpoint.pk) for endpoint in loaded(instance, "endpoints")]


def _person(user: User | None) -> dict[str, str] | None:
    """A user as `NoteAuthorSerializer` writes one."""
    return None if user is None else {"id": str(user.pk), "email": user.email}


def _update(update: IncidentUpdate) -> dict[str, Any]:
    """An update as `IncidentUpdateSerializer` writes it."""
    return {
        "id": str(update.pk),
        "status": update.state,
        "message": update.message,
        "message_html": update.message_html,
        "notify_subscribers": update.notify_subscribers,
        "created_at": api_timestamp(update.created_at),
    }


def _note(note: IncidentNote) -> dict[str, Any]:
    """A note as `IncidentNoteSerializer` writes it."""
    return {
        "id": str(note.pk),
        "text": note.text,
        "author": _person(note.author),
        "created_at": api_timestamp(note.created_at),
    }


def _line(line: TimelineEntry) -> dict[str, Any]:
    """A timeline line as `TimelineEntrySerializer` writes it."""
    return {
        "at": api_timestamp(line.at),
        "kind": line.kind,
        "text": line.text,
        "actor": _person(line.actor),
        "detail": {str(key): value for key, value in line.detail.items()},
    }


class StrictBooleanField(serializers.BooleanField):
    """JSON true or false only (DRF's also takes "yes", 1 and the like); the pages post
    their checkboxes as booleans too."""

    def to_internal_value(self, data: Any) -> bool:
        """Refuse anything but a boolean."""
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


class MessageField(TextField):
    """Markdown, kept as typed (leading spaces make code blocks)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(trim_whitespace=False, max_length=MAX_TEXT_LENGTH, **kwargs)


def _not_blank(value: str) -> None:
    if not value.strip():
        raise serializers.ValidationError("This field may not be blank.")


class DeclaredEndpointsField(serializers.ListField):
    """Endpoint ids the caller can see (one at least); another's is a 400 naming it."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(
            child=serializers.UUIDField(),
            min_length=1,
            max_length=MAX_DECLARED_ENDPOINTS,
            **kwargs,
        )

    def to_internal_value(self, data: Any) -> list[Endpoint]:
        """Resolve the ids to endpoints the caller can see (the length checked first)."""
        if isinstance(data, list) and len(data) > MAX_DECLARED_ENDPOINTS:
            self.fail("max_length", max_length=MAX_DECLARED_ENDPOINTS)
        ids = super().to_internal_value(data)
        try:
            return access_endpoints(self.context["request"].user, ids)
        except InvalidInput as exc:
            raise field_errors(exc) from exc


class IncidentDeclareSerializer(AllErrorsMixin, serializers.Serializer[Any]):
    """A declared (manual) incident: it starts now, `investigating`; a `message` given is
    its first update."""

    title = NameField(max_length=MAX_TITLE_LENGTH, help_text="What readers see, one line.")
    endpoints = DeclaredEndpointsField(help_text="Ids of the endpoints it concerns.")
    impact = serializers.ChoiceField(
        choices=IncidentImpact.choices, help_text="What it does to those endpoints."
    )
    message = MessageField(
        required=False, allow_blank=True, default="", help_text="Markdown; the first update."
    )
    public = StrictBooleanField(default=True, help_text="Shown on status pages.")
    notify_subscribers = StrictBooleanField(
        default=True, help_text="Mail the first update to status-page subscribers."
    )


class IncidentUpdateCreateSerializer(AllErrorsMixin, serializers.Serializer[Any]):
    """An update: the incident takes its `status`; `resolved` closes a manual incident."""

    status = serializers.ChoiceField(
        choices=IncidentState.choices,
        help_text="An open automatic incident cannot take `resolved` (its checks resolve "
        "it); a resolved incident takes `resolved` only (a postmortem).",
    )
    message = MessageField(validators=[_not_blank], help_text="Markdown.")
    notify_subscribers = StrictBooleanField(
        default=True, help_text="Mail it to status-page subscribers (public incidents only)."
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """Refuse a status the incident cannot take in the state it is in."""
        if "status" in attrs:
            try:
                update_status_check(self.context["incident"], attrs["status"])
            except InvalidInput as exc:
                raise field_errors(exc) from exc
        return attrs


class IncidentNoteCreateSerializer(AllErrorsMixin, serializers.Serializer[Any]):
    """An internal note."""

    text = MessageField(validators=[_not_blank], help_text="For the team; never public.")


class IncidentEditSerializer(AllErrorsMixin, serializers.Serializer[Any]):
    """What readers see of an incident; fields left out keep their values."""

    title = NameField(max_length=MAX_TITLE_LENGTH, required=False)
    public = StrictBooleanField(required=False, help_text="False takes it off every status page.")
    impact = serializers.ChoiceField(choices=IncidentImpact.choices, required=False)
