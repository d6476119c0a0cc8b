"""The one validation of the alerts' input: a channel's config per kind, a maintenance
window's times and recurrence, and the scope either is narrowed to.

The API serializers and the page forms both call these, so a rule holds alike (and says
the same) in both. Each raises `InvalidInput` naming every bad field at once, keyed as the
input is: a config's `url`, `addresses.2`, `to_members`; a window's `ends_at`.

A URL is checked as probe targets are (syntax), and refused when its host is a literal
address the network policy forbids. Host names are not resolved here: the sending
transport checks the address it connects to, every time.
"""

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from accounts.models import Project, normalize_email
from alerts import recurrence as recurrence_rule
from alerts.apprise_transport import checked_apprise_url
from alerts.models import (
    CHANNEL_EVENTS,
    MAX_ADDRESSES,
    URL_KINDS,
    WEEK,
    ChannelKind,
    NotificationChannel,
    Recurrence,
)
from alerts.transport import checked_url
from healthmon.errors import FieldErrors, InvalidInput
from monitoring.models import Endpoint
from monitoring.targets import MASK, MAX_TARGET_LENGTH

MAX_ADDRESS_LENGTH = 254
UNKNOWN_OPTION = "Unknown option for this kind of channel."
URL_REQUIRED = "A URL is required for this kind of channel."
NOBODY = "Give addresses, or mail the project's members."
TOO_MANY_ADDRESSES = f"At most {MAX_ADDRESSES} addresses."
MASKED_URL = (
    "The URL is masked: send it in full, or exactly as it was answered to keep the stored one."
)
ENDS_BEFORE_START = "Must be after starts_at."
WEEKLY_TOO_LONG = "A weekly window lasts less than 7 days."
RECURRENCE_AND_RRULE = "recurrence weekly is rrule FREQ=WEEKLY: give one, or rrule alone."
OTHER_ORGANIZATION = "Only projects and endpoints of the same organization."
# The JSON type errors, worded as the API's other fields word them.
NULL = "This field may not be null."
BLANK = "This field may not be blank."
NOT_A_STRING = "Not a valid string."
NOT_A_BOOLEAN = "Must be a valid boolean."


# --- channel config, per kind -------------------------------------------------------------------


def channel_config(
    kind: str, config: Mapping[str, Any], *, stored: NotificationChannel | None = None
) -> dict[str, Any]:
    """The config of a channel of this kind, as it is stored.

    `email`: `{addresses, to_members}`, normalized and deduplicated addresses, and somebody
    to write to. Other kinds: `{url}`, an http(s) URL the network policy does not forbid
    (`apprise`: any Apprise URL its parser reads, its host checked alike).
    `stored`: the channel being changed; its URL is kept when the masked form it was
    answered with is sent back. Unknown keys are refused, so a typo never passes silently.
    """
    known = {"url"} if kind in URL_KINDS else {"addresses", "to_members"}
    errors: FieldErrors = {name: [UNKNOWN_OPTION] for name in sorted(set(config) - known)}
    if kind in URL_KINDS:
        checked = _url_config(config, stored, errors, kind=kind)
    else:
        checked = _email_config(config, errors)
    if errors:
        raise InvalidInput(errors)
    return checked


def _email_config(config: Mapping[str, Any], errors: FieldErrors) -> dict[str, Any]:
    addresses = _addresses(config.get("addresses", []), errors)
    to_members = config.get("to_members", False)
    if not isinstance(to_members, bool):
        errors["to_members"] = [NULL if to_members is None else NOT_A_BOOLEAN]
    elif not errors and not addresses and not to_members:
        errors["addresses"] = [NOBODY]
    return {"addresses": addresses, "to_members": to_members}


def _addresses(value: Any, errors: FieldErrors) -> list[str]:
    """Valid addresses, normalized and without repeats; each bad one under its index."""
    if not isinstance(value, list):
        kind = type(value).__name__
        errors["addresses"] = [
            NULL if value is None else f'Expected a list of items but got type "{kind}".'
        ]
        return []
    if len(value) > MAX_ADDRESSES:  # before looking at each: the count alone refuses it
        errors["addresses"] = [TOO_MANY_ADDRESSES]
        return []
    found = []
    for index, item in enumerate(value):
        try:
            found.append(_address(item))
        except ValueError as exc:
            errors[f"addresses.{index}"] = [str(exc)]
    return list(dict.fromkeys(found))


def _address(value: Any) -> str:
    """An address to mail, trimmed and lowercased; a ValueError says what is wrong."""
    if value is None:
        raise ValueError(NULL)
    if not isinstance(value, str):
        raise ValueError(f"{value} is not an email address.")
    address = normalize_email(value)
    if not address:
        raise ValueError(BLANK)
    # Lowercasing can lengthen a string (`İ` becomes two characters): the stored one counts.
    if len(address) > MAX_ADDRESS_LENGTH:
        raise ValueError(f"Ensure this field has no more than {MAX_ADDRESS_LENGTH} characters.")
    try:
        validate_email(address)
    except ValidationError as exc:
        raise ValueError(f"{value} is not an email address.") from exc
    return address


def _url_config(
    config: Mapping[str, Any],
    stored: NotificationChannel | None,
    errors: FieldErrors,
    *,
    kind: str = "",
) -> dict[str, Any]:
    url = config.get("url")
    if stored is not None and stored.kind in URL_KINDS and url == stored.config_masked.get("url"):
        url = stored.config["url"]  # the masked form as answered: keep the stored URL
    try:
        return {"url": _url(url, present="url" in config, kind=kind)}
    except ValueError as exc:  # TargetError is one
        errors["url"] = [str(exc)]
        return {}


def _url(url: Any, *, present: bool, kind: str = "") -> str:
    """A strict http(s) URL (for `apprise`: a URL Apprise's parser reads), not masked,
    whose host, if an address, the network policy allows (`present`: whether the input
    had the key at all)."""
    if url is None:
        raise ValueError(NULL if present else URL_REQUIRED)
    if not isinstance(url, str):
        raise ValueError(NOT_A_STRING)
    if not url:
        raise ValueError(URL_REQUIRED)
    if len(url) > MAX_TARGET_LENGTH:
        raise ValueError(f"Ensure this field has no more than {MAX_TARGET_LENGTH} characters.")
    if MASK in url:
        raise ValueError(MASKED_URL)
    if kind == ChannelKind.APPRISE:
        return checked_apprise_url(url)
    return checked_url(url)


def channel_kind(kind: str, *, stored: NotificationChannel) -> None:
    """A channel keeps the kind it was created with (its config and secret depend on it)."""
    if kind != stored.kind:
        raise InvalidInput({"kind": ["Cannot change once created."]})


# --- maintenance windows ----------------------------------------------------------------------


def maintenance_window(
    *,
    starts_at: datetime,
    ends_at: datetime,
    recurrence: str = Recurrence.ONCE,
    rrule: str = "",
    timezone: str = "UTC",
) -> tuple[str, str]:
    """A window ends after it starts; its rule (`rrule`, or the old `recurrence: weekly`,
    which is `FREQ=WEEKLY`) is a valid RFC 5545 rule that occurs, HOURLY or coarser, each
    occurrence shorter than the rule's period; its zone is an IANA name. Returns the rule
    as stored ("" once) and the zone."""
    errors: FieldErrors = {}
    if recurrence not in Recurrence.values:
        errors["recurrence"] = [f'"{recurrence}" is not a valid choice.']
    rule = recurrence_rule.normalized(rrule)
    if recurrence == Recurrence.WEEKLY and rule not in ("", recurrence_rule.WEEKLY):
        errors["recurrence"] = [RECURRENCE_AND_RRULE]
    elif recurrence == Recurrence.WEEKLY:
        rule = recurrence_rule.WEEKLY
    try:
        recurrence_rule.zone_of(timezone)
    except ValueError as exc:
        errors["timezone"] = [str(exc)]
    if rule and (
        problem := recurrence_rule.rule_error(rule, starts_at=starts_at, zone_name=timezone)
    ):
        errors["rrule"] = [problem]
    if ends_at <= starts_at:
        errors["ends_at"] = [ENDS_BEFORE_START]
    elif rule and "rrule" not in errors and (span := _too_long(rule, ends_at - starts_at)):
        errors["ends_at"] = [span]
    if errors:
        raise InvalidInput(errors)
    return rule, timezone


def _too_long(rule: str, length: timedelta) -> str:
    """Why a recurring window is too long for its rule ("" when it is not)."""
    longest = recurrence_rule.longest_span(rule)
    if longest is None or length < longest:
        return ""
    if longest == WEEK:
        return WEEKLY_TOO_LONG
    return f"A window repeating {recurrence_rule.frequency(rule)} lasts less than {longest}."


def channel_events(value: Any) -> list[str]:
    """The events a channel chose: a list of names from `CHANNEL_EVENTS`, without repeats,
    in that list's order (empty: only escalation steps and tests reach it)."""
    if not isinstance(value, list):
        kind = type(value).__name__
        raise InvalidInput(
            {
                "events": [
                    NULL if value is None else f'Expected a list of items but got type "{kind}".'
                ]
            }
        )
    unknown = [repr(item) for item in value if item not in CHANNEL_EVENTS]
    if unknown:
        known = ", ".join(CHANNEL_EVENTS)
        raise InvalidInput(
            {"events": [f"Unknown event {', '.join(unknown)}: choose among {known}."]}
        )
    return [event for event in CHANNEL_EVENTS if event in value]


# --- scope ------------------------------------------------------------------------------------


def scope(
    *, organization_id: Any, projects: Sequence[Project], endpoints: Sequence[Endpoint]
) -> None:
    """A channel's or window's projects and endpoints are of its own organization."""
    errors: FieldErrors = {}
    if any(project.organization_id != organization_id for project in projects):
        errors["projects"] = [OTHER_ORGANIZATION]
    ids = [endpoint.pk for endpoint in endpoints]
    elsewhere = Endpoint.objects.filter(pk__in=ids).exclude(
        project__organization_id=organization_id
    )
    if ids and elsewhere.exists():
        errors["endpoints"] = [OTHER_ORGANIZATION]
    if errors:
        raise InvalidInput(errors)
