"""HTTP-family `config.assertions`: what a response must show, checked after the status.

Each assertion is `{source, property, comparison, target}`. Not every comparison makes sense
on every source (a body is not "less than" anything), so each source names the ones it
supports and the rest are refused at the comparison, as is a property where none is read,
a JMESPath expression that does not parse and a regular expression that does not compile.
The stored form always has the four keys: `property` and `target` are "" where unused, and
a numeric target is stored as a number.
"""

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import jmespath
import regex
from jmespath.exceptions import JMESPathError

from healthmon.errors import FieldErrors, InvalidInput
from monitoring.validation.options import REQUIRED, Option, Text, merge_errors

MAX_ASSERTIONS = 20
SOURCES = ("status_code", "header", "body", "json", "response_time")
COMPARISONS = (
    "equals",
    "not_equals",
    "contains",
    "not_contains",
    "matches",
    "less_than",
    "greater_than",
    "exists",
    "not_exists",
)
_TEXT = ("equals", "not_equals", "contains", "not_contains", "matches")
_ORDER = ("less_than", "greater_than")
_PRESENCE = ("exists", "not_exists")
# What each source can be compared by. A status code is a number (no substring of 503);
# a response time is only ever more or less than a bound; a header may be missing; a JSON
# value may be anything, so every comparison applies to it.
SUPPORTED: dict[str, tuple[str, ...]] = {
    "status_code": ("equals", "not_equals", *_ORDER),
    "header": (*_TEXT, *_PRESENCE),
    "body": _TEXT,
    "json": COMPARISONS,
    "response_time": _ORDER,
}
NUMERIC = ("status_code", "response_time")
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}")
_PROPERTY = Text(default=str, max_length=1000, blank=True)
_TARGET = Text(default=str, max_length=1000, blank=True, trim=False)


def _number(value: Any) -> int | float:
    if isinstance(value, bool):
        raise InvalidInput("A valid number is required.")
    try:
        number = float(str(value).strip())
    except ValueError as exc:
        raise InvalidInput("A valid number is required.") from exc
    if number != number or number in (float("inf"), float("-inf")):
        raise InvalidInput("A valid number is required.")
    return int(number) if number.is_integer() else number


def _property(source: str, value: Any) -> str:
    """The header name or JMESPath expression; "" for the sources that read no property."""
    text = _PROPERTY.clean("" if value is None else value)
    if source not in ("header", "json"):
        if text:
            raise InvalidInput(f"{source} has no property: leave it empty.")
        return ""
    if not text:
        raise InvalidInput(REQUIRED)
    if source == "header" and not _HEADER_NAME.fullmatch(text):
        raise InvalidInput(f"{text!r} is not a valid header name.")
    if source == "json":
        try:
            jmespath.compile(text)
        except JMESPathError as exc:
            raise InvalidInput("Not a valid JMESPath expression.") from exc
    return text


def _target(source: str, comparison: str, value: Any) -> str | int | float:
    """The value compared with: a number for an order or a numeric source, a compiled-once
    regular expression for `matches`, nothing for `exists`."""
    if comparison in _PRESENCE:
        if value not in (None, ""):
            raise InvalidInput(f"{comparison} takes no target: leave it empty.")
        return ""
    if value is None or value == "":
        raise InvalidInput(REQUIRED)
    if comparison in _ORDER or source in NUMERIC:
        return _number(value)
    text = str(_TARGET.clean(value))
    if comparison == "matches":
        try:
            regex.compile(text)
        except (regex.error, RecursionError, OverflowError) as exc:
            raise InvalidInput("Not a valid regular expression.") from exc
    return text


_Reader = Callable[[], Any]


def _read(errors: FieldErrors, field: str, read: _Reader) -> Any:
    """A part read, or None with its messages noted under `field`."""
    try:
        return read()
    except InvalidInput as exc:
        merge_errors(errors, exc.nested(field).errors)
        return None


def clean_assertion(value: Any) -> dict[str, Any]:
    """One assertion as stored, or InvalidInput naming each bad part."""
    if not isinstance(value, Mapping):
        raise InvalidInput(f'Expected a dictionary of items but got type "{type(value).__name__}".')
    errors: FieldErrors = {}
    unknown = sorted(set(value) - {"source", "property", "comparison", "target"})
    for name in unknown:
        errors[str(name)] = ["Unknown field of an assertion."]
    source = _read(errors, "source", lambda: _choice(value.get("source"), SOURCES))
    comparison = _read(errors, "comparison", lambda: _comparison(source, value.get("comparison")))
    prop = source and _read(errors, "property", lambda: _property(source, value.get("property")))
    target = (
        source
        and comparison
        and _read(errors, "target", lambda: _target(source, comparison, value.get("target")))
    )
    if errors:
        raise InvalidInput(errors)
    return {"source": source, "property": prop, "comparison": comparison, "target": target}


def _choice(value: Any, choices: tuple[str, ...]) -> str:
    if value is None or value == "":
        raise InvalidInput(REQUIRED)
    if not isinstance(value, str) or value not in choices:
        raise InvalidInput(f'"{value}" is not a valid choice.')
    return value


def _comparison(source: str | None, value: Any) -> str:
    comparison = _choice(value, COMPARISONS)
    if source is not None and comparison not in SUPPORTED[source]:
        supported = ", ".join(SUPPORTED[source])
        raise InvalidInput(f"{source} supports only: {supported}.")
    return comparison


@dataclass(frozen=True, kw_only=True)
class Assertions(Option):
    """At most MAX_ASSERTIONS assertions; a bad part is named `[index].part`."""

    default: Callable[[], Any] = list

    def parse(self, value: Any) -> list[dict[str, Any]]:
        """The assertions, in the order given (the order they are checked in)."""
        if isinstance(value, str | Mapping) or not hasattr(value, "__iter__"):
            raise InvalidInput(f'Expected a list of items but got type "{type(value).__name__}".')
        items = list(value)
        if len(items) > MAX_ASSERTIONS:
            raise InvalidInput(f"Ensure this field has no more than {MAX_ASSERTIONS} elements.")
        cleaned: list[dict[str, Any]] = []
        errors: FieldErrors = {}
        for index, item in enumerate(items):
            try:
                cleaned.append(clean_assertion(item))
            except InvalidInput as exc:
                merge_errors(errors, exc.nested(f"[{index}]").errors)
        if errors:
            raise InvalidInput(errors)
        return cleaned
