"""The one validation of an escalation policy's steps and reminder interval, called by the
API serializer and the page form alike.

Errors are keyed as the input is: `steps`, `steps[1].after_minutes`, `steps[1].channels`
(list indexes from 0, as JSON counts them), `repeat_every_minutes`. Every bad field is
named at once.
"""

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from alerts.models import NotificationChannel
from healthmon.errors import FieldErrors, InvalidInput

MAX_STEPS = 10
MAX_MINUTES = 10_080  # a week
MAX_STEP_CHANNELS = 20
STEP_KEYS = frozenset({"after_minutes", "channels"})
NOT_A_LIST = "Expected a list of steps."
NO_STEPS = "Give at least one step."
TOO_MANY_STEPS = f"At most {MAX_STEPS} steps."
NOT_A_STEP = "Expected an object with after_minutes and channels."
UNKNOWN_KEY = "Unknown option of a step."
MINUTES = f"A whole number of minutes from 0 to {MAX_MINUTES}."
NOT_LATER = "Must be later than the step before ({minutes} min)."
NO_CHANNELS = "Give at least one channel."
TOO_MANY_CHANNELS = f"At most {MAX_STEP_CHANNELS} channels."
NOT_A_CHANNEL_ID = "Not a valid channel id: {value}."
UNKNOWN_CHANNEL = "No such channel in this organization: {value}."
REPEAT = f"null (no reminders), or a whole number of minutes from 1 to {MAX_MINUTES}."


@dataclass(frozen=True)
class StepInput:
    """One checked step: its delay from the incident's opening and the channels it reaches."""

    after_minutes: int
    channels: tuple[NotificationChannel, ...]


def _minutes(value: Any, low: int) -> int:
    """A JSON integer from `low` to MAX_MINUTES; a ValueError otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_MINUTES:
        raise ValueError
    return value


def repeat_every(value: Any) -> int | None:
    """The reminder interval: None, or 1..MAX_MINUTES minutes."""
    if value is None:
        return None
    try:
        return _minutes(value, 1)
    except ValueError:
        raise InvalidInput({"repeat_every_minutes": [REPEAT]}) from None


def steps(value: Any, *, organization_id: uuid.UUID) -> list[StepInput]:
    """The steps of a policy: 1..MAX_STEPS, delays strictly increasing, each with at least
    one channel of the organization (a foreign or unknown id is refused alike)."""
    errors: FieldErrors = {}
    if not isinstance(value, list):
        raise InvalidInput({"steps": [NOT_A_LIST]})
    if not value or len(value) > MAX_STEPS:
        raise InvalidInput({"steps": [NO_STEPS if not value else TOO_MANY_STEPS]})
    wanted = {pk for item in value for pk in _channel_ids(item)}
    found = NotificationChannel.objects.filter(organization_id=organization_id, pk__in=wanted)
    channels = {channel.pk: channel for channel in found.without_secrets()}
    checked: list[StepInput] = []
    previous: int | None = None
    for index, item in enumerate(value):
        minutes, chosen = _step(item, f"steps[{index}]", channels, errors)
        if minutes is not None and previous is not None and minutes <= previous:
            errors[f"steps[{index}].after_minutes"] = [NOT_LATER.format(minutes=previous)]
        previous = minutes if minutes is not None else previous
        if minutes is not None and chosen:
            checked.append(StepInput(minutes, chosen))
    if errors:
        raise InvalidInput(errors)
    return checked


def _channel_ids(item: Any) -> list[uuid.UUID]:
    """The well-formed channel ids of a step, for the one query that loads them all."""
    if not isinstance(item, Mapping) or not isinstance(item.get("channels"), list):
        return []
    found = []
    for value in item["channels"]:
        try:
            found.append(uuid.UUID(str(value)))
        except ValueError:
            continue
    return found


def _step(
    item: Any,
    name: str,
    channels: Mapping[uuid.UUID, NotificationChannel],
    errors: FieldErrors,
) -> tuple[int | None, tuple[NotificationChannel, ...]]:
    """One step's delay and channels (None, empty: refused), its errors added under `name`."""
    if not isinstance(item, Mapping):
        errors[name] = [NOT_A_STEP]
        return None, ()
    for key in sorted(set(item) - STEP_KEYS):
        errors[f"{name}.{key}"] = [UNKNOWN_KEY]
    minutes: int | None = None
    try:
        minutes = _minutes(item.get("after_minutes"), 0)
    except ValueError:
        errors[f"{name}.after_minutes"] = [MINUTES]
    chosen = _step_channels(item.get("channels"), channels)
    if isinstance(chosen, list):
        errors[f"{name}.channels"] = chosen
        return minutes, ()
    return minutes, chosen


def _step_channels(
    value: Any, channels: Mapping[uuid.UUID, NotificationChannel]
) -> tuple[NotificationChannel, ...] | list[str]:
    """The step's channels, or the messages saying what is wrong with them."""
    if not isinstance(value, list):
        return [NO_CHANNELS if value is None else "Expected a list of channel ids."]
    if not value:
        return [NO_CHANNELS]
    if len(value) > MAX_STEP_CHANNELS:
        return [TOO_MANY_CHANNELS]
    chosen: dict[uuid.UUID, NotificationChannel] = {}
    problems: list[str] = []
    for raw in value:
        try:
            pk = uuid.UUID(str(raw))
        except ValueError:
            problems.append(NOT_A_CHANNEL_ID.format(value=str(raw)[:40]))
            continue
        if pk not in channels:
            problems.append(UNKNOWN_CHANNEL.format(value=pk))
            continue
        chosen[pk] = channels[pk]
    return problems or tuple(chosen.values())
