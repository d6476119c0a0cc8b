"""The short, fixed phrases a failed check's `error` is made of, per probe kind.

A check's `error` (and so an incident's cause, a notification, the top-errors report) is
always one of these, so that failures read and group alike whatever the driver or the
server said. What they said goes, masked and cut short, into the check's `error_detail`.
A `{name}` is the one part that varies, from a closed set: a number, a gRPC status code name,
a cluster status. The README lists them; a test keeps the two the same.
"""

from monitoring.models import EndpointType
from monitoring.probes.network import NOT_ALLOWED

# --- Any kind: the network, TLS, the timeout ------------------------------------------------
TIMED_OUT = "timed out after {seconds} s"
DNS_FAILED = "DNS lookup failed"
REFUSED = "connection refused"
UNREACHABLE = "host unreachable"
RESET = "connection reset"
CLOSED = "connection closed"
NETWORK_ERROR = "network error"
TLS_UNTRUSTED = "TLS certificate not trusted"
TLS_EXPIRED = "TLS certificate expired"
TLS_WRONG_HOST = "TLS certificate does not match the host"
TLS_FAILED = "TLS handshake failed"
UNEXPECTED_ERROR = "unexpected error"  # a failure no phrase names: error_detail says what

# --- HTTP and the kinds spoken over it (GraphQL, Elasticsearch, WebSocket handshakes) -------
HTTP_STATUS = "HTTP {status}"  # a status the check does not expect
UNEXPECTED_BODY = "unexpected body"
TOO_MANY_REDIRECTS = "too many redirects"
REDIRECT_NOT_HTTP = "redirect to a non-HTTP URL"
INVALID_RESPONSE = "invalid HTTP response"
INVALID_URL = "invalid URL"
# The first unmet `config.assertions` entry, numbered from 1, and the value found (masked).
ASSERTION_FAILED = "assertion {number} failed: {assertion}, got {actual}"

# --- GraphQL --------------------------------------------------------------------------------
GRAPHQL_ERROR = "GraphQL error"
NOT_GRAPHQL = "not a GraphQL response"

# --- gRPC -----------------------------------------------------------------------------------
NOT_SERVING = "service not serving"
SERVICE_NOT_FOUND = "service not found"
NO_HEALTH_SERVICE = "no health service"
GRPC_STATUS = "gRPC {code}"  # any other status code, by its name (UNAVAILABLE, ...)

# --- Databases (PostgreSQL, MySQL) and Redis -------------------------------------------------
AUTH_FAILED = "authentication failed"
AUTH_REQUIRED = "authentication required"
NO_DATABASE = "database does not exist"
TOO_MANY_CONNECTIONS = "too many connections"
NOT_ACCEPTING = "server not accepting connections"
TLS_NOT_SUPPORTED = "TLS not supported by the server"
PROTOCOL_ERROR = "protocol error"  # the server speaks another protocol
QUERY_FAILED = "query failed"
WRONG_ANSWER = "SELECT 1 did not answer 1"
CONNECTION_FAILED = "connection failed"  # a refusal no other phrase names
SERVER_ERROR = "server error"
UNEXPECTED_REPLY = "unexpected reply"

# --- Elasticsearch --------------------------------------------------------------------------
NOT_CLUSTER_HEALTH = "not a cluster health response"
UNKNOWN_CLUSTER_STATUS = "unknown cluster status"
CLUSTER_BELOW_MINIMUM = "cluster status {status} (minimum {minimum})"

# --- WebSocket ------------------------------------------------------------------------------
HANDSHAKE_FAILED = "handshake failed"
REDIRECT_NOT_FOLLOWED = "redirects not followed"

# --- ICMP -----------------------------------------------------------------------------------
ALL_PINGS_LOST = "all {count} pings lost"  # 1-10
ICMP_UNAVAILABLE = "ICMP not permitted on this worker"

# --- DNS ------------------------------------------------------------------------------------
NXDOMAIN = "name does not exist (NXDOMAIN)"
SERVFAIL = "resolver failed (SERVFAIL)"
DNS_REFUSED = "query refused by the resolver"
NO_ANSWER = "no {record_type} records"  # one of the record types config.record_type allows
MISSING_ANSWER = "expected answer missing"
DNS_TIMEOUT = "resolver did not answer"

# --- TCP ------------------------------------------------------------------------------------
# `{expected}` is the endpoint's own `config.expect`, cut to 40 characters: what was received
# instead goes to `error_detail`.
EXPECTED_NOT_RECEIVED = 'expected "{expected}" not received'

# --- SMTP -----------------------------------------------------------------------------------
SMTP_REPLY = "SMTP {code}"  # a reply code that is not the one the step expects (554, 421, ...)
STARTTLS_NOT_OFFERED = "STARTTLS not offered"

# --- Custom ---------------------------------------------------------------------------------
# Checks stored before an unrecognized open port was watched as `tcp` still carry it.
UNKNOWN_PROTOCOL = "protocol not recognized"

_ANY = (
    NOT_ALLOWED,
    TIMED_OUT,
    DNS_FAILED,
    REFUSED,
    UNREACHABLE,
    RESET,
    CLOSED,
    NETWORK_ERROR,
    TLS_UNTRUSTED,
    TLS_EXPIRED,
    TLS_WRONG_HOST,
    TLS_FAILED,
    UNEXPECTED_ERROR,
)
_HTTP = (HTTP_STATUS, TOO_MANY_REDIRECTS, REDIRECT_NOT_HTTP, INVALID_RESPONSE, INVALID_URL)
_DATABASE = (
    AUTH_FAILED,
    NO_DATABASE,
    TOO_MANY_CONNECTIONS,
    NOT_ACCEPTING,
    TLS_NOT_SUPPORTED,
    PROTOCOL_ERROR,
    QUERY_FAILED,
    WRONG_ANSWER,
    CONNECTION_FAILED,
)

PHRASES: dict[str, tuple[str, ...]] = {
    EndpointType.HTTP: (*_ANY, *_HTTP, UNEXPECTED_BODY, ASSERTION_FAILED),
    EndpointType.GRAPHQL: (*_ANY, *_HTTP, GRAPHQL_ERROR, NOT_GRAPHQL, ASSERTION_FAILED),
    EndpointType.GRPC: (
        *_ANY,
        NOT_SERVING,
        SERVICE_NOT_FOUND,
        NO_HEALTH_SERVICE,
        PROTOCOL_ERROR,
        GRPC_STATUS,
    ),
    EndpointType.POSTGRESQL: _ANY + _DATABASE,
    EndpointType.MYSQL: (*_ANY, *_DATABASE, SERVER_ERROR),
    EndpointType.REDIS: (*_ANY, AUTH_FAILED, AUTH_REQUIRED, NO_DATABASE, UNEXPECTED_REPLY),
    EndpointType.ELASTICSEARCH: (
        *_ANY,
        *_HTTP,
        NOT_CLUSTER_HEALTH,
        UNKNOWN_CLUSTER_STATUS,
        CLUSTER_BELOW_MINIMUM,
        ASSERTION_FAILED,
    ),
    EndpointType.WEBSOCKET: (
        *_ANY,
        HTTP_STATUS,
        HANDSHAKE_FAILED,
        REDIRECT_NOT_FOLLOWED,
        UNEXPECTED_REPLY,
    ),
    EndpointType.TCP: (*_ANY, EXPECTED_NOT_RECEIVED),
    EndpointType.SMTP: (*_ANY, SMTP_REPLY, STARTTLS_NOT_OFFERED, PROTOCOL_ERROR),
}
PHRASES[EndpointType.TLS] = _ANY
# A custom endpoint fails as the kind it was found to speak, or before it was found.
PHRASES[EndpointType.CUSTOM] = tuple(
    dict.fromkeys([*(p for phrases in PHRASES.values() for p in phrases), UNKNOWN_PROTOCOL])
)
# ICMP and DNS are not among custom's: it detects only connection-based protocols.
PHRASES[EndpointType.ICMP] = (
    NOT_ALLOWED,
    TIMED_OUT,
    DNS_FAILED,
    NETWORK_ERROR,
    UNEXPECTED_ERROR,
    ALL_PINGS_LOST,
    ICMP_UNAVAILABLE,
)
PHRASES[EndpointType.DNS] = (
    NOT_ALLOWED,
    TIMED_OUT,
    DNS_FAILED,
    NETWORK_ERROR,
    UNEXPECTED_ERROR,
    NXDOMAIN,
    SERVFAIL,
    DNS_REFUSED,
    NO_ANSWER,
    MISSING_ANSWER,
    DNS_TIMEOUT,
)

# --- Heartbeats: nothing is probed, the job's pings (or their absence) say it -------------
NO_PING = "no ping since {time}"  # `YYYY-MM-DD HH:MM:SS UTC`, or "no ping yet"
NO_PING_YET = "no ping yet"
FAILURE_PING = "failure ping"
EXIT_STATUS = "exit status {status}"  # 1-255
TOO_FAST = "finished too fast"  # a run shorter than config.min_run_seconds
NEVER_FINISHED = "started at {time}, never finished"  # a start with no end past the grace
PHRASES[EndpointType.HEARTBEAT] = (
    NO_PING,
    NO_PING_YET,
    FAILURE_PING,
    EXIT_STATUS,
    TOO_FAST,
    NEVER_FINISHED,
)
