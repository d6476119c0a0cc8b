"""The probe network policy: private addresses are refused in every form, for every kind.

A canary listener on 127.0.0.1 (and ::1 when the machine has it) counts every connection it
accepts: with the policy on, no probe of any kind, in any address form, directly or through
a redirect, may reach it, and the probe's error is the policy's and nothing more.
"""

import errno
import selectors
import socket
import socketserver
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from monitoring.probes import probe
from monitoring.probes.network import address_allowed
from monitoring.targets import TargetError, validate_target

# Spelled out, not imported: the message is part of the contract and must not carry more.
NOT_ALLOWED = "target address not allowed"
TIMEOUT = 2.0
# Upper bound on waiting for a helper thread; the waits end as soon as the state is reached.
THREAD_WAIT = 5.0
REDIRECTOR_HOST = "127.0.0.2"  # Linux routes all of 127/8 to the loopback interface

UNSPECIFIED = "0.0.0.0"  # noqa: S104 (an address to refuse, never bound)

REFUSED = [
    "127.0.0.1",
    "127.255.255.254",
    "10.0.0.1",
    "10.255.255.255",
    "172.16.0.1",
    "172.31.255.254",
    "192.168.1.1",
    "169.254.0.1",
    "169.254.169.254",  # cloud metadata
    "100.64.0.1",  # CGNAT
    "100.127.255.254",
    "100.100.100.200",  # Alibaba metadata
    UNSPECIFIED,
    "0.1.2.3",
    "224.0.0.1",
    "239.255.255.250",
    "240.0.0.1",
    "255.255.255.255",
    "198.18.0.1",
    "192.0.0.1",
    "192.0.0.8",  # missing from older Python patch releases' tables
    "192.88.99.1",
    "192.0.2.1",
    "::1",
    "::",
    "fe80::1",
    "fe80::1%lo",
    "fc00::1",
    "fd12:3456::1",
    "fd00:ec2::254",  # AWS metadata over IPv6
    "ff02::1",
    "ff0e::1",
    "fec0::1",  # site-local
    "100::1",  # discard-only
    "2001:db8::1",
    "::ffff:127.0.0.1",
    "::ffff:7f00:1",
    "::ffff:10.0.0.1",
    "::ffff:169.254.169.254",
    "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
    "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
    "64:ff9b::a00:1",  # NAT64 of 10.0.0.1
    "64:ff9b:1::7f00:1",  # local-use NAT64 of 127.0.0.1
    "2002:7f00:1::1",  # 6to4 of 127.0.0.1
    "2002:a9fe:a9fe::1",  # 6to4 of 169.254.169.254
    "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo, client 127.0.0.1
]
# Deprecated IPv4 embeddings inside the reserved ::/8: IPv4-compatible (RFC 4291 2.5.5.1)
# and IPv4-translated (RFC 2765) forms of 127.0.0.1 and the metadata address.
RESERVED_EMBEDDINGS = [
    "::127.0.0.1",
    "::169.254.169.254",
    "::ffff:0:127.0.0.1",
    "::ffff:0:169.254.169.254",
]
# Numeric spellings the C resolver reads as 127.0.0.1 or 0.0.0.0.
NUMERIC_FORMS = ["127.1", "127.0.1", "2130706433", "0x7f000001", "0x7f.0.0.1", "0177.0.0.1"]
NUMERIC_FORMS += ["017700000001", "0", "0.0"]
PUBLIC = [
    "8.8.8.8",
    "1.1.1.1",
    "2606:4700:4700::1111",
    "64:ff9b::808:808",  # NAT64 of 8.8.8.8
    "::ffff:8.8.8.8",
    "2002:808:808::1",  # 6to4 of 8.8.8.8
]

# Host forms pointing at the canary (its port is appended).
CANARY_HOSTS = [
    "127.0.0.1",
    "127.1",
    "127.0.1",
    "2130706433",
    "0x7f000001",
    "0x7f.0.0.1",
    "0177.0.0.1",
    "017700000001",
    "localhost",
    "[::1]",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "[64:ff9b::7f00:1]",  # NAT64: would not route, so only the policy may refuse it
    UNSPECIFIED,
    "0",
]
# Every kind, in its own scheme; custom both as host:port and as URLs.
KIND_TARGETS = [
    ("http", "http://{netloc}/"),
    ("graphql", "http://{netloc}/graphql"),
    ("grpc", "grpc://{netloc}"),
    ("postgresql", "postgresql://u@{netloc}/db"),
    ("mysql", "mysql://u@{netloc}/"),
    ("redis", "redis://{netloc}/0"),
    ("elasticsearch", "http://{netloc}/"),
    ("websocket", "ws://{netloc}/"),
    ("tcp", "tcp://{netloc}"),
    ("smtp", "smtp://{netloc}"),
    ("smtp", "smtps://{netloc}"),
    ("tls", "tls://{netloc}"),
    ("custom", "{netloc}"),
    ("custom", "http://{netloc}/"),
    ("custom", "http://{netloc}/graphql"),
    ("custom", "redis://{netloc}/0"),
    ("custom", "tcp://{netloc}"),
    ("custom", "smtp://{netloc}"),
]


def _bind_listeners() -> list[socket.socket]:
    """Listening sockets on 127.0.0.1 and, when it exists, ::1, on one ephemeral port."""
    for _ in range(20):
        v4 = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        v4.bind(("127.0.0.1", 0))
        v4.listen(64)
        if not socket.has_ipv6:
            return [v4]
        try:
            v6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        except OSError:
            return [v4]
        try:
            v6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            v6.bind(("::1", v4.getsockname()[1]))
            v6.listen(64)
        except OSError as exc:
            v6.close()
            if exc.errno != errno.EADDRINUSE:
                return [v4]  # no IPv6 loopback here
            v4.close()
            continue
        return [v4, v6]
    raise RuntimeError("no port free on both 127.0.0.1 and ::1")


class Canary:
    """Loopback listeners that accept, record and close every connection, from a thread."""

    def __init__(self) -> None:
        self.listeners = _bind_listeners()
        for listener in self.listeners:
            listener.setblocking(False)
        self.port: int = self.listeners[0].getsockname()[1]
        self.has_ipv6 = len(self.listeners) > 1
        self.peers: list[Any] = []
        self._wake_reader, self._wake_writer = socket.socketpair()
        self._wake_reader.setblocking(False)
        self._changed = threading.Condition()
        self._requested = 0
        self._served = 0
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="canary")
        self._thread.start()

    def _run(self) -> None:
        with selectors.DefaultSelector() as selector:
            for listener in [*self.listeners, self._wake_reader]:
                selector.register(listener, selectors.EVENT_READ)
            while True:
                selector.select()
                with self._changed:
                    requested, stopping = self._requested, self._stopping
                try:
                    while self._wake_reader.recv(4096):
                        pass
                except BlockingIOError:
                    pass
                self._accept_pending()
                with self._changed:
                    self._served = requested
                    self._changed.notify_all()
                if stopping:
                    return

    def _accept_pending(self) -> None:
        for listener in self.listeners:
            while True:
                try:
                    connection, peer = listener.accept()
                except BlockingIOError:
                    break
                connection.close()
                with self._changed:
                    self.peers.append(peer)

    def _sweep(self, stop: bool = False) -> None:
        """Have the thread accept everything already queued, and wait until it has."""
        with self._changed:
            self._requested += 1
            self._stopping = self._stopping or stop
            ticket = self._requested
        self._wake_writer.send(b"x")
        with self._changed:
            assert self._changed.wait_for(lambda: self._served >= ticket, THREAD_WAIT)

    def connections(self) -> int:
        """How many connections reached the canary so far."""
        self._sweep()
        with self._changed:
            return len(self.peers)

    def wait_for_connection(self) -> int:
        """The connection count, once at least one has arrived (bounded wait)."""
        with self._changed:
            self._changed.wait_for(lambda: bool(self.peers), THREAD_WAIT)
        return self.connections()

    def stop(self) -> None:
        try:
            self._sweep(stop=True)
        finally:
            self._thread.join(THREAD_WAIT)
            for sock in [*self.listeners, self._wake_reader, self._wake_writer]:
                sock.close()


class _RedirectHandler(BaseHTTPRequestHandler):
    server: "Redirector"

    def _redirect(self) -> None:
        self.server.requests += 1  # one request at a time: the server is not threaded
        self.send_response(302)
        self.send_header("Location", self.server.location)
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()

    def do_GET(self) -> None:
        self._redirect()

    def do_POST(self) -> None:
        self._redirect()

    def do_HEAD(self) -> None:
        self._redirect()

    def log_message(self, format: str, *args: Any) -> None:
        pass


class Redirector(socketserver.TCPServer):
    """An HTTP server on 127.0.0.2 answering every request with a 302 to `location`."""

    allow_reuse_address = True

    def __init__(self, location: str) -> None:
        self.location = location
        self.requests = 0
        super().__init__((REDIRECTOR_HOST, 0), _RedirectHandler)
        self.port: int = self.server_address[1]
        self._thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.05}, name="redirector"
        )
        self._thread.start()

    def stop(self) -> None:
        self.shutdown()
        self._thread.join(THREAD_WAIT)
        self.server_close()


@pytest.fixture
def canary() -> Iterator[Canary]:
    listener = Canary()
    try:
        yield listener
    finally:
        listener.stop()


@pytest.fixture
def redirector() -> Iterator[Callable[[str], Redirector]]:
    """Start redirecting servers on demand; all are stopped after the test."""
    servers: list[Redirector] = []

    def start(location: str) -> Redirector:
        try:
            server = Redirector(location)
        except OSError as exc:
            pytest.skip(f"cannot listen on {REDIRECTOR_HOST}: {exc}")
        servers.append(server)
        return server

    try:
        yield start
    finally:
        for server in servers:
            server.stop()


@pytest.fixture
def policy_on(settings: Any) -> Any:
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = False
    settings.PROBE_ALLOWED_NETWORKS = []
    return settings


def _resolve_numeric(form: str) -> str:
    """The IPv4 address the C resolver reads a numeric form as, without any DNS query."""
    info = socket.getaddrinfo(
        form, 80, socket.AF_INET, socket.SOCK_STREAM, 0, socket.AI_NUMERICHOST
    )
    return str(info[0][4][0])


def _assert_refused(result: Any) -> None:
    assert result.ok is False
    assert result.error == NOT_ALLOWED
    assert result.status_detail == ""


# address_allowed over the corpus


def test_corpus_is_large_enough() -> None:
    assert len(REFUSED) + len(NUMERIC_FORMS) >= 25


@pytest.mark.parametrize("address", REFUSED)
def test_private_forms_are_refused(policy_on: Any, address: str) -> None:
    assert address_allowed(address) is False


@pytest.mark.parametrize("address", RESERVED_EMBEDDINGS)
def test_reserved_ipv4_embeddings_are_refused(policy_on: Any, address: str) -> None:
    assert address_allowed(address) is False


@pytest.mark.parametrize("form", NUMERIC_FORMS)
def test_numeric_forms_are_refused_once_resolved(policy_on: Any, form: str) -> None:
    address = _resolve_numeric(form)
    assert address in ("127.0.0.1", UNSPECIFIED)
    assert address_allowed(address) is False


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_are_allowed(policy_on: Any, address: str) -> None:
    assert address_allowed(address) is True


@pytest.mark.parametrize("address", REFUSED + RESERVED_EMBEDDINGS + PUBLIC)
def test_allowing_private_networks_allows_everything(settings: Any, address: str) -> None:
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = True
    assert address_allowed(address) is True


def test_allowed_networks_are_exceptions(policy_on: Any) -> None:
    policy_on.PROBE_ALLOWED_NETWORKS = ["127.0.0.2/32"]
    assert address_allowed("127.0.0.2") is True
    assert address_allowed("::ffff:127.0.0.2") is True
    assert address_allowed("127.0.0.1") is False
    assert address_allowed("127.0.0.3") is False
    assert address_allowed("::ffff:127.0.0.1") is False
    assert address_allowed("169.254.169.254") is False
    assert address_allowed("8.8.8.8") is True


# Every kind, every host form, against the canary


@pytest.mark.parametrize("host", CANARY_HOSTS)
@pytest.mark.parametrize(("kind", "form"), KIND_TARGETS)
def test_no_kind_reaches_the_canary(
    policy_on: Any, canary: Canary, kind: str, form: str, host: str
) -> None:
    raw = form.format(netloc=f"{host}:{canary.port}")
    try:
        target = validate_target(kind, raw)
    except TargetError:
        # Refused before any probe could run: never dialled.
        assert canary.connections() == 0
        return
    result = probe(kind, target, timeout=TIMEOUT)
    _assert_refused(result)
    assert canary.connections() == 0


def test_canary_counts_a_probe_when_private_networks_are_allowed(
    settings: Any, canary: Canary
) -> None:
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = True
    result = probe("http", f"http://127.0.0.1:{canary.port}/", timeout=TIMEOUT)
    assert canary.wait_for_connection() >= 1
    assert result.error != NOT_ALLOWED


@pytest.mark.parametrize(("kind", "form"), [("tcp", "tcp://{}"), ("smtp", "smtp://{}")])
def test_canary_counts_a_tcp_or_smtp_probe_when_private_networks_are_allowed(
    settings: Any, canary: Canary, kind: str, form: str
) -> None:
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = True
    result = probe(kind, form.format(f"127.0.0.1:{canary.port}"), timeout=TIMEOUT)
    assert canary.wait_for_connection() >= 1
    assert result.error != NOT_ALLOWED


def test_canary_counts_an_ipv6_probe_when_private_networks_are_allowed(
    settings: Any, canary: Canary
) -> None:
    if not canary.has_ipv6:
        pytest.skip("no IPv6 loopback on this machine")
    settings.PROBE_ALLOW_PRIVATE_NETWORKS = True
    result = probe("http", f"http://[::1]:{canary.port}/", timeout=TIMEOUT)
    assert canary.wait_for_connection() >= 1
    assert any(":" in peer[0] for peer in canary.peers)
    assert result.error != NOT_ALLOWED


# Redirect hops


REDIRECT_HOSTS = ["127.0.0.1", "localhost", "[::ffff:127.0.0.1]", "2130706433", "[::1]"]


@pytest.mark.parametrize("host", REDIRECT_HOSTS)
@pytest.mark.parametrize("kind", ["http", "graphql", "elasticsearch"])
def test_a_redirect_to_the_canary_is_refused(
    policy_on: Any,
    canary: Canary,
    redirector: Callable[[str], Redirector],
    kind: str,
    host: str,
) -> None:
    policy_on.PROBE_ALLOWED_NETWORKS = ["127.0.0.2/32"]
    server = redirector(f"http://{host}:{canary.port}/")
    path = "/graphql" if kind == "graphql" else "/"
    result = probe(kind, f"http://{REDIRECTOR_HOST}:{server.port}{path}", timeout=TIMEOUT)
    _assert_refused(result)
    assert server.requests == 1  # the first hop was allowed; the second one was refused
    assert canary.connections() == 0


def test_a_websocket_redirect_to_the_canary_is_not_followed(
    policy_on: Any, canary: Canary, redirector: Callable[[str], Redirector]
) -> None:
    policy_on.PROBE_ALLOWED_NETWORKS = ["127.0.0.2/32"]
    server = redirector(f"ws://127.0.0.1:{canary.port}/")
    result = probe("websocket", f"ws://{REDIRECTOR_HOST}:{server.port}/", timeout=TIMEOUT)
    assert result.ok is False
    assert server.requests == 1
    assert canary.connections() == 0


def test_a_redirect_reaches_the_canary_when_its_network_is_allowed(
    policy_on: Any, canary: Canary, redirector: Callable[[str], Redirector]
) -> None:
    policy_on.PROBE_ALLOWED_NETWORKS = ["127.0.0.2/32", "127.0.0.1/32"]
    server = redirector(f"http://127.0.0.1:{canary.port}/")
    result = probe("http", f"http://{REDIRECTOR_HOST}:{server.port}/", timeout=TIMEOUT)
    assert server.requests == 1
    assert canary.wait_for_connection() >= 1
    assert result.error != NOT_ALLOWED
