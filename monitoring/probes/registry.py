"""Which probe serves which endpoint type."""

from monitoring.models import EndpointType
from monitoring.probes import (
    custom,
    elasticsearch,
    graphql,
    grpc,
    http,
    mysql,
    postgresql,
    redis,
    tls,
    websocket,
)
from monitoring.probes.base import Probe

PROBES: dict[str, Probe] = {
    EndpointType.HTTP: http.probe,
    EndpointType.GRAPHQL: graphql.probe,
    EndpointType.GRPC: grpc.probe,
    EndpointType.POSTGRESQL: postgresql.probe,
    EndpointType.MYSQL: mysql.probe,
    EndpointType.REDIS: redis.probe,
    EndpointType.ELASTICSEARCH: elasticsearch.probe,
    EndpointType.WEBSOCKET: websocket.probe,
    EndpointType.TLS: tls.probe,
}


def get_probe(endpoint_type: str) -> Probe:
    """The probe for a type (KeyError for an unknown one)."""
    return PROBES[endpoint_type]


PROBES[EndpointType.CUSTOM] = custom.make_probe(get_probe)
