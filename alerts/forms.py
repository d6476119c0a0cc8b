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
from alerts import validation
from alerts.models import URL_KINDS, ChannelKind, Recurrence
from healthmon.errors import NON_FIELD, InvalidInput

_ADDRESS_SEPARATORS = re.compile(r"[\s,;]+")


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

    config: dict[str, Any]

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
    """A new maintenance window, once or weekly."""

    name = forms.CharField(max_length=200, required=False)
    starts_at = UTCDateTimeField()
    ends_at = UTCDateTimeField()
    weekly = forms.BooleanField(required=False)

    def clean(self) -> dict[str, Any]:
        """Ends after it starts; a weekly one lasts less than a week."""
        cleaned = super().clean() or self.cleaned_data
        if cleaned.get("starts_at") and cleaned.get("ends_at"):
            try:
                validation.maintenance_window(
                    starts_at=cleaned["starts_at"],
                    ends_at=cleaned["ends_at"],
                    recurrence=self.recurrence,
                )
            except InvalidInput as exc:
                refuse(self, exc)
        return cleaned

    @property
    def recurrence(self) -> str:
        """Weekly when ticked, else once."""
        return Recurrence.WEEKLY if self.cleaned_data.get("weekly") else Recurrence.ONCE
