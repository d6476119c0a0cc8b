"""How one option of a probe kind is read: integers, booleans, choices, texts, lists and
request headers, each refusing a bad value with the API's own words."""

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from healthmon.errors import NON_FIELD, FieldErrors, InvalidInput

NOT_NULL = "This field may not be null."
REQUIRED = "This field is required."
UNKNOWN_OPTION = "Unknown option for this endpoint type."


def merge_errors(errors: FieldErrors, more: FieldErrors) -> None:
    for name, messages in more.items():
        errors.setdefault(name, []).extend(messages)


@dataclass(frozen=True, kw_only=True)
class Option:
    """One option of a kind: how a given value is read, and its value when none is given."""

    default: Callable[[], Any]
    nullable: bool = False
    help: str = ""
    # Whether a config stores the default when the option is not given; an option whose
    # default every reader knows (`quorum`) is stored only when given.
    filled: bool = True

    def clean(self, value: Any) -> Any:
        """The value as stored, or InvalidInput (its own messages under `non_field_errors`,
        an element's under the element's index or name)."""
        if value is None:
            if self.nullable:
                return None
            raise InvalidInput(NOT_NULL)
        return self.parse(value)

    def parse(self, value: Any) -> Any:
        """Read a value that is not null."""
        raise NotImplementedError


_DECIMAL_ZEROS = re.compile(r"\.0*\s*$")  # "5.0" reads as 5, "5.5" does not


@dataclass(frozen=True, kw_only=True)
class Integer(Option):
    """A whole number within bounds; "5" and 5.0 read as 5."""

    minimum: int
    maximum: int
    default: Callable[[], Any] = lambda: None

    def parse(self, value: Any) -> int:
        """The number, within bounds."""
        if isinstance(value, str) and len(value) > 1000:
            raise InvalidInput("String value too large.")
        try:
            number = int(_DECIMAL_ZEROS.sub("", str(value)))
        except (ValueError, TypeError) as exc:
            raise InvalidInput("A valid integer is required.") from exc
        if number > self.maximum:
            raise InvalidInput(f"Ensure this value is less than or equal to {self.maximum}.")
        if number < self.minimum:
            raise InvalidInput(f"Ensure this value is greater than or equal to {self.minimum}.")
        return number


# 1 also matches True and 1.0, 0 matches False and 0.0 (equal numbers hash alike).
_TRUE = frozenset({"t", "y", "yes", "true", "on", "1", 1})
_FALSE = frozenset({"f", "n", "no", "false", "off", "0", 0})


@dataclass(frozen=True, kw_only=True)
class Boolean(Option):
    """A yes or no; also "true", "off", 1 and the like."""

    def parse(self, value: Any) -> bool:
        """True or False."""
        key = value.lower() if isinstance(value, str) else value
        try:
            if key in _TRUE:
                return True
            if key in _FALSE:
                return False
        except TypeError:  # a list or an object: not a boolean either
            pass
        raise InvalidInput("Must be a valid boolean.")


@dataclass(frozen=True, kw_only=True)
class Choice(Option):
    """One of a few words."""

    choices: tuple[str, ...]

    def parse(self, value: Any) -> str:
        """The word chosen."""
        if str(value) not in self.choices:
            raise InvalidInput(f'"{value}" is not a valid choice.')
        return str(value)


@dataclass(frozen=True, kw_only=True)
class Text(Option):
    """A string (numbers are taken as written) of bounded length."""

    max_length: int
    blank: bool = False
    trim: bool = True  # strip surrounding white space; off where it is meaningful

    def parse(self, value: Any) -> str:
        """The string, trimmed unless told otherwise."""
        if value == "" or (self.trim and str(value).strip() == ""):
            if not self.blank:
                raise InvalidInput("This field may not be blank.")
            return ""
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise InvalidInput("Not a valid string.")
        text = str(value).strip() if self.trim else str(value)
        messages = []
        if len(text) > self.max_length:
            messages.append(f"Ensure this field has no more than {self.max_length} characters.")
        if "\x00" in text:
            messages.append("Null characters are not allowed.")
        surrogate = next((ch for ch in text if 0xD800 <= ord(ch) <= 0xDFFF), None)
        if surrogate is not None:
            messages.append(f"Surrogate characters are not allowed: U+{ord(surrogate):X}.")
        if messages:
            raise InvalidInput({NON_FIELD: messages})
        return text


@dataclass(frozen=True, kw_only=True)
class IntegerList(Option):
    """A non-empty list of whole numbers; a bad one is named by its index."""

    item: Integer
    max_items: int

    def parse(self, value: Any) -> list[int]:
        """The numbers, in the order given."""
        if isinstance(value, str | Mapping) or not hasattr(value, "__iter__"):
            raise InvalidInput(f'Expected a list of items but got type "{type(value).__name__}".')
        if len(value) == 0:
            raise InvalidInput("This list may not be empty.")
        numbers: list[int] = []
        errors: FieldErrors = {}
        for index, item in enumerate(value):
            try:
                numbers.append(self.item.clean(item))
            except InvalidInput as exc:
                merge_errors(errors, exc.nested(str(index)).errors)
        if errors:
            raise InvalidInput(errors)
        if len(numbers) > self.max_items:
            raise InvalidInput(f"Ensure this field has no more than {self.max_items} elements.")
        return numbers


@dataclass(frozen=True, kw_only=True)
class TextList(Option):
    """A list of strings (empty allowed); a bad one is named by its index."""

    item: Text
    max_items: int
    default: Callable[[], Any] = list

    def parse(self, value: Any) -> list[str]:
        """The strings, in the order given."""
        if isinstance(value, str | Mapping) or not isinstance(value, list | tuple):
            raise InvalidInput(f'Expected a list of items but got type "{type(value).__name__}".')
        if len(value) > self.max_items:
            raise InvalidInput(f"Ensure this field has no more than {self.max_items} elements.")
        texts: list[str] = []
        errors: FieldErrors = {}
        for index, item in enumerate(value):
            try:
                texts.append(self.item.clean(item))
            except InvalidInput as exc:
                merge_errors(errors, exc.nested(str(index)).errors)
        if errors:
            raise InvalidInput(errors)
        return texts


@dataclass(frozen=True, kw_only=True)
class Quorum(Option):
    """How many of an endpoint's locations must fail for a round to fail: a word of
    `words`, or a whole number from 1 to `maximum` (not a boolean: `true` is no count)."""

    words: tuple[str, ...]
    maximum: int

    def parse(self, value: Any) -> str | int:
        """The word, or the number."""
        if isinstance(value, str) and value in self.words:
            return value
        if isinstance(value, str) and value.strip().isdecimal() and len(value) < 10:
            value = int(value)  # a page form's box
        if isinstance(value, bool) or not isinstance(value, int):
            words = ", ".join(f"`{word}`" for word in self.words)
            raise InvalidInput(f"Must be one of {words}, or a whole number of locations.")
        if value < 1:
            raise InvalidInput("Ensure this value is greater than or equal to 1.")
        if value > self.maximum:
            raise InvalidInput(f"Ensure this value is less than or equal to {self.maximum}.")
        return value


_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}")
_HEADER_VALUE = Text(default=str, max_length=4096, blank=True, trim=False)
MAX_HEADERS = 50
# Framing and hop-by-hop headers belong to the HTTP client: set by hand, they would let a
# probe smuggle a second request or break the exchange.
_RESERVED_HEADERS = frozenset(
    {
        "connection",
        "content-length",
        "expect",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)


@dataclass(frozen=True, kw_only=True)
class Headers(Option):
    """Extra request headers: RFC 9110 names, single-line values."""

    default: Callable[[], Any] = dict

    def parse(self, value: Any) -> dict[str, str]:
        """The headers; refuses bad names, line breaks in values and too many headers."""
        if not isinstance(value, dict):
            raise InvalidInput(
                f'Expected a dictionary of items but got type "{type(value).__name__}".'
            )
        headers: dict[str, str] = {}
        errors: FieldErrors = {}
        for name, item in value.items():
            try:
                headers[str(name)] = _HEADER_VALUE.clean(item)
            except InvalidInput as exc:
                merge_errors(errors, exc.nested(str(name)).errors)
        if errors:
            raise InvalidInput(errors)
        _check_headers(headers)
        return headers


def _check_headers(headers: dict[str, str]) -> None:
    if len(headers) > MAX_HEADERS:
        raise InvalidInput(f"At most {MAX_HEADERS} headers.")
    for name, value in headers.items():
        if not _HEADER_NAME.fullmatch(name):
            raise InvalidInput(f"{name!r} is not a valid header name.")
        if name.lower() in _RESERVED_HEADERS:
            raise InvalidInput(f"{name} is set by the probe itself.")
        if not value.isprintable() or not value.isascii():
            raise InvalidInput(f"The value of {name} must be printable ASCII on one line.")


Options = dict[str, Option]
