"""A real local HTTP receiver for notification tests: it records every request and answers
with the statuses it is told, in turn (the last one repeats)."""

import socket
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import Envelope

from alerts import services, validation
from alerts.models import NotificationChannel


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    answered: int


class _Handler(BaseHTTPRequestHandler):
    server: "_Server"

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        status, location = self.server.owner.next_answer()
        self.server.owner.requests.append(
            Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body, status)
        )
        self.send_response(status)
        if location:
            self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = False
    block_on_close = True

    def __init__(self, owner: "Receiver") -> None:
        self.owner = owner
        super().__init__(("127.0.0.1", 0), _Handler)


class Receiver:
    """Serves on 127.0.0.1 from construction until `stop()`."""

    def __init__(self, statuses: tuple[int, ...] = (200,), location: str = "") -> None:
        self.statuses = list(statuses)
        self.location = location
        self.requests: list[Received] = []
        self._lock = threading.Lock()
        self._server = _Server(self)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/hook/T000/SECRET-PATH"

    def next_answer(self) -> tuple[int, str]:
        with self._lock:
            status = self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]
        return status, self.location if 300 <= status < 400 else ""

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def webhook(cast: Any, url: str, **fields: Any) -> NotificationChannel:
    """A webhook channel of the cast's organization, pointed at a receiver."""
    fields.setdefault("name", "Ops hook")
    return services.channel_create(
        organization=cast.org, kind="webhook", config={"url": url}, **fields
    )


def apprise_channel(cast: Any, url: str, **fields: Any) -> NotificationChannel:
    """An Apprise channel of the cast's organization (validated as the API validates it)."""
    fields.setdefault("name", "Apprise")
    config = validation.channel_config("apprise", {"url": url})
    return services.channel_create(organization=cast.org, kind="apprise", config=config, **fields)


class _Mailbox:
    """aiosmtpd's handler: keeps every message it is given."""

    def __init__(self) -> None:
        self.envelopes: list[Envelope] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Envelope) -> str:  # noqa: N802 (aiosmtpd's hook name)
        self.envelopes.append(envelope)
        return "250 OK"


class MailReceiver:
    """A real SMTP server (aiosmtpd, no TLS) on 127.0.0.1 from construction until `stop()`."""

    def __init__(self) -> None:
        self.mailbox = _Mailbox()
        with socket.socket() as probe:  # aiosmtpd needs a port named before it listens
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self._controller = Controller(self.mailbox, hostname="127.0.0.1", port=self.port)
        self._controller.start()

    @property
    def envelopes(self) -> list[Envelope]:
        return self.mailbox.envelopes

    def stop(self) -> None:
        self._controller.stop()
