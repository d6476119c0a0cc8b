"""Forms of the alerts page: a new notification channel and a new maintenance window.

The forms read what was posted; its rules are `alerts.validation`'s, the ones the API
applies, and their refusals are shown beside the fields they name.
"""

import re
from datetime import UTC, datetime
from typing import Any

from django import forms
from django.utils import timezone

from accounts.models import Project, User
from alerts import recurrence as recurrence_rule
from alerts import validation
from alerts.models import CHANNEL_EVENTS, URL_KINDS, ChannelKind, NotificationEvent, Recurrence
from healthmon.errors import NON_FIELD, InvalidInput

_ADDRESS_SEPARATORS = re.compile(r"[\s,;]+")
EVENT_CHOICES = [(event, NotificationEvent(event).label) for event in CHANNEL_EVENTS]


def refuse(form: forms.BaseForm, exc: InvalidInput) -> None:
    """Show a refusal of `alerts.validation` on a form: `addresses.2` beside `addresses`, a
    key that names no field of the form above it."""
    for key, messages in exc.errors.items():
        field = key.partition(".")[0]
        form.add_error(field if field != NON_FIELD and field in form.fields else None, messages)


def _scope_field() -> forms.ModelMultipleChoiceField:
    return forms.ModelMultipleChoiceField(queryset=Project.objects.none(), required=False)


class _ScopedForm(forms.Form):
    """A form with the projects a channel or window is narrowed to: among those the user
    sees (none: the whole organization)."""

    projects = _scope_field()

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["projects"].queryset = Project.objects.visible_to(user)  # type: ignore[attr-defined]

    @property
    def chosen_projects(self) -> list[str]:
        """The project ids posted, to show them selected again."""
        return self.data.getlist("projects") if hasattr(self.data, "getlist") else []


class ChannelForm(_ScopedForm):
    """A new channel: a URL for webhooks and chat services; for mail, addresses and/or the
    members of the project whose endpoint is concerned."""

    name = forms.CharField(max_length=200)
    kind = forms.ChoiceField(choices=ChannelKind.choices)
    url = forms.CharField(max_length=2048, required=False, strip=True)
    addresses = forms.CharField(max_length=5000, required=False)
    to_members = forms.BooleanField(required=False)
    # The events it is sent; `events_shown` tells an empty choice from a form without them
    # (which keeps every event).
    events = forms.MultipleChoiceField(choices=EVENT_CHOICES, required=False)
    events_shown = forms.BooleanField(required=False)

    config: dict[str, Any]

    @property
    def chosen_events(self) -> list[str]:
        """The events to show ticked: as posted, every one on a new form."""
        if not self.is_bound:
            return list(CHANNEL_EVENTS)
        return self.data.getlist("events") if hasattr(self.data, "getlist") else []

    @property
    def channel_events(self) -> list[str] | None:
        """The events chosen (None: the form did not show them, every event)."""
        if not self.cleaned_data.get("events_shown"):
            return None
        return validation.channel_events(list(self.cleaned_data.get("events") or []))

    def clean(self) -> dict[str, Any]:
        """The kind's config, as the validation checks it (`config` once valid)."""
        cleaned = super().clean() or self.cleaned_data
        kind = cleaned.get("kind")
        if kind in URL_KINDS:
            posted: dict[str, Any] = {"url": cleaned.get("url")}
        else:
            typed = _ADDRESS_SEPARATORS.split(cleaned.get("addresses") or "")
            posted = {
                "addresses": [address for address in typed if address],
                "to_members": cleaned.get("to_members", False),
            }
        if kind is not None and not set(posted) & set(self.errors):
            try:
                self.config = validation.channel_config(kind, posted)
            except InvalidInput as exc:
                refuse(self, exc)
        return cleaned


class UTCDateTimeField(forms.DateTimeField):
    """A `datetime-local` value, read as UTC whatever the active time zone."""

    def to_python(self, value: Any) -> datetime | None:
        """Parse; a value without an offset is UTC."""
        with timezone.override(UTC):
            return super().to_python(value)


class WindowForm(_ScopedForm):
    """A new maintenance window: once, weekly, or by an RFC 5545 rule, its times read in
    its time zone."""

    name = forms.CharField(max_length=200, required=False)
    starts_at = UTCDateTimeField()
    ends_at = UTCDateTimeField()
    weekly = forms.BooleanField(required=False)
    rrule = forms.CharField(max_length=500, required=False, strip=True)
    timezone = forms.CharField(max_length=64, required=False, strip=True)

    rule: str = ""

    def clean(self) -> dict[str, Any]:
        """Ends after it starts; its rule and zone are valid, each occurrence shorter than
        the rule's period. The times typed are wall-clock times in the zone."""
        cleaned = super().clean() or self.cleaned_data
        zone_name = cleaned.get("timezone") or "UTC"
        cleaned["timezone"] = zone_name
        if cleaned.get("starts_at") and cleaned.get("ends_at"):
            self._in_zone(cleaned, zone_name)
            try:
                self.rule, _ = validation.maintenance_window(
                    starts_at=cleaned["starts_at"],
                    ends_at=cleaned["ends_at"],
                    recurrence=self.recurrence,
                    rrule=cleaned.get("rrule") or "",
                    timezone=zone_name,
                )
            except InvalidInput as exc:
                refuse(self, exc)
        return cleaned

    @staticmethod
    def _in_zone(cleaned: dict[str, Any], zone_name: str) -> None:
        """Read the times typed (parsed as UTC) as wall-clock times in the zone, if known."""
        try:
            zone = recurrence_rule.zone_of(zone_name)
        except ValueError:
            return  # refused with the rest
        for name in ("starts_at", "ends_at"):
            cleaned[name] = cleaned[name].replace(tzinfo=zone).astimezone(UTC)

    @property
    def recurrence(self) -> str:
        """Weekly when ticked, else once."""
        return Recurrence.WEEKLY if self.cleaned_data.get("weekly") else Recurrence.ONCE
