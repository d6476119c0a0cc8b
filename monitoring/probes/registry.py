"""Which probe serves which endpoint type."""

from monitoring.models import EndpointType
from monitoring.probes import (
    custom,
    dns,
    elasticsearch,
    graphql,
    grpc,
    http,
    icmp,
    mysql,
    postgresql,
    redis,
    smtp,
    tcp,
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
    EndpointType.ICMP: icmp.probe,
    EndpointType.DNS: dns.probe,
    EndpointType.TCP: tcp.probe,
    EndpointType.SMTP: smtp.probe,
    EndpointType.TLS: tls.probe,
}


def get_probe(endpoint_type: str) -> Probe:
    """The probe for a type (KeyError for an unknown one)."""
    return PROBES[endpoint_type]


PROBES[EndpointType.CUSTOM] = custom.make_probe(get_probe)
