"""What each probe kind accepts in `endpoint.config`, and its defaults.

The stored config is the validated one with every default filled in, so probes read it as is
and users see exactly what will be probed. Unknown options are refused, so a typo never
passes silently.
"""

from collections.abc import Mapping
from typing import Any

from healthmon.errors import FieldErrors, InvalidInput
from monitoring.heartbeats import (
    DEFAULT_GRACE_SECONDS,
    MIN_GRACE_SECONDS,
    heartbeat_errors,
)
from monitoring.locations import DEFAULT_QUORUM, QUORUM_WORDS
from monitoring.models import (
    MAX_HEARTBEAT_SECONDS,
    EndpointType,
)
from monitoring.schedules import Schedule, schedule_errors, schedule_of
from monitoring.validation.assertions import MAX_ASSERTIONS, Assertions
from monitoring.validation.certificates import CACertificate, ExpiryThresholds
from monitoring.validation.locations import MAX_ENDPOINT_LOCATIONS
from monitoring.validation.options import (
    UNKNOWN_OPTION,
    Boolean,
    Choice,
    Headers,
    Integer,
    IntegerList,
    Options,
    Quorum,
    Text,
    TextList,
    merge_errors,
)

# The API contract's name; `degraded_threshold_ms`, the name before it, is read as it for one
# release (stored configs were renamed by migration 0014) and refused next to it.
DEGRADED = "degraded_above_ms"
DEGRADED_ALIAS = "degraded_threshold_ms"
# Every probed kind accepts these; the kinds below add their own (stored in this order).
_COMMON: Options = {
    DEGRADED: Integer(
        minimum=1,
        maximum=600_000,
        nullable=True,
        help="A successful check slower than this marks the endpoint degraded.",
    ),
    # Stored only when given: configs written before locations existed read as the default.
    "quorum": Quorum(
        words=QUORUM_WORDS,
        maximum=MAX_ENDPOINT_LOCATIONS,
        default=lambda: DEFAULT_QUORUM,
        filled=False,
        help="How many of the endpoint's online locations must fail in a round for it to "
        "be down (fewer: degraded): `any`, `majority`, `all` or a number, at most the "
        "number of its locations.",
    ),
}
_VERIFY: Options = {
    **_COMMON,
    "verify_tls": Boolean(
        default=lambda: True, help="Check the server's certificate (on by default)."
    ),
}
# Kinds whose checks record the certificate (and can trust a private CA). PostgreSQL is not
# one: libpq shows Python no certificate, and reads a CA only from a file.
_TLS: Options = {
    **_VERIFY,
    "certificate_expiry_days": ExpiryThresholds(
        help="Warn this many days before the certificate expires, or at a share of its "
        'lifetime ("20%").'
    ),
    "ca_certificate": CACertificate(
        help="A private CA (PEM) to trust for this endpoint, besides the system's CAs."
    ),
}
_HTTP_BASED: Options = {**_TLS, "headers": Headers(help="Extra request headers.")}
# The kinds whose response a user may assert on (a WebSocket's is a handshake, a custom
# endpoint's is not known to be HTTP).
_ASSERTING: Options = {
    "assertions": Assertions(
        help=f"Up to {MAX_ASSERTIONS} checks of the response, in order; the first unmet "
        "one fails the check."
    ),
}


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
        **_ASSERTING,
    },
    EndpointType.GRAPHQL: {
        **_HTTP_BASED,
        "query": _text("{ __typename }", max_length=10_000),
        **_ASSERTING,
    },
    EndpointType.GRPC: {
        **_TLS,
        "service": _text(max_length=200, blank=True, help="Empty: the whole server."),
        "tls": Boolean(default=lambda: False, help="grpcs:// targets always use TLS."),
    },
    EndpointType.POSTGRESQL: _VERIFY,
    EndpointType.MYSQL: _TLS,
    EndpointType.REDIS: _TLS,
    EndpointType.ELASTICSEARCH: {
        **_HTTP_BASED,
        "min_status": Choice(
            choices=("green", "yellow", "red"),
            default=lambda: "yellow",
            help="The worst cluster status that still counts as up.",
        ),
        **_ASSERTING,
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
    EndpointType.TCP: {
        **_COMMON,
        "send": _text(
            max_length=1000,
            blank=True,
            trim=False,
            help="Text to send once connected (line ends as \\r\\n in JSON); empty: nothing.",
        ),
        "expect": _text(
            max_length=1000,
            blank=True,
            trim=False,
            help="Text the server must send (its banner, or its answer to `send`); "
            "empty: connecting is enough.",
        ),
    },
    EndpointType.SMTP: {
        **_TLS,
        "starttls": Boolean(
            default=lambda: False,
            help="Require STARTTLS on smtp:// (it is used whenever offered); "
            "smtps:// is TLS from the start.",
        ),
    },
    EndpointType.CUSTOM: _HTTP_BASED,
    EndpointType.ICMP: {
        **_COMMON,
        "count": Integer(
            minimum=1, maximum=10, default=lambda: 3, help="Echo requests sent per check."
        ),
        "max_loss_percent": Integer(
            minimum=0,
            maximum=100,
            default=lambda: 0,
            help="More packet loss than this marks the endpoint degraded; losing all is down.",
        ),
    },
    EndpointType.DNS: {
        **_COMMON,
        "record_type": Choice(
            choices=("A", "AAAA", "CNAME", "MX", "NS", "TXT", "SOA", "SRV", "CAA", "PTR"),
            default=lambda: "A",
        ),
        "expected": TextList(
            item=Text(default=str, max_length=1000),
            max_items=50,
            help="Answers that must all be present (case and a final dot do not matter); "
            "empty: any answer.",
        ),
    },
    EndpointType.TLS: _TLS,
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
    given = _given_names(options, config, errors)
    for name, option in options.items():
        if given[name] not in config and not option.filled:
            continue
        try:
            cleaned[name] = (
                option.clean(config[given[name]]) if given[name] in config else option.default()
            )
        except InvalidInput as exc:
            merge_errors(errors, exc.nested(given[name]).errors)
    aliases = {DEGRADED_ALIAS} if DEGRADED in options else set()
    for name in sorted(set(config) - set(options) - aliases):
        merge_errors(errors, InvalidInput(UNKNOWN_OPTION).nested(str(name)).errors)
    if endpoint_type == EndpointType.HEARTBEAT and not errors:
        schedule = {**cleaned, "cron": cleaned["cron"] or None}  # empty: the period
        for key, messages in schedule_errors(schedule).items():
            errors[key.removeprefix("config.")] = messages
    if errors:
        raise InvalidInput(errors)
    return cleaned


def _given_names(
    options: Options, config: Mapping[str, Any], errors: FieldErrors
) -> dict[str, str]:
    """The key each option is read from: its own, or the old name it had (one release)."""
    given = {name: name for name in options}
    if DEGRADED in options and DEGRADED_ALIAS in config:
        if DEGRADED in config:
            message = f"{DEGRADED_ALIAS} is the old name of {DEGRADED}: give one of them."
            errors[DEGRADED_ALIAS] = [message]
        else:
            given[DEGRADED] = DEGRADED_ALIAS
    return given


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
