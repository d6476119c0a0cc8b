"""The one validation of a status page as people write it: slug, custom domain, uptime
days, visibility and password, and the sections with their endpoints.

The API serializer and the management form both call `page_input`, so a rule holds alike
(and says the same) in both. It raises `InvalidInput` naming every bad field at once, keyed
as the API's body is: `slug`, `custom_domain`, `sections[1].endpoints`.
"""

import re
import unicodedata
import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

from accounts.models import User
from healthmon.errors import FieldErrors, InvalidInput
from monitoring.models import Endpoint
from statuspages.models import (
    DEFAULT_UPTIME_DAYS,
    MAX_UPTIME_DAYS,
    MIN_UPTIME_DAYS,
    StatusPage,
    Visibility,
)

SLUG_PATTERN = re.compile(r"[a-z0-9-]{3,63}")
_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
MAX_DOMAIN_LENGTH = 253
MAX_NAME_LENGTH = 200
MAX_SECTIONS = 50
MAX_COMPONENTS = 500
MIN_PASSWORD_LENGTH = 8
MAX_PASSWORD_LENGTH = 128

REQUIRED = "This field is required."
BAD_SLUG = "3 to 63 characters: lowercase letters, digits and hyphens."
SLUG_TAKEN = "A status page with this slug already exists."
BAD_DOMAIN = "A host name such as status.example.com (no scheme, port or path)."
OWN_DOMAIN = "This is a host name of healthmon itself."
DOMAIN_TAKEN = "This domain is already used by a status page."
UPTIME_RANGE = f"Between {MIN_UPTIME_DAYS} and {MAX_UPTIME_DAYS} days."
PASSWORD_NEEDED = "A page with visibility `password` needs a password."  # noqa: S105
PASSWORD_UNUSED = "Only a page with visibility `password` has a password."  # noqa: S105
PASSWORD_LENGTH = f"{MIN_PASSWORD_LENGTH} to {MAX_PASSWORD_LENGTH} characters."
SECTION_SHAPE = "Each section is an object with `name` and `endpoints`."
UNKNOWN_KEY = "Unknown field."
CONTROL_CHARACTERS = "Control characters are not allowed."
NAME_LENGTH = f"At most {MAX_NAME_LENGTH} characters."
TOO_MANY_SECTIONS = f"At most {MAX_SECTIONS} sections."
TOO_MANY_COMPONENTS = f"At most {MAX_COMPONENTS} endpoints on a page."
NOT_A_LIST = "Expected a list of endpoint ids."
BAD_ID = "Not a valid UUID: {value}."
TWICE = "An endpoint appears once per page: {pk} is already shown."


@dataclass(frozen=True)
class SectionIn:
    """A section as written: its name and its endpoints, both in the page's order."""

    name: str
    endpoints: tuple[Endpoint, ...]


@dataclass(frozen=True)
class PageInput:
    """A status page's fields as they will be stored. `password` None keeps the stored
    hash; `sections` None keeps the stored sections and components."""

    name: str
    slug: str
    title: str
    description: str
    visibility: str
    password: str | None
    custom_domain: str | None
    uptime_days: int
    show_response_times: bool
    sections: tuple[SectionIn, ...] | None


def _stored(page: StatusPage | None) -> dict[str, Any]:
    """A page's current values (a new page's defaults), for the fields a patch leaves out."""
    if page is None:
        return {
            "title": "",
            "description": "",
            "visibility": Visibility.PUBLIC,
            "custom_domain": None,
            "uptime_days": DEFAULT_UPTIME_DAYS,
            "show_response_times": False,
        }
    fields = ["name", "slug", "title", "description", "visibility", "custom_domain"]
    values = {field: getattr(page, field) for field in fields}
    return {
        **values,
        "uptime_days": page.uptime_days,
        "show_response_times": page.show_response_times,
    }


def page_input(
    *,
    caller: User,
    page: StatusPage | None,
    given: Mapping[str, Any],
    failed: Collection[str] = (),
) -> PageInput | None:
    """The page as it will be stored: the values `given` (already of the right types) over
    the stored ones. `failed` names fields whose own check failed elsewhere: their rules are
    skipped, the caller reports them beside these errors, and there is no page (None)."""
    values = {**_stored(page), **given}
    errors: FieldErrors = {}
    for field in ("name", "slug"):
        if field not in values and field not in failed:
            errors[field] = [REQUIRED]
    checks = {
        "slug": lambda: slug(values["slug"], page=page),
        "custom_domain": lambda: custom_domain(values["custom_domain"], page=page),
        "uptime_days": lambda: uptime_days(values["uptime_days"]),
        "sections": lambda: sections(caller=caller, raw=values["sections"]),
    }
    cleaned: dict[str, Any] = {}
    # Only what is sent is checked: a stored value stands (the admin may have set it).
    for field, check in checks.items():
        if field in given and field not in failed:
            try:
                cleaned[field] = check()
            except InvalidInput as exc:
                errors.update(exc.errors)
    if "password" not in failed and "visibility" not in failed:
        errors.update(_password_errors(values.get("visibility"), given.get("password"), page))
    if errors:
        raise InvalidInput(errors)
    return None if failed else _assembled(values, cleaned)


def _assembled(values: Mapping[str, Any], cleaned: Mapping[str, Any]) -> PageInput:
    """The page from the values, those the rules normalized (a domain's case) as they say."""
    final = {**values, **cleaned}
    return PageInput(
        name=final["name"],
        slug=final["slug"],
        title=final["title"],
        description=final["description"],
        visibility=final["visibility"],
        password=final.get("password"),
        custom_domain=final["custom_domain"],
        uptime_days=final["uptime_days"],
        show_response_times=final["show_response_times"],
        sections=final.get("sections") if "sections" in cleaned else None,
    )


def slug(value: str, *, page: StatusPage | None) -> str:
    """3-63 of `[a-z0-9-]`, not yet another page's (slugs are global: they make the URL)."""
    if not SLUG_PATTERN.fullmatch(value):
        raise InvalidInput({"slug": [BAD_SLUG]})
    others = StatusPage.objects.filter(slug=value)
    if page is not None:
        others = others.exclude(pk=page.pk)
    if others.exists():
        raise InvalidInput({"slug": [SLUG_TAKEN]})
    return value


def _own_hosts() -> list[str]:
    """The host names healthmon answers on itself: its web origin and ALLOWED_HOSTS
    (a leading dot covers the subdomains; `*` is no name)."""
    hosts = [(urlsplit(settings.WEB_BASE_URL).hostname or "").lower(), "localhost"]
    return hosts + [host.lower() for host in settings.ALLOWED_HOSTS if host != "*"]


def _is_own(domain: str) -> bool:
    for host in _own_hosts():
        if host.startswith("."):
            if domain == host[1:] or domain.endswith(host):
                return True
        elif domain == host:
            return True
    return False


def custom_domain(value: str | None, *, page: StatusPage | None) -> str | None:
    """A lowercase host name of two labels or more (no address, port or scheme), none of
    healthmon's own, used by no other page of any organization; blank is none. Which
    organization holds a domain is never said."""
    domain = (value or "").strip().lower().removesuffix(".")
    if not domain:
        return None
    labels = domain.split(".")
    valid = (
        len(domain) <= MAX_DOMAIN_LENGTH
        and len(labels) >= 2  # a name below a top-level domain
        and all(_LABEL.fullmatch(label) for label in labels)
        and not labels[-1].isdigit()  # an IPv4 address is no host name
    )
    if not valid:
        raise InvalidInput({"custom_domain": [BAD_DOMAIN]})
    if _is_own(domain):
        raise InvalidInput({"custom_domain": [OWN_DOMAIN]})
    others = StatusPage.objects.filter(custom_domain=domain)
    if page is not None:
        others = others.exclude(pk=page.pk)
    if others.exists():
        raise InvalidInput({"custom_domain": [DOMAIN_TAKEN]})
    return domain


def uptime_days(value: int) -> int:
    """How many days of uptime the page shows: 30 to 365."""
    if not MIN_UPTIME_DAYS <= value <= MAX_UPTIME_DAYS:
        raise InvalidInput({"uptime_days": [UPTIME_RANGE]})
    return value


def _password_errors(
    visibility: str | None, password: str | None, page: StatusPage | None
) -> FieldErrors:
    """A `password` page needs one (sent now, or stored while it already was one); other
    pages take none. Its length is checked only when one is sent."""
    if visibility is None:
        return {}
    if visibility != Visibility.PASSWORD:
        return {"password": [PASSWORD_UNUSED]} if password else {}
    if password is None:
        had = page is not None and page.visibility == Visibility.PASSWORD and page.password_hash
        return {} if had else {"password": [PASSWORD_NEEDED]}
    if not MIN_PASSWORD_LENGTH <= len(password) <= MAX_PASSWORD_LENGTH:
        return {"password": [PASSWORD_LENGTH]}
    return {}


def sections(*, caller: User, raw: Sequence[Any]) -> tuple[SectionIn, ...]:
    """Sections in order, each `{name, endpoints}`: a name, and endpoints of the caller's
    organization it can see (an unknown or foreign id is refused), each once per page."""
    if len(raw) > MAX_SECTIONS:
        raise InvalidInput({"sections": [TOO_MANY_SECTIONS]})
    errors: FieldErrors = {}
    parsed = [_section(item, f"sections[{index}]", errors) for index, item in enumerate(raw)]
    ids = [pk for _, pks in parsed for pk in pks]
    if len(ids) > MAX_COMPONENTS:
        raise InvalidInput({"sections": [TOO_MANY_COMPONENTS]})
    found = _endpoints(caller, parsed, errors)
    if errors:
        raise InvalidInput(errors)
    return tuple(
        SectionIn(name=name, endpoints=tuple(found[pk] for pk in pks)) for name, pks in parsed
    )


def _section(item: Any, key: str, errors: FieldErrors) -> tuple[str, list[uuid.UUID]]:
    """One section's name and endpoint ids, its errors added under `key`."""
    if not isinstance(item, Mapping):
        errors[key] = [SECTION_SHAPE]
        return "", []
    for unknown in sorted(set(item) - {"name", "endpoints"}):
        errors[f"{key}.{unknown}"] = [UNKNOWN_KEY]
    name = item.get("name")
    name = name.strip() if isinstance(name, str) else ""
    if not name:
        errors[f"{key}.name"] = [REQUIRED]
    elif len(name) > MAX_NAME_LENGTH:
        errors[f"{key}.name"] = [NAME_LENGTH]
    elif any(unicodedata.category(char)[0] == "C" for char in name):
        errors[f"{key}.name"] = [CONTROL_CHARACTERS]
    pks: list[uuid.UUID] = []
    listed = item.get("endpoints", [])
    if not isinstance(listed, list):
        errors[f"{key}.endpoints"] = [NOT_A_LIST]
        return name, pks
    for value in listed:
        try:
            pks.append(uuid.UUID(str(value)))
        except ValueError:
            errors.setdefault(f"{key}.endpoints", []).append(BAD_ID.format(value=value))
    return name, pks


def _endpoints(
    caller: User, parsed: Sequence[tuple[str, Sequence[uuid.UUID]]], errors: FieldErrors
) -> dict[uuid.UUID, Endpoint]:
    """The endpoints named, by id; refuses, under each section's `endpoints`, ids the caller
    cannot see and ids already shown earlier on the page."""
    visible = Endpoint.objects.visible_to(caller).without_secrets()
    wanted = {pk for _, pks in parsed for pk in pks}
    found = {row.pk: row for row in visible.filter(pk__in=wanted)}
    seen: set[uuid.UUID] = set()
    for index, (_, pks) in enumerate(parsed):
        key = f"sections[{index}].endpoints"
        for pk in pks:
            if pk not in found:
                errors.setdefault(key, []).append(f"Unknown endpoint: {pk}.")
            elif pk in seen:
                errors.setdefault(key, []).append(TWICE.format(pk=pk))
            seen.add(pk)
    return found
