"""The one validation of what a user writes about an endpoint, for the API and the pages alike.

Per-type probe options (`endpoint.config`): what each kind accepts, and its defaults. The
stored config is the validated one with every default filled in, so probes read it as is and
users see exactly what will be probed. Unknown options are refused, so a typo never passes
silently. Then the rules that tie an endpoint's fields together: the target fits the type
(`monitoring.targets`), the timeout stays below the interval, and secrets sent back masked are
restored only for the service they belong to.

Plain Python raising `InvalidInput` with every bad option at once, in the words clients
already know from the API's field checks.
"""

import json
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from healthmon.errors import NON_FIELD, FieldErrors, InvalidInput
from monitoring.heartbeats import (
    DEFAULT_GRACE_SECONDS,
    MIN_GRACE_SECONDS,
    NO_TARGET,
    THRESHOLD_ONE,
    heartbeat_errors,
)
from monitoring.models import (
    MAX_HEARTBEAT_SECONDS,
    MAX_INTERVAL_SECONDS,
    MAX_THRESHOLD,
    MAX_TIMEOUT_SECONDS,
    Endpoint,
    EndpointType,
)
from monitoring.schedules import Schedule, schedule_errors, schedule_of
from monitoring.slugs import slug_errors
from monitoring.targets import (
    MASK,
    MAX_TARGET_LENGTH,
    TargetError,
    has_secrets,
    restore_config_secrets,
    restore_target_secrets,
    same_destination,
    validate_target,
)

DEFAULT_INTERVAL = 60
DEFAULT_TIMEOUT = 10
MAX_NAME_LENGTH = 200
NOT_NULL = "This field may not be null."
REQUIRED = "This field is required."
UNKNOWN_OPTION = "Unknown option for this endpoint type."


def _merge(errors: FieldErrors, more: FieldErrors) -> None:
    for name, messages in more.items():
        errors.setdefault(name, []).extend(messages)


@dataclass(frozen=True, kw_only=True)
class Option:
    """One option of a kind: how a given value is read, and its value when none is given."""

    default: Callable[[], Any]
    nullable: bool = False
    help: str = ""

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
                _merge(errors, exc.nested(str(index)).errors)
        if errors:
            raise InvalidInput(errors)
        if len(numbers) > self.max_items:
            raise InvalidInput(f"Ensure this field has no more than {self.max_items} elements.")
        return numbers


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
                _merge(errors, exc.nested(str(name)).errors)
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

# Every kind accepts these; the kinds below add their own (stored in this order).
_COMMON: Options = {
    "degraded_threshold_ms": Integer(
        minimum=1,
        maximum=600_000,
        nullable=True,
        help="A successful check slower than this marks the endpoint degraded.",
    ),
}
_TLS: Options = {
    **_COMMON,
    "verify_tls": Boolean(
        default=lambda: True, help="Check the server's certificate (on by default)."
    ),
}
_HTTP_BASED: Options = {**_TLS, "headers": Headers(help="Extra request headers.")}


def _text(default: str = "", **rules: Any) -> Text:
    return Text(default=lambda: default, **rules)


OPTIONS: dict[str, Options] = {
    EndpointType.HTTP: {
        **_HTTP_BASED,
        "method": Choice(choices=("GET", "HEAD", "POST"), default=lambda: "GET"),
        "expected_status": IntegerList(
            item=Integer(minimum=100, maximum=599),
            max_items=50,
            default=lambda: [200],
            help="Status codes that count as up.",
        ),
        "body_contains": _text(max_length=1000, blank=True, trim=False),
        "follow_redirects": Boolean(default=lambda: True, help="Up to 5 hops."),
    },
    EndpointType.GRAPHQL: {
        **_HTTP_BASED,
        "query": _text("{ __typename }", max_length=10_000),
    },
    EndpointType.GRPC: {
        **_TLS,
        "service": _text(max_length=200, blank=True, help="Empty: the whole server."),
        "tls": Boolean(default=lambda: False, help="grpcs:// targets always use TLS."),
    },
    EndpointType.POSTGRESQL: _TLS,
    EndpointType.MYSQL: _TLS,
    EndpointType.REDIS: _TLS,
    EndpointType.ELASTICSEARCH: {
        **_HTTP_BASED,
        "min_status": Choice(
            choices=("green", "yellow", "red"),
            default=lambda: "yellow",
            help="The worst cluster status that still counts as up.",
        ),
    },
    EndpointType.WEBSOCKET: {
        **_HTTP_BASED,
        "send": _text(
            max_length=1000,
            blank=True,
            trim=False,
            help="A text message to send; empty: a protocol-level ping.",
        ),
        "expect": _text(max_length=1000, blank=True, trim=False),
    },
    EndpointType.CUSTOM: _HTTP_BASED,
    EndpointType.HEARTBEAT: {
        "cron": _text(
            max_length=200,
            blank=True,
            help="A 5-field cron expression; when given, it replaces the interval. "
            "Empty: every interval.",
        ),
        "timezone": _text("UTC", max_length=64, help="The IANA time zone the cron runs in."),
        "grace_seconds": Integer(
            minimum=MIN_GRACE_SECONDS,
            maximum=MAX_HEARTBEAT_SECONDS,
            default=lambda: DEFAULT_GRACE_SECONDS,
            help="How late a ping may be before the endpoint is down.",
        ),
        "min_run_seconds": Integer(
            minimum=1,
            maximum=MAX_HEARTBEAT_SECONDS,
            nullable=True,
            help="A run (start, then success) shorter than this is a failure.",
        ),
    },
}


def option_names(endpoint_type: str) -> frozenset[str]:
    """The options a kind accepts."""
    return frozenset(OPTIONS[endpoint_type])


def validate_config(endpoint_type: str, config: Any) -> dict[str, Any]:
    """The config with defaults filled in, or InvalidInput naming each bad option."""
    if config is None:
        raise InvalidInput("No data provided")
    if not isinstance(config, Mapping):
        raise InvalidInput(f"Invalid data. Expected a dictionary, but got {type(config).__name__}.")
    options = OPTIONS[endpoint_type]
    cleaned: dict[str, Any] = {}
    errors: FieldErrors = {}
    for name, option in options.items():
        try:
            cleaned[name] = option.clean(config[name]) if name in config else option.default()
        except InvalidInput as exc:
            _merge(errors, exc.nested(name).errors)
    for name in sorted(set(config) - set(options)):
        _merge(errors, InvalidInput(UNKNOWN_OPTION).nested(str(name)).errors)
    if endpoint_type == EndpointType.HEARTBEAT and not errors:
        schedule = {**cleaned, "cron": cleaned["cron"] or None}  # empty: the period
        for key, messages in schedule_errors(schedule).items():
            errors[key.removeprefix("config.")] = messages
    if errors:
        raise InvalidInput(errors)
    return cleaned


def schedule_input(*, interval_seconds: str, cron: str, timezone: str) -> Schedule:
    """A heartbeat's schedule as the form holds it while being typed (a period, or a cron in
    a zone), checked as a saved one would be: the form shows its next times before saving."""
    errors: FieldErrors = {}
    interval = 0
    if not cron.strip():  # the period counts only without a cron
        try:
            interval = int(interval_seconds)
        except ValueError:
            errors["interval_seconds"] = ["A valid integer is required."]
        else:
            kind = {"type": EndpointType.HEARTBEAT}
            errors.update(heartbeat_errors(kind, current_type=None, interval=interval))
    typed = {"cron": cron.strip(), "timezone": timezone.strip() or "UTC"}
    try:
        config = validate_config(EndpointType.HEARTBEAT, typed)
    except InvalidInput as exc:
        errors.update(exc.errors)
    if errors:
        raise InvalidInput(errors)
    return schedule_of(interval, config)


# --- An endpoint's fields, alone and together -----------------------------------------------


def endpoint_limits() -> dict[str, dict[str, int]]:
    """The bounds of an endpoint's fields (`min`, `max`, `maxlength`): the API's fields, its
    schema and the page form's HTML attributes are built from these."""
    return {
        "name": {"maxlength": MAX_NAME_LENGTH},
        "target": {"maxlength": MAX_TARGET_LENGTH},
        # A heartbeat's period may be a year; probed endpoints are held to a day apart.
        "interval_seconds": {"min": settings.MIN_CHECK_INTERVAL, "max": MAX_HEARTBEAT_SECONDS},
        "timeout_seconds": {"min": 1, "max": MAX_TIMEOUT_SECONDS},
        "failure_threshold": {"min": 1, "max": MAX_THRESHOLD},
        "recovery_threshold": {"min": 1, "max": MAX_THRESHOLD},
    }


@dataclass
class _Check:
    """An endpoint's values being checked: those given, the endpoint they change (None on
    creation), the fields already refused on their own, and the errors found so far."""

    values: dict[str, Any]
    current: Endpoint | None
    failed: frozenset[str] = frozenset()
    errors: FieldErrors = field(default_factory=dict)

    def given(self, name: str) -> bool:
        return name in self.values

    def value(self, name: str) -> Any:
        """The value given, else the endpoint's current one."""
        if name in self.values or self.current is None:
            return self.values.get(name)
        return getattr(self.current, name)


def endpoint_validate(
    values: Mapping[str, Any], *, current: Endpoint | None, failed: Collection[str] = ()
) -> dict[str, Any]:
    """Check an endpoint's interval, timeout, target and config against each other and the
    type, for a new endpoint (`current` None) or a change to `current`.

    `values` are the fields given, each already of its type (an integer, a choice); `failed`
    names fields refused on their own (absent from `values`): the rules that need one of
    them are skipped, the others still run, so one answer names every bad field. Returns
    the values with the target normalised, secrets sent back masked restored, the config's
    defaults filled in and, for a new endpoint without one, the derived timeout
    (`default_timeout`); raises InvalidInput naming every bad field (a config's options as
    `config.<option>`).
    """
    check = _Check(dict(values), current, frozenset(failed))
    heartbeat = _check_heartbeat(check)
    _check_slug(check, heartbeat=heartbeat)
    if heartbeat:
        pass  # a heartbeat has no target to check, and a refused one no config either
    elif "type" in check.failed:
        pass  # neither the target nor the options can be judged without the type
    elif "target" in check.failed:
        _check_config_alone(check, check.value("type"))
    else:
        _check_target_and_config(check, check.value("type"))
    if check.errors:
        raise InvalidInput(check.errors)
    return check.values


def _check_heartbeat(check: _Check) -> bool:
    """Apply a heartbeat's rules (`monitoring.heartbeats`); whether the endpoint is one
    (or is refused for becoming or leaving one), so that the probe rules do not apply."""
    current_type = check.current.type if check.current else None
    if "type" in check.failed or EndpointType.HEARTBEAT not in (current_type, check.value("type")):
        _check_timing(check)
        if check.current is None and not check.given("target") and "target" not in check.failed:
            check.errors["target"] = [REQUIRED]  # only heartbeats go without
            check.failed = check.failed | {"target"}
        return False
    failed = "interval_seconds" in check.failed
    interval = None if failed else int(check.value("interval_seconds") or 0)
    errors = heartbeat_errors(check.values, current_type=current_type, interval=interval)
    check.errors.update(errors)
    if "interval_seconds" not in errors:
        _check_timing(check, heartbeat=True)
    if check.current is None and "target" not in errors:
        check.values["target"] = NO_TARGET
    # A failure ping opens an incident at once and one success ends it: the thresholds are 1
    # (set on creation, where the API fills in its defaults; refused otherwise on a change).
    for name in ("failure_threshold", "recovery_threshold"):
        if check.current is None:
            check.values[name] = 1
        elif check.given(name) and check.values[name] != 1:
            check.errors[name] = [THRESHOLD_ONE]
    if "type" not in errors:
        _check_config(check, EndpointType.HEARTBEAT)
    return True


def _check_slug(check: _Check, *, heartbeat: bool) -> None:
    """A slug given, or kept while the endpoint moves to another project, must be free there."""
    if check.failed & {"slug", "type"} or not (check.given("slug") or check.given("project")):
        return
    project = None if "project" in check.failed else check.value("project")
    check.errors.update(
        slug_errors(
            check.value("slug"),
            heartbeat=heartbeat,
            project_id=getattr(project, "pk", None),
            endpoint_id=check.current.pk if check.current else None,
        )
    )


def _check_target_and_config(check: _Check, endpoint_type: str) -> None:
    try:
        if check.given("target") or check.given("type"):
            check.values["target"] = _target(check, endpoint_type)
    except TargetError as exc:
        check.errors["target"] = [str(exc)]
        _check_config_alone(check, endpoint_type)
    else:
        _check_config(check, endpoint_type)


def default_timeout(interval: int) -> int:
    """The timeout of a new endpoint created without one: DEFAULT_TIMEOUT, or one second
    less than a shorter interval (the API's schema and the README say so)."""
    return min(DEFAULT_TIMEOUT, interval - 1)


def timeout_too_long(interval: int) -> str:
    """The refusal of a timeout that is not below the interval."""
    return f"Must be less than the interval ({interval} s)."


def _check_timing(check: _Check, *, heartbeat: bool = False) -> None:
    if "interval_seconds" in check.failed:
        return
    interval = int(check.value("interval_seconds") or 0)
    if not heartbeat and check.given("interval_seconds"):
        if interval < settings.MIN_CHECK_INTERVAL:
            check.errors["interval_seconds"] = [
                f"Ensure this value is greater than or equal to {settings.MIN_CHECK_INTERVAL}."
            ]
            return
        if interval > MAX_INTERVAL_SECONDS:  # the API's field allows a heartbeat's year
            check.errors["interval_seconds"] = [
                f"Ensure this value is less than or equal to {MAX_INTERVAL_SECONDS}."
            ]
            return
    if check.current is None and not check.given("timeout_seconds"):
        if "timeout_seconds" not in check.failed:
            check.values["timeout_seconds"] = default_timeout(interval)
        return
    if "timeout_seconds" in check.failed:
        return
    if int(check.value("timeout_seconds") or 0) >= interval:
        check.errors["timeout_seconds"] = [timeout_too_long(interval)]


def _target(check: _Check, endpoint_type: str) -> str:
    """The new target, checked against the type, with secrets sent back masked restored."""
    target = validate_target(endpoint_type, str(check.value("target")))
    if check.current is None or not check.given("target"):
        return target
    return restore_target_secrets(target, check.current.target)


def _check_config(check: _Check, endpoint_type: str) -> None:
    if "config" in check.failed:
        return
    if not any(check.given(name) for name in ("config", "type", "target")) and check.current:
        return
    _validate_config_into(check, endpoint_type, lambda: _config(check), keep=True)


def _check_config_alone(check: _Check, endpoint_type: str) -> None:
    """Check a config given beside a bad target, so that one answer names both; its masked
    secrets cannot be restored without a valid target, and nothing is kept."""
    if check.given("config"):
        _validate_config_into(check, endpoint_type, lambda: check.values["config"], keep=False)


def _validate_config_into(
    check: _Check, endpoint_type: str, config: Callable[[], Any], *, keep: bool
) -> None:
    """Validate a config (restoring its masked secrets may fail too), recording its errors
    under `config`; keep the result if asked."""
    try:
        validated = validate_config(endpoint_type, config())
    except TargetError as exc:
        check.errors["config"] = [str(exc)]
    except InvalidInput as exc:
        check.errors.update(exc.nested("config").errors)
    else:
        if keep:
            check.values["config"] = validated


def _config(check: _Check) -> Any:
    """The new config, with secrets sent back masked restored.

    Stored secrets (an Authorization header, say) stay with their service: when the
    target points elsewhere, they must be sent again, never carried along.
    """
    current = check.current
    if current is None:
        return check.values.get("config", {})
    old: Any = current.config
    moved = not same_destination(check.value("target"), current.target)
    if not check.given("config"):  # a new type keeps the options it shares with the old one
        known = option_names(check.value("type"))
        kept = {name: value for name, value in old.items() if name in known}
        if moved and has_secrets(kept):
            raise TargetError(
                "The stored options hold secrets for the old target: send `config` again "
                "with the target."
            )
        return kept
    if moved and MASK in json.dumps(check.values["config"]):
        raise TargetError("Enter the secret values again: the target points elsewhere now.")
    return restore_config_secrets(check.values["config"], old)
