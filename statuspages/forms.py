"""The status page form of the management pages: the page's fields, numbered section rows
(a name and a position each), and for every endpoint of the organization the section row
it is shown in and its position there. No script is needed to order anything.

The rules are `statuspages.validation`'s, the ones the API applies; their refusals are
shown beside the fields (a section's beside its row).
"""

import uuid
from dataclasses import dataclass, field
from typing import Any

from django import forms

from accounts.models import User
from healthmon.errors import NON_FIELD, InvalidInput
from monitoring.models import Endpoint
from statuspages import validation
from statuspages.models import DEFAULT_UPTIME_DAYS, StatusPage, Visibility

EMPTY_ROWS = 2  # blank section rows offered beyond the used ones
MAX_ROWS = validation.MAX_SECTIONS
NOT_A_NUMBER = "Enter a whole number."
NO_SUCH_ROW = "Choose one of the section rows."
PAGE_FIELDS = [
    "name",
    "slug",
    "title",
    "description",
    "visibility",
    "custom_domain",
    "uptime_days",
    "show_response_times",
]
SEE_SECTIONS = "Some sections or endpoints need a change: see below."


@dataclass
class SectionRow:
    """A numbered section row as shown: its name, position and errors."""

    number: int
    name: str = ""
    position: str = ""
    errors: list[str] = field(default_factory=list)


@dataclass
class EndpointRow:
    """An endpoint as shown: the section row it is in ("" none) and its position there."""

    endpoint: Endpoint
    section: str = ""
    position: str = ""
    errors: list[str] = field(default_factory=list)


class StatusPageForm(forms.Form):
    """A new or changed status page. A blank password keeps the stored one."""

    name = forms.CharField(max_length=validation.MAX_NAME_LENGTH)
    slug = forms.CharField(max_length=200, strip=True)
    title = forms.CharField(max_length=validation.MAX_NAME_LENGTH, required=False)
    description = forms.CharField(max_length=2_000, required=False)
    visibility = forms.ChoiceField(choices=Visibility.choices)
    password = forms.CharField(max_length=1_024, required=False, strip=False)
    custom_domain = forms.CharField(max_length=validation.MAX_DOMAIN_LENGTH, required=False)
    uptime_days = forms.IntegerField()
    show_response_times = forms.BooleanField(required=False)

    def __init__(
        self,
        data: Any = None,
        *,
        user: User,
        endpoints: list[Endpoint],
        page: StatusPage | None = None,
    ) -> None:
        super().__init__(data, initial=_initial(page))
        self.user, self.page, self.endpoints = user, page, endpoints
        self.checked: validation.PageInput | None = None
        self.sections, self.endpoint_rows = (
            self._posted_rows() if self.is_bound else self._stored_rows()
        )
        self.section_errors: list[str] = []

    def _stored_rows(self) -> tuple[list[SectionRow], list[EndpointRow]]:
        """The page's sections numbered 1..n in order, and where each endpoint is."""
        where: dict[uuid.UUID, tuple[int, int]] = {}
        rows = []
        stored = list(self.page.sections.all()) if self.page is not None else []
        for number, section in enumerate(stored, start=1):
            rows.append(SectionRow(number, section.name, str(number)))
            for position, component in enumerate(section.components.all(), start=1):
                where[component.endpoint_id] = (number, position)
        rows += [
            SectionRow(n, "", str(n)) for n in range(len(rows) + 1, len(rows) + 1 + EMPTY_ROWS)
        ]
        endpoint_rows = []
        for endpoint in self.endpoints:
            number, position = where.get(endpoint.pk, (0, 0))
            endpoint_rows.append(EndpointRow(endpoint, str(number or ""), str(position or "")))
        return rows, endpoint_rows

    def _posted_rows(self) -> tuple[list[SectionRow], list[EndpointRow]]:
        """The rows as posted (as many as the form had, within bounds)."""
        try:
            count = int(self.data.get("section_rows", EMPTY_ROWS))
        except ValueError:
            count = EMPTY_ROWS
        count = max(1, min(count, MAX_ROWS))
        rows = [
            SectionRow(
                n,
                self.data.get(f"section-{n}-name", "").strip(),
                self.data.get(f"section-{n}-position", "").strip(),
            )
            for n in range(1, count + 1)
        ]
        endpoint_rows = [
            EndpointRow(
                endpoint,
                self.data.get(f"endpoint-{endpoint.pk}-section", "").strip(),
                self.data.get(f"endpoint-{endpoint.pk}-position", "").strip(),
            )
            for endpoint in self.endpoints
        ]
        return rows, endpoint_rows

    def clean(self) -> dict[str, Any]:
        """The page as the validation checks it (`checked` once valid)."""
        cleaned = super().clean() or self.cleaned_data
        raw, row_of = self._raw_sections()
        given: dict[str, Any] = {name: cleaned[name] for name in PAGE_FIELDS if name in cleaned}
        if cleaned.get("password"):
            given["password"] = cleaned["password"]
        if raw is not None:
            given["sections"] = raw
        failed = set(self.errors) | ({"sections"} if raw is None else set())
        try:
            self.checked = validation.page_input(
                caller=self.user, page=self.page, given=given, failed=failed
            )
        except InvalidInput as exc:
            self._refuse(exc, row_of)
        rows: list[SectionRow | EndpointRow] = [*self.sections, *self.endpoint_rows]
        if self.section_errors or any(row.errors for row in rows):
            self.add_error(None, SEE_SECTIONS)
        return cleaned

    def _raw_sections(self) -> tuple[list[dict[str, Any]] | None, list[SectionRow]]:
        """The sections as the API takes them, in order of position (then row number), and
        which row each came from; None when a number is unreadable (shown on its row)."""
        ok = True
        for row in self.sections:
            ok &= _number(row.position, row.errors, default=row.number) is not None
        chosen: dict[int, list[tuple[int, str, Endpoint]]] = {}
        numbers = {row.number for row in self.sections}
        for item in self.endpoint_rows:
            if not item.section:
                continue
            number = _number(item.section, item.errors, default=0)
            position = _number(item.position, item.errors, default=0)
            if number is not None and number not in numbers:
                item.errors.append(NO_SUCH_ROW)
                number = None
            if number is None or position is None:
                ok = False
                continue
            chosen.setdefault(number, []).append((position, item.endpoint.name, item.endpoint))
        if not ok:
            return None, []
        used = [row for row in self.sections if row.name or row.number in chosen]
        used.sort(key=lambda row: (_number(row.position, [], default=row.number) or 0, row.number))
        raw = [
            {
                "name": row.name,
                "endpoints": [
                    str(e.pk)
                    # by position, then name; the id breaks ties (endpoints share names)
                    for _, _, e in sorted(
                        chosen.get(row.number, []), key=lambda t: (t[0], t[1], str(t[2].pk))
                    )
                ],
            }
            for row in used
        ]
        return raw, used

    def _refuse(self, exc: InvalidInput, row_of: list[SectionRow]) -> None:
        """Show the validation's refusals: a section's on its row, the rest on their field."""
        for key, messages in exc.errors.items():
            if key.startswith("sections["):
                index = int(key[len("sections[") : key.index("]")])
                row_of[index].errors.extend(messages)
            elif key == "sections":
                self.section_errors.extend(messages)
            else:
                name = key.partition(".")[0]
                self.add_error(
                    name if name != NON_FIELD and name in self.fields else None, messages
                )


def _number(value: str, errors: list[str], *, default: int) -> int | None:
    """A whole number typed in a row ("" is `default`); None, with an error, if not one."""
    if not value:
        return default
    try:
        return int(value)
    except ValueError:
        if NOT_A_NUMBER not in errors:
            errors.append(NOT_A_NUMBER)
        return None


def _initial(page: StatusPage | None) -> dict[str, Any]:
    """The page's values to show (a new page's defaults)."""
    if page is None:
        return {"visibility": Visibility.PUBLIC, "uptime_days": DEFAULT_UPTIME_DAYS}
    return {
        "name": page.name,
        "slug": page.slug,
        "title": page.title,
        "description": page.description,
        "visibility": page.visibility,
        "custom_domain": page.custom_domain or "",
        "uptime_days": page.uptime_days,
        "show_response_times": page.show_response_times,
    }
