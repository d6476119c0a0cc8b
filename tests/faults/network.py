"""Network faults between the web process and PostgreSQL: a TCP proxy the test controls,
and a private network namespace whose loopback can go down.

A proxy alone cannot play a dead network: its kernel acknowledges every byte whatever the
proxy does with it, so the client's TCP stays healthy. Inside a namespace of its own, the
web process reaches the proxy over a loopback the test can take down; then packets are
dropped, as on a partition or with a crashed host, while unix sockets (the test's HTTP
requests, the proxy's own link to PostgreSQL) keep working.
"""

import contextlib
import ctypes
import os
import select
import shutil
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable

CLONE_NEWNET = 0x40000000


class NetworkNamespace:
    """A network namespace with its own loopback, held open by a sleeping process."""

    def __init__(self) -> None:
        command = ["unshare", "--net", "--", "sh", "-c", "ip link set lo up && exec sleep 600"]
        self._holder = subprocess.Popen(command)  # noqa: S603
        self.path = f"/proc/{self._holder.pid}/ns/net"
        deadline = time.monotonic() + 5
        while "state UNKNOWN" not in self.run("ip", "-o", "link", "show", "lo"):
            assert time.monotonic() < deadline, "the namespace's loopback did not come up"
            time.sleep(0.02)

    @staticmethod
    def available() -> bool:
        """Whether this process may create namespaces and enter them (root)."""
        if os.geteuid() != 0 or not all(map(shutil.which, ("unshare", "nsenter", "ip"))):
            return False
        done = subprocess.run(["unshare", "--net", "true"], capture_output=True, check=False)  # noqa: S607
        return done.returncode == 0

    def command(self, *command: str) -> list[str]:
        """The command line that runs `command` inside the namespace."""
        return ["nsenter", f"--net={self.path}", "--", *command]

    def run(self, *command: str) -> str:
        return subprocess.run(  # noqa: S603
            self.command(*command), capture_output=True, text=True, check=True
        ).stdout

    def loopback(self, up: bool) -> None:
        """Down: every packet on the namespace's loopback is dropped."""
        self.run("ip", "link", "set", "lo", "up" if up else "down")

    def listener(self, port: int) -> socket.socket:
        """A listening TCP socket on the namespace's 127.0.0.1:`port`.

        setns() moves only the calling thread, so a short-lived thread makes the socket;
        the socket stays in the namespace it was made in.
        """
        made: list[socket.socket | BaseException] = []

        def make() -> None:
            try:
                libc = ctypes.CDLL(None, use_errno=True)
                fd = os.open(self.path, os.O_RDONLY)
                try:
                    if libc.setns(fd, CLONE_NEWNET) != 0:
                        raise OSError(ctypes.get_errno(), "setns failed")
                finally:
                    os.close(fd)
                made.append(_listen(port))
            except BaseException as exc:
                made.append(exc)

        thread = threading.Thread(target=make)
        thread.start()
        thread.join()
        if isinstance(made[0], BaseException):
            raise made[0]
        return made[0]

    def close(self) -> None:
        self._holder.kill()
        self._holder.wait(timeout=5)


def _listen(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
        sock.listen(64)
    except OSError:
        sock.close()
        raise
    return sock


class TCPProxy:
    """Forwards connections on 127.0.0.1:`port` to PostgreSQL, until told otherwise.

    `refuse()` plays a server that went down: open connections are reset and new ones
    refused. `silence()` plays a server that hangs: connections are accepted, and nothing
    goes either way any more. `open()` forwards again.
    """

    def __init__(
        self,
        upstream: tuple[str, int],
        port: int,
        listen: Callable[[int], socket.socket] | None = None,
    ) -> None:
        self.upstream, self.port, self._listen = upstream, port, listen or _listen
        self.mode = "open"
        self.accepted = 0
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._threads: list[threading.Thread] = []
        self._listener: socket.socket | None = None
        self._stopping = threading.Event()
        self._start_listening()

    def _start_listening(self) -> None:
        self._listener = self._listen(self.port)
        thread = threading.Thread(target=self._accept, args=(self._listener,), daemon=True)
        thread.start()
        self._threads.append(thread)

    def _accept(self, listener: socket.socket) -> None:
        while not self._stopping.is_set():
            try:
                if not select.select([listener], [], [], 0.05)[0]:
                    continue
                client, _ = listener.accept()
            except (OSError, ValueError):  # the listener was closed: refusing
                return
            with self._lock:
                self.accepted += 1
                self._sockets.add(client)
            if self.mode == "silent":
                continue  # held open, never answered
            try:
                server = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                self._reset(client)
                continue
            with self._lock:
                self._sockets.add(server)
            for source, sink in ((client, server), (server, client)):
                thread = threading.Thread(target=self._pump, args=(source, sink), daemon=True)
                thread.start()
                self._threads.append(thread)

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        source.settimeout(None)
        with contextlib.suppress(OSError):
            while data := source.recv(65_536):
                if self.mode == "open":
                    sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    def _reset(self, sock: socket.socket) -> None:
        with contextlib.suppress(OSError):
            # SO_LINGER 0: close() sends a reset, as a server that crashed or was killed
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.shutdown(socket.SHUT_RDWR)
        sock.close()
        with self._lock:
            self._sockets.discard(sock)

    def _reset_all(self) -> None:
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            self._reset(sock)

    def refuse(self) -> None:
        """PostgreSQL went down: reset every connection, refuse new ones."""
        self.mode = "refused"
        self._close_listener()
        self._reset_all()

    def silence(self) -> None:
        """PostgreSQL hangs: connections stay open, new ones are accepted, and nothing
        goes either way any more."""
        self.mode = "silent"
        if self._listener is None:
            self._start_listening()

    def open(self) -> None:
        """Forward again; connections held while silent are reset."""
        if self.mode == "silent":
            self._reset_all()
        self.mode = "open"
        if self._listener is None:
            self._start_listening()

    def _close_listener(self) -> None:
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)  # stops listening at once
            self._listener.close()
            self._listener = None

    def stop(self) -> None:
        self._stopping.set()
        self._close_listener()
        self._reset_all()
        for thread in self._threads:
            thread.join(timeout=5)
