"""Forms of the alerts page: a new notification channel and a new maintenance window.

A channel's URL is checked as the probes' targets are (syntax), and refused when its host
is a literal address the network policy forbids. Host names are not resolved here: the
sending transport checks the address it connects to, every time.
"""

import re
from datetime import UTC, datetime
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.utils import timezone

from accounts.models import Project, User
from alerts.models import (
    MAX_ADDRESSES,
    URL_KINDS,
    ChannelKind,
    MaintenanceWindow,
    Recurrence,
)
from alerts.transport import checked_url
from monitoring.targets import TargetError

_ADDRESS_SEPARATORS = re.compile(r"[\s,;]+")


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

    def clean_url(self) -> str:
        """A well-formed http(s) URL whose host is no forbidden literal address."""
        url = self.cleaned_data["url"]
        if not url:
            return ""
        try:
            return checked_url(url)
        except TargetError as exc:
            raise ValidationError(str(exc), code="invalid") from exc

    def clean_addresses(self) -> list[str]:
        """Addresses separated by commas, semicolons or white space; each valid, no repeats."""
        typed = _ADDRESS_SEPARATORS.split(self.cleaned_data["addresses"])
        found = list(dict.fromkeys(address for address in typed if address))
        if len(found) > MAX_ADDRESSES:
            raise ValidationError(f"At most {MAX_ADDRESSES} addresses.", code="too_many")
        for address in found:
            try:
                validate_email(address)
            except ValidationError as exc:
                raise ValidationError(f"{address} is not an email address.") from exc
        return found

    def clean(self) -> dict[str, Any]:
        """What the kind needs: a URL, or someone to mail."""
        cleaned = super().clean() or self.cleaned_data
        kind = cleaned.get("kind")
        if kind in URL_KINDS and not cleaned.get("url") and "url" not in self.errors:
            self.add_error("url", "A URL is required for this kind of channel.")
        nobody = not cleaned.get("addresses") and not cleaned.get("to_members")
        if kind == ChannelKind.EMAIL and nobody and "addresses" not in self.errors:
            self.add_error("addresses", "Give addresses, or mail the project's members.")
        return cleaned

    def channel_fields(self) -> dict[str, Any]:
        """Keyword arguments of `channel_create`, from a valid form."""
        data = self.cleaned_data
        if data["kind"] == ChannelKind.EMAIL:
            config = {"addresses": data["addresses"], "to_members": data["to_members"]}
        else:
            config = {"url": data["url"]}
        return {
            "name": data["name"],
            "kind": data["kind"],
            "config": config,
            "projects": list(data["projects"]),
        }


class UTCDateTimeField(forms.DateTimeField):
    """A `datetime-local` value, read as UTC whatever the active time zone."""

    def to_python(self, value: Any) -> datetime | None:
        """Parse; a value without an offset is UTC."""
        with timezone.override(UTC):
            return super().to_python(value)


class WindowForm(_ScopedForm):
    """A new maintenance window, once or weekly; its rules are the model's."""

    name = forms.CharField(max_length=200, required=False)
    starts_at = UTCDateTimeField()
    ends_at = UTCDateTimeField()
    weekly = forms.BooleanField(required=False)

    def clean(self) -> dict[str, Any]:
        """Ends after it starts; a weekly one lasts less than a week."""
        cleaned = super().clean() or self.cleaned_data
        if cleaned.get("starts_at") and cleaned.get("ends_at"):
            try:
                MaintenanceWindow(**self.window_fields()).clean()
            except ValidationError as exc:
                self.add_error(None, exc)
        return cleaned

    def window_fields(self) -> dict[str, Any]:
        """The window's own fields (not its scope), from the cleaned values."""
        data = self.cleaned_data
        return {
            "name": data.get("name", ""),
            "starts_at": data["starts_at"],
            "ends_at": data["ends_at"],
            "recurrence": Recurrence.WEEKLY if data.get("weekly") else Recurrence.ONCE,
        }
