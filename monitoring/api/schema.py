"""The endpoint resource in OpenAPI: one schema per type, chosen by `type`, each with its
`config` keys as `monitoring.validation.OPTIONS` states them (bounds, choices, defaults).

Only the schema reads these classes; requests are parsed by `EndpointSerializer`.
"""

from typing import Any

from drf_spectacular.utils import OpenApiExample, PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers

from monitoring.api.serializers import ConfigField, EndpointSerializer
from monitoring.locations import QUORUM_WORDS
from monitoring.models import EndpointType
from monitoring.validation import (
    MAX_HEADERS,
    OPTIONS,
    Assertions,
    Boolean,
    Choice,
    Headers,
    Integer,
    IntegerList,
    Option,
    Quorum,
    Text,
    TextList,
)
from monitoring.validation.assertions import COMPARISONS, MAX_ASSERTIONS, SOURCES
from monitoring.validation.certificates import (
    MAX_CA_LENGTH,
    MAX_THRESHOLDS,
    CACertificate,
    ExpiryThresholds,
)
from monitoring.validation.locations import MAX_ENDPOINT_LOCATIONS

# One name per type, for the components (`HttpConfig`, `HttpEndpoint`, ...).
_NAMES: dict[str, str] = {
    EndpointType.HTTP: "Http",
    EndpointType.GRAPHQL: "GraphQL",
    EndpointType.GRPC: "Grpc",
    EndpointType.POSTGRESQL: "PostgreSQL",
    EndpointType.MYSQL: "MySQL",
    EndpointType.REDIS: "Redis",
    EndpointType.ELASTICSEARCH: "Elasticsearch",
    EndpointType.WEBSOCKET: "WebSocket",
    EndpointType.TCP: "Tcp",
    EndpointType.SMTP: "Smtp",
    EndpointType.CUSTOM: "Custom",
    EndpointType.HEARTBEAT: "Heartbeat",
    EndpointType.ICMP: "Icmp",
    EndpointType.DNS: "Dns",
    EndpointType.TLS: "Tls",
}


class _AssertionSchema(serializers.Serializer[Any]):
    """One of `config.assertions`, for the schema: which comparisons each source takes is in
    the README (a refused one is a 400 naming `config.assertions[i].comparison`)."""

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        # built here: `source` as a class attribute would shadow Field.source
        return {
            "source": serializers.ChoiceField(choices=SOURCES),
            "property": serializers.CharField(
                max_length=1000,
                allow_blank=True,
                help_text="A header name, or JMESPath for `json`.",
            ),
            "comparison": serializers.ChoiceField(choices=COMPARISONS),
            "target": serializers.CharField(
                max_length=1000,
                allow_blank=True,
                help_text="A number for status_code, response_time (ms) and the orders.",
            ),
        }


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string", "enum": list(QUORUM_WORDS)},
            {"type": "integer", "minimum": 1, "maximum": MAX_ENDPOINT_LOCATIONS},
        ]
    }
)
class QuorumField(serializers.JSONField):
    """`config.quorum`, for the schema: a word or a count of locations."""


def _option_field(option: Option) -> serializers.Field[Any, Any, Any, Any]:
    """The option as a serializer field, for its schema."""
    kwargs: dict[str, Any] = {"allow_null": option.nullable, "help_text": option.help or None}
    default = option.default()
    kwargs["default"] = default
    if isinstance(option, Integer):
        return serializers.IntegerField(
            min_value=option.minimum, max_value=option.maximum, **kwargs
        )
    if isinstance(option, Boolean):
        return serializers.BooleanField(**kwargs)
    if isinstance(option, Choice):
        return serializers.ChoiceField(choices=option.choices, **kwargs)
    if isinstance(option, Text):
        return serializers.CharField(
            max_length=option.max_length, allow_blank=option.blank, **kwargs
        )
    if isinstance(option, IntegerList):
        item = serializers.IntegerField(
            min_value=option.item.minimum, max_value=option.item.maximum
        )
        return serializers.ListField(
            child=item, min_length=1, max_length=option.max_items, **kwargs
        )
    if isinstance(option, TextList):
        text = serializers.CharField(max_length=option.item.max_length)
        return serializers.ListField(child=text, max_length=option.max_items, **kwargs)
    if isinstance(option, Headers):
        kwargs["help_text"] = f"{option.help} At most {MAX_HEADERS}; framing headers refused."
        return serializers.DictField(child=serializers.CharField(max_length=4096), **kwargs)
    if isinstance(option, Assertions):
        return serializers.ListField(child=_AssertionSchema(), max_length=MAX_ASSERTIONS, **kwargs)
    if isinstance(option, ExpiryThresholds):
        share = serializers.JSONField(help_text='Days (1-3650) or a share of the lifetime ("20%").')
        return serializers.ListField(child=share, max_length=MAX_THRESHOLDS, **kwargs)
    if isinstance(option, Quorum):
        kwargs["help_text"] = f"{option.help} Omitted: `{default}` (not stored)."
        return QuorumField(**kwargs)
    if isinstance(option, CACertificate):
        return serializers.CharField(max_length=MAX_CA_LENGTH, allow_blank=True, **kwargs)
    raise TypeError(f"No schema for {type(option).__name__}")  # a new kind of option


def _config_serializer(endpoint_type: str) -> type[serializers.Serializer[Any]]:
    """The options of one type, each with its default."""
    fields = {name: _option_field(option) for name, option in OPTIONS[endpoint_type].items()}
    label = EndpointType(endpoint_type).label
    fields["__doc__"] = f"The `config` of a {label} endpoint: unknown keys are refused."  # type: ignore[assignment]
    return type(f"{_NAMES[endpoint_type]}ConfigSerializer", (serializers.Serializer,), fields)


def _endpoint_serializer(endpoint_type: str) -> type[EndpointSerializer]:
    """The endpoint with `type` fixed to one kind and `config` typed as that kind's."""
    config = extend_schema_field(_config_serializer(endpoint_type))(
        type(f"{_NAMES[endpoint_type]}ConfigField", (ConfigField,), {})
    )
    label = EndpointType(endpoint_type).label
    body = {
        "type": serializers.ChoiceField(choices=[(endpoint_type, label)]),
        "config": config(required=False, help_text="Omitted keys take their defaults."),
        "__doc__": f"A {label} endpoint. {EndpointSerializer.__doc__}",
    }
    return type(f"{_NAMES[endpoint_type]}EndpointSerializer", (EndpointSerializer,), body)


ENDPOINT = PolymorphicProxySerializer(
    component_name="Endpoint",
    serializers={value: _endpoint_serializer(value) for value in EndpointType.values},
    resource_type_field_name="type",
)
ENDPOINTS = PolymorphicProxySerializer(
    component_name="Endpoint",
    serializers={value: _endpoint_serializer(value) for value in EndpointType.values},
    resource_type_field_name="type",
    many=True,
)

# Request examples; every one is created by a test (`tests/healthmon/test_openapi.py`). The
# project id is a placeholder: use one of yours.
EXAMPLE_PROJECT = "6f1c2b8e-0d3a-4c55-9e1f-2a7b9c4d8e10"
ENDPOINT_EXAMPLES = [
    OpenApiExample(
        "HTTP",
        request_only=True,
        value={
            "project": EXAMPLE_PROJECT,
            "name": "Checkout API",
            "type": "http",
            "target": "https://checkout.example.com/health",
            "interval_seconds": 60,
            "timeout_seconds": 10,
            "config": {"method": "GET", "expected_status": [200, 204]},
        },
    ),
    OpenApiExample(
        "PostgreSQL",
        request_only=True,
        value={
            "project": EXAMPLE_PROJECT,
            "name": "Orders database",
            "type": "postgresql",
            "target": "postgresql://monitor:secret@db.example.com:5432/orders",
            "interval_seconds": 30,
        },
    ),
    OpenApiExample(
        "GraphQL",
        request_only=True,
        value={
            "project": EXAMPLE_PROJECT,
            "name": "Catalog GraphQL",
            "type": "graphql",
            "target": "https://catalog.example.com/graphql",
            "config": {"query": "{ __typename }", "degraded_above_ms": 800},
        },
    ),
    OpenApiExample(
        "TLS certificate",
        request_only=True,
        value={
            "project": EXAMPLE_PROJECT,
            "name": "Mail server certificate",
            "type": "tls",
            "target": "tls://mail.example.com:993",
            "interval_seconds": 3600,
            "config": {"certificate_expiry_days": [30, 7, "10%"]},
        },
    ),
    OpenApiExample(
        "Heartbeat",
        request_only=True,
        value={
            "project": EXAMPLE_PROJECT,
            "name": "Nightly backup",
            "type": "heartbeat",
            "interval_seconds": 86400,
            "config": {"grace_seconds": 3600},
        },
    ),
]
