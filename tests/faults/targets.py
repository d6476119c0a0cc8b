"""Probe targets for the fault tests: an HTTP server that counts every probe per path (and
can answer slowly), and hostile servers that misbehave on purpose."""

import socketserver
import threading
import zlib
from collections import Counter
from collections.abc import Callable

from tests.monitoring.peers import Peer, _Handler, _Server

GIB = 1 << 30
_CHUNK = 65_536


class _CountingHandler(_Handler):
    server: _Server

    def route(self) -> None:
        peer = self.server.peer
        assert isinstance(peer, CountingTarget)
        with peer.lock:
            peer.hits[self.path] += 1
            peer.in_flight += 1
        try:
            if peer.delay:
                peer.stopping.wait(peer.delay)
            self.send(200, "ok")
        finally:
            with peer.lock:
                peer.in_flight -= 1


class CountingTarget(Peer):
    """Answers 200 to any path after `delay` seconds; counts the requests per path and
    how many are being answered right now."""

    handler = _CountingHandler

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.lock = threading.Lock()
        self.hits: Counter[str] = Counter()
        self.in_flight = 0
        super().__init__()
        self.server.socket.listen(1024)  # a batch connects all at once; 5 would drop SYNs


Send = Callable[[bytes], None]
Behaviour = Callable[[Send, threading.Event], None]


class _HostileHandler(socketserver.BaseRequestHandler):
    """Reads the request, then lets the peer's behaviour answer, counting what it sends."""

    server: _Server

    def handle(self) -> None:
        peer = self.server.peer
        assert isinstance(peer, Hostile)
        self.request.settimeout(10)

        def send(data: bytes) -> None:
            self.request.sendall(data)
            with peer.lock:
                peer.bytes_sent += len(data)

        with peer.lock:
            peer.connections += 1
        try:
            self.request.recv(65_536)
            peer.behaviour(send, peer.stopping)
        except OSError:  # the probe hung up: what it should do
            pass


class Hostile(Peer):
    """A TCP server whose every connection gets `behaviour(send, stopping)`."""

    handler = _HostileHandler

    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour = behaviour
        self.lock = threading.Lock()
        self.connections = 0
        self.bytes_sent = 0
        super().__init__()


def drip(send: Send, stopping: threading.Event) -> None:
    """A whole, valid answer, one byte per second."""
    for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok":
        if stopping.wait(1.0):
            return
        send(bytes([byte]))


def drip_body(send: Send, stopping: threading.Event) -> None:
    """Headers at once, then the body one byte per second."""
    send(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
    for _ in range(1000):
        if stopping.wait(1.0):
            return
        send(b"x")


def huge_body(send: Send, stopping: threading.Event) -> None:
    """A 1 GiB body of JSON whitespace, streamed from one 64 KiB buffer."""
    send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % GIB)
    chunk = b" " * _CHUNK
    for _ in range(GIB // _CHUNK):
        if stopping.is_set():
            return
        send(chunk)


def gzip_bomb(send: Send, stopping: threading.Event) -> None:
    """1 GiB of zeros, gzipped as it goes (about 1 MiB on the wire)."""
    send(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nConnection: close\r\n\r\n")
    compressor, zeros = zlib.compressobj(9, zlib.DEFLATED, 31), bytes(1 << 20)
    for _ in range(GIB // len(zeros)):
        if stopping.is_set():
            return
        send(compressor.compress(zeros) + compressor.flush(zlib.Z_SYNC_FLUSH))
    send(compressor.flush())


def endless_headers(send: Send, stopping: threading.Event) -> None:
    """A status line, then header lines that never end."""
    send(b"HTTP/1.1 200 OK\r\n")
    for n in range(GIB // 128):
        if stopping.is_set():
            return
        send(b"X-Filler-%d: %s\r\n" % (n, b"a" * 100))


def endless_header_line(send: Send, stopping: threading.Event) -> None:
    """A status line, then one header line that never ends."""
    send(b"HTTP/1.1 200 OK\r\nX-Long: ")
    chunk = b"a" * _CHUNK
    for _ in range(GIB // _CHUNK):
        if stopping.is_set():
            return
        send(chunk)
