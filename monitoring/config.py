"""Per-type probe options (`endpoint.config`): what each kind accepts, and its defaults.

The stored config is the validated one with every default filled in, so probes read it as
is and users see exactly what will be probed. Unknown options are refused, so a typo never
passes silently.
"""

import functools
import re
from typing import Any

from rest_framework import serializers

from monitoring.models import EndpointType

_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}")
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


class HeadersField(serializers.DictField):
    """Extra request headers: RFC 9110 names, single-line values."""

    def __init__(self, **kwargs: Any) -> None:
        child = serializers.CharField(max_length=4096, allow_blank=True, trim_whitespace=False)
        super().__init__(child=child, **kwargs)

    def to_internal_value(self, data: Any) -> dict[str, str]:
        """Refuse bad names, line breaks in values and too many headers."""
        headers: dict[str, str] = super().to_internal_value(data)
        if len(headers) > MAX_HEADERS:
            raise serializers.ValidationError(f"At most {MAX_HEADERS} headers.")
        for name, value in headers.items():
            if not _HEADER_NAME.fullmatch(name):
                raise serializers.ValidationError(f"{name!r} is not a valid header name.")
            if name.lower() in _RESERVED_HEADERS:
                raise serializers.ValidationError(f"{name} is set by the probe itself.")
            if not value.isprintable() or not value.isascii():
                raise serializers.ValidationError(
                    f"The value of {name} must be printable ASCII on one line."
                )
        return headers


class _Config(serializers.Serializer[Any]):
    """Options every kind accepts; subclasses add their own."""

    degraded_threshold_ms = serializers.IntegerField(
        min_value=1,
        max_value=600_000,
        required=False,
        allow_null=True,
        default=None,
        help_text="A successful check slower than this marks the endpoint degraded.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """Refuse options this kind does not know."""
        unknown = set(self.initial_data) - set(self.fields)
        if unknown:
            raise serializers.ValidationError(
                {name: ["Unknown option for this endpoint type."] for name in sorted(unknown)}
            )
        return attrs


class _TLSConfig(_Config):
    verify_tls = serializers.BooleanField(
        default=True, help_text="Check the server's certificate (on by default)."
    )


class _HTTPBasedConfig(_TLSConfig):
    headers = HeadersField(default=dict, help_text="Extra request headers.")


class HTTPConfig(_HTTPBasedConfig):
    method = serializers.ChoiceField(choices=["GET", "HEAD", "POST"], default="GET")
    expected_status = serializers.ListField(
        child=serializers.IntegerField(min_value=100, max_value=599),
        allow_empty=False,
        max_length=50,
        default=functools.partial(list, [200]),
        help_text="Status codes that count as up.",
    )
    body_contains = serializers.CharField(
        max_length=1000, allow_blank=True, default="", trim_whitespace=False
    )
    follow_redirects = serializers.BooleanField(default=True, help_text="Up to 5 hops.")


class GraphQLConfig(_HTTPBasedConfig):
    query = serializers.CharField(max_length=10_000, default="{ __typename }")


class GRPCConfig(_TLSConfig):
    service = serializers.CharField(
        max_length=200, allow_blank=True, default="", help_text="Empty: the whole server."
    )
    tls = serializers.BooleanField(default=False, help_text="grpcs:// targets always use TLS.")


class ElasticsearchConfig(_HTTPBasedConfig):
    min_status = serializers.ChoiceField(
        choices=["green", "yellow", "red"],
        default="yellow",
        help_text="The worst cluster status that still counts as up.",
    )


class WebSocketConfig(_HTTPBasedConfig):
    send = serializers.CharField(
        max_length=1000,
        allow_blank=True,
        default="",
        trim_whitespace=False,
        help_text="A text message to send; empty: a protocol-level ping.",
    )
    expect = serializers.CharField(
        max_length=1000, allow_blank=True, default="", trim_whitespace=False
    )


CONFIG_SERIALIZERS: dict[str, type[_Config]] = {
    EndpointType.HTTP: HTTPConfig,
    EndpointType.GRAPHQL: GraphQLConfig,
    EndpointType.GRPC: GRPCConfig,
    EndpointType.POSTGRESQL: _TLSConfig,
    EndpointType.MYSQL: _TLSConfig,
    EndpointType.REDIS: _TLSConfig,
    EndpointType.ELASTICSEARCH: ElasticsearchConfig,
    EndpointType.WEBSOCKET: WebSocketConfig,
    EndpointType.CUSTOM: _HTTPBasedConfig,
}


def validate_config(endpoint_type: str, config: Any) -> dict[str, Any]:
    """The config with defaults filled in, or a ValidationError naming each bad option."""
    serializer = CONFIG_SERIALIZERS[endpoint_type](data=config)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)
