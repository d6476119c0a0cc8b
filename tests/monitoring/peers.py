"""Real local protocol peers for the probe tests, each on 127.0.0.1 and an ephemeral port.

Every peer serves from its own thread from construction until `stop()`, which closes its
sockets and joins its threads: the suite turns ResourceWarnings into errors.
"""

import contextlib
import datetime
import ipaddress
import json
import re
import socket
import socketserver
import ssl
import sys
import threading
from concurrent import futures
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlsplit

import grpc
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from graphql import build_schema, graphql_sync
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response
from websockets.sync.server import ServerConnection, serve

HOST = "127.0.0.1"
# The real services of the test machine (see /work/shared/MACHINE-FACTS.md).
POSTGRESQL_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
MYSQL_URL = "mysql://root@127.0.0.1:3306/"
REDIS_URL = "redis://127.0.0.1:6379/0"
# The gRPC peer serves this service besides the whole server ("").
GRPC_NAMED_SERVICE = "hm.Checkout"
# Longer than any probe timeout in the tests; `stop()` cuts the wait short.
SLOW_SECONDS = 30.0
# Handlers give up on a silent client after this long, so `stop()` never waits forever.
HANDLER_TIMEOUT = 10.0
# The HTTP peer's `/json` document, for assertions.
HEALTH_DOCUMENT = {
    "status": "degraded",
    "checks": {"db": "ok", "cache": "down"},
    "queue": {"depth": 42},
    "tags": ["eu", "primary"],
    "healthy": False,
}
BACKTRACK_LENGTH = 100_000
# Peers given this as their answer quote the `Authorization` header they received instead.
ECHO_AUTHORIZATION = "<the Authorization header received>"


class _Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    """A threaded TCP server that joins its handler threads and can cut open connections."""

    daemon_threads = False
    block_on_close = True
    allow_reuse_address = True

    def __init__(self, handler: type[socketserver.BaseRequestHandler], peer: "Peer") -> None:
        self.peer = peer
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        super().__init__((HOST, 0), handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = super().get_request()
        with self._lock:
            self._open.add(sock)
        return sock, address

    def close_request(self, request: Any) -> None:
        with self._lock:
            self._open.discard(request)
        super().close_request(request)

    def cut_connections(self) -> None:
        """Wake every handler blocked on a read: their clients are gone or too slow."""
        with self._lock:
            for sock in self._open:
                with contextlib.suppress(OSError):  # already closed by the client
                    sock.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Probes hang up mid-reply on purpose (timeouts, refused certificates): not a failure.
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)


class _TLSServer(_Server):
    """A `_Server` speaking TLS; the handshake runs in the handler's thread (see `_Handler`)."""

    def __init__(
        self, handler: type[socketserver.BaseRequestHandler], peer: "Peer", context: ssl.SSLContext
    ) -> None:
        self.context = context
        super().__init__(handler, peer)

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = socketserver.TCPServer.get_request(self)
        tls_sock = self.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        with self._lock:
            self._open.add(tls_sock)
        return tls_sock, address


class Peer:
    """A socketserver serving in a thread until `stop()`."""

    handler: ClassVar[type[socketserver.BaseRequestHandler]]

    def __init__(self, context: ssl.SSLContext | None = None) -> None:
        self.stopping = threading.Event()
        if context is None:
            self.server: _Server = _Server(self.handler, self)
        else:
            self.server = _TLSServer(self.handler, self, context)
        self.port: int = self.server.server_address[1]
        self._thread = threading.Thread(
            target=self.server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"{type(self).__name__}:{self.port}",
        )
        self._thread.start()

    @property
    def address(self) -> str:
        """`host:port`, as a custom endpoint's target."""
        return f"{HOST}:{self.port}"

    def url(self, path: str = "", scheme: str = "http") -> str:
        return f"{scheme}://{HOST}:{self.port}{path}"

    def stop(self) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.cut_connections()
        self.server.server_close()  # closes the listener and joins the handler threads
        self._thread.join()


# --- HTTP ------------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    """Shared plumbing: quiet logs, a read timeout, TLS handshake, JSON in and out."""

    timeout = HANDLER_TIMEOUT
    server: _Server

    def setup(self) -> None:
        if isinstance(self.request, ssl.SSLSocket):
            self.request.settimeout(self.timeout)
            self.request.do_handshake()
        super().setup()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.route()

    def do_HEAD(self) -> None:
        self.route()

    def do_POST(self) -> None:
        self.route()

    def route(self) -> None:
        raise NotImplementedError

    def read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def send(
        self,
        status: int,
        body: str | bytes = b"",
        content_type: str = "text/plain; charset=utf-8",
        headers: dict[str, str] | None = None,
    ) -> None:
        data = body.encode() if isinstance(body, str) else body
        has_body = status not in (204, 304)
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if has_body:
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if has_body and self.command != "HEAD":
            self.wfile.write(data)

    def send_json(self, status: int, document: Any, headers: dict[str, str] | None = None) -> None:
        self.send(status, json.dumps(document), "application/json", headers)


class _HTTPHandler(_Handler):
    def route(self) -> None:
        url = urlsplit(self.path)
        self.read_body()
        if url.path in ("/", "/health"):
            self.send(200, "ok healthy")
        elif match := re.fullmatch(r"/status/(\d{3})", url.path):
            self.send(int(match[1]), f"status {match[1]}")
        elif url.path == "/redirect":
            location = parse_qs(url.query).get("to", ["/health"])[0]
            self.send(302, "redirecting", headers={"Location": location})
        elif match := re.fullmatch(r"/redirect-n/(\d+)", url.path):
            hops = int(match[1])
            location = f"/redirect-n/{hops - 1}" if hops > 1 else "/health"
            if hops == 0:
                self.send(200, "ok healthy")
            else:
                self.send(302, "redirecting", headers={"Location": location})
        elif url.path == "/slow":
            self.server.peer.stopping.wait(SLOW_SECONDS)
            self.send(200, "ok but slow")
        elif url.path == "/echo-headers":
            self.send_json(200, {name.lower(): value for name, value in self.headers.items()})
        elif url.path == "/json":
            self.send_json(200, HEALTH_DOCUMENT, headers={"X-Version": "1.2.3"})
        elif url.path == "/backtrack":
            self.send(200, "a" * BACKTRACK_LENGTH + "b")
        elif url.path == "/redirect-quoting-auth":
            # a Location no client can follow, quoting the credentials as a careless proxy might
            location = f"http://[{self.headers.get('Authorization', '')}/"
            self.send(302, "redirecting", headers={"Location": location})
        else:
            self.send(404, "not found")


class HTTPPeer(Peer):
    """`/health` (and `/`): 200 "ok healthy"; `/status/<code>`; `/redirect?to=<url>`: 302;
    `/redirect-n/<n>`: n redirects ending at /health; `/slow`: no answer for 30 s;
    `/echo-headers`: the request headers as JSON, names lowercased;
    `/redirect-quoting-auth`: 302 to an invalid URL quoting the `Authorization` header;
    `/json`: HEALTH_DOCUMENT with `X-Version: 1.2.3`; `/backtrack`: "aaa…ab", which
    `(a+)+$` backtracks on for ever.
    """

    handler = _HTTPHandler


def self_signed_context(directory: Path) -> ssl.SSLContext:
    """A server TLS context whose certificate (for 127.0.0.1) no client trusts."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, HOST)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.IPv4Address(HOST))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    return context


# --- GraphQL ---------------------------------------------------------------------------------

_SCHEMA = build_schema(
    """
    type Query {
      status: String
      "Always fails, as a resolver whose backend is down."
      broken: String
      "The value of a request header; an error when the request lacks it."
      header(name: String!): String
      "Always fails, quoting the Authorization header received, as a careless server does."
      denied: String
    }
    """
)


class _Root:
    status = "ok"

    def broken(self, info: Any) -> str:
        raise RuntimeError("backend unreachable")

    def header(self, info: Any, name: str) -> str:
        value: str | None = info.context.get(name.lower())
        if value is None:
            raise LookupError(f"no {name} header")
        return value

    def denied(self, info: Any) -> str:
        auth, path = info.context.get("authorization"), info.context[":path"]
        raise PermissionError(f"access denied to {path}: auth={auth}")


class _GraphQLHandler(_Handler):
    def route(self) -> None:
        match = re.fullmatch(r"/graphql(?:-(\d{3}|denied))?", urlsplit(self.path).path)
        if match is None:
            self.send_json(404, {"errors": [{"message": "not found"}]})
            return
        if self.command != "POST":
            self.send_json(405, {"errors": [{"message": "POST a query"}]}, {"Allow": "POST"})
            return
        try:
            request = json.loads(self.read_body())
            query = "{ denied }" if match[1] == "denied" else request["query"]
        except (ValueError, KeyError, TypeError):
            self.send_json(400, {"errors": [{"message": "expected a JSON body with a query"}]})
            return
        result = graphql_sync(
            _SCHEMA,
            query,
            root_value=_Root(),
            context_value={
                ":path": self.path,
                **{name.lower(): value for name, value in self.headers.items()},
            },
            variable_values=request.get("variables"),
            operation_name=request.get("operationName"),
        )
        status = int(match[1]) if match[1] and match[1].isdigit() else 200
        self.send_json(status, result.formatted)


class GraphQLPeer(Peer):
    """POST /graphql {"query": ...} → 200 {"data": ...} plus "errors" when a field fails.

    The schema is `Query { status, broken, header(name), denied }`: `broken` always raises,
    `header` raises unless the request carries that header, `denied` raises quoting the
    request's path and query and the `Authorization` header it received. `/graphql-<code>`
    answers the same with that HTTP status; `/graphql-denied` answers every query as
    `{ denied }`.
    """

    handler = _GraphQLHandler


# --- Elasticsearch ---------------------------------------------------------------------------

_ES_ROOT = {
    "name": "es-node-1",
    "cluster_name": "hm-test",
    "cluster_uuid": "hQ3a1hXKRqeQ8fgpU4b1Aw",
    "version": {
        "number": "8.15.0",
        "build_flavor": "default",
        "build_type": "docker",
        "build_hash": "1a77947f34deddb41af25e6f0ddb8e830159c179",
        "build_date": "2024-08-05T10:05:34.233336849Z",
        "build_snapshot": False,
        "lucene_version": "9.11.1",
        "minimum_wire_compatibility_version": "7.17.0",
        "minimum_index_compatibility_version": "7.0.0",
    },
    "tagline": "You Know, for Search",
}
ES_NODES = 3
# Shard counts as a real 3-node cluster with 5 primaries and 1 replica each reports them.
_ES_SHARDS = {
    "green": {"active_primary_shards": 5, "active_shards": 10, "unassigned_shards": 0},
    "yellow": {"active_primary_shards": 5, "active_shards": 7, "unassigned_shards": 3},
    "red": {"active_primary_shards": 4, "active_shards": 6, "unassigned_shards": 4},
}


class _ElasticsearchHandler(_Handler):
    def route(self) -> None:
        headers = {"X-Elastic-Product": "Elasticsearch"}
        path = urlsplit(self.path).path
        if path == "/":
            self.send_json(200, _ES_ROOT, headers)
        elif path == "/_cluster/health" and self.server.peer.status == ECHO_AUTHORIZATION:
            health = {**cluster_health("green"), "status": self.headers.get("Authorization")}
            self.send_json(200, health, headers)
        elif path == "/_cluster/health":
            self.send_json(200, cluster_health(self.server.peer.status), headers)
        else:
            error = {"type": "index_not_found_exception", "reason": f"no such index [{path}]"}
            self.send_json(404, {"error": error, "status": 404}, headers)


def cluster_health(status: str) -> dict[str, Any]:
    """A `GET /_cluster/health` body in the shape Elasticsearch 8 sends."""
    shards = _ES_SHARDS[status]
    total = shards["active_shards"] + shards["unassigned_shards"]
    return {
        "cluster_name": "hm-test",
        "status": status,
        "timed_out": False,
        "number_of_nodes": ES_NODES,
        "number_of_data_nodes": ES_NODES,
        **shards,
        "relocating_shards": 0,
        "initializing_shards": 0,
        "delayed_unassigned_shards": 0,
        "number_of_pending_tasks": 0,
        "number_of_in_flight_fetch": 0,
        "task_max_waiting_in_queue_millis": 0,
        "active_shards_percent_as_number": 100.0 * shards["active_shards"] / total,
    }


class ElasticsearchPeer(Peer):
    """`GET /` and `GET /_cluster/health` as Elasticsearch 8 answers them; set `status`
    (`ECHO_AUTHORIZATION`: a status quoting the `Authorization` header received)."""

    handler = _ElasticsearchHandler

    def __init__(self) -> None:
        self.status = "green"
        super().__init__()


# --- Raw TCP peers ---------------------------------------------------------------------------


class _StallHandler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        # Read and drop whatever comes until the client hangs up; never answer.
        while self.request.recv(65536):
            pass


class StallPeer(Peer):
    """Accepts connections and never answers: every probe against it times out."""

    handler = _StallHandler


class _ReplyHandler(socketserver.StreamRequestHandler):
    timeout = HANDLER_TIMEOUT
    server: _Server

    def handle(self) -> None:
        peer = self.server.peer
        assert isinstance(peer, ReplyPeer)
        if peer.greeting:
            self.wfile.write(peer.greeting)
        if peer.reply is None:
            return
        for _line in self.rfile:
            self.wfile.write(peer.reply)


class ReplyPeer(Peer):
    """Sends `greeting` on connect, then answers every line with `reply` (None: hangs up)."""

    handler = _ReplyHandler

    def __init__(self, reply: bytes | None, greeting: bytes = b"") -> None:
        self.reply, self.greeting = reply, greeting
        super().__init__()


def redis_wrong_peer() -> ReplyPeer:
    """Something on a Redis port that refuses every command."""
    return ReplyPeer(reply=b"-ERR nope\r\n")


def banner_peer() -> ReplyPeer:
    """A server of another protocol that speaks first (SSH) and hangs up."""
    return ReplyPeer(reply=None, greeting=b"SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n")


class ClosedPort:
    """A port where connecting is refused.

    Bound but never listening: the kernel answers a connection with a reset, and holding
    the port keeps anything else (or a client's own ephemeral port) from taking it.
    """

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind((HOST, 0))
        self.port: int = self._sock.getsockname()[1]

    def stop(self) -> None:
        self._sock.close()


# --- gRPC ------------------------------------------------------------------------------------

ServingStatus = health_pb2.HealthCheckResponse.ServingStatus


class GRPCHealthPeer:
    """A real gRPC server with the standard health service (grpc.health.v1.Health).

    `set(service, "SERVING" | "NOT_SERVING")`; a service never set answers NOT_FOUND.
    """

    def __init__(self) -> None:
        self._pool = futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="grpc-peer")
        self.server = grpc.server(self._pool)
        self.health = health.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        self.port: int = self.server.add_insecure_port(f"{HOST}:0")
        self.server.start()

    @property
    def address(self) -> str:
        return f"{HOST}:{self.port}"

    def url(self) -> str:
        return f"grpc://{HOST}:{self.port}"

    def set(self, service: str, status: str) -> None:
        self.health.set(service, ServingStatus.Value(status))

    def stop(self) -> None:
        self.server.stop(grace=None).wait()
        self._pool.shutdown(wait=True)


# --- WebSocket -------------------------------------------------------------------------------


class WebSocketPeer:
    """A real WebSocket server: echoes each message, or answers `reply` when given
    (`ECHO_AUTHORIZATION`: the handshake's `Authorization` header). With `bad_accept`, the
    handshake answer's `Sec-WebSocket-Accept` is that header instead, which clients refuse.

    Protocol pings are answered with pongs by the library, as every server does.
    """

    def __init__(self, reply: str | None = None, bad_accept: bool = False) -> None:
        self.reply = reply
        self.server = serve(
            self._handle, HOST, 0, process_response=self._quote_auth if bad_accept else None
        )
        self.port: int = self.server.socket.getsockname()[1]
        self._thread = threading.Thread(
            target=self.server.serve_forever, name=f"WebSocketPeer:{self.port}"
        )
        self._thread.start()

    def _handle(self, connection: ServerConnection) -> None:
        try:
            for message in connection:
                reply = message if self.reply is None else self.reply
                if reply == ECHO_AUTHORIZATION:
                    assert connection.request is not None  # after the handshake
                    reply = connection.request.headers.get("Authorization", "")
                connection.send(reply)
        except ConnectionClosed:
            pass

    def _quote_auth(self, _: ServerConnection, request: Request, response: Response) -> None:
        del response.headers["Sec-WebSocket-Accept"]
        response.headers["Sec-WebSocket-Accept"] = request.headers.get("Authorization", "")

    def url(self, path: str = "/") -> str:
        return f"ws://{HOST}:{self.port}{path}"

    def stop(self) -> None:
        self.server.shutdown()  # closes open connections and joins their handler threads
        self._thread.join()
