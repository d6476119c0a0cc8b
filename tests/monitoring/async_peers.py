"""Real local peers served by asyncio, each on 127.0.0.1 and an ephemeral port: servers that
speak first (banners of SMTP, SSH, FTP, IMAP, POP3, or a wrong one), stay silent, or are a
real SMTP server (aiosmtpd), with STARTTLS, implicit TLS, or neither.

Each peer runs its own event loop in a thread from construction until `stop()`, which
closes the listener and every open connection and joins the thread (the suite turns
ResourceWarnings into errors).
"""

import asyncio
import logging
import socket
import ssl
import struct
import threading
from collections.abc import Callable

from aiosmtpd.smtp import SMTP

HOST = "127.0.0.1"
STOP_WAIT = 5.0

SMTP_BANNER = b"220 mx.example.test ESMTP Postfix (Debian)\r\n"
SSH_BANNER = b"SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n"
FTP_BANNER = b"220 (vsFTPd 3.0.3)\r\n"
IMAP_BANNER = b"* OK [CAPABILITY IMAP4rev1 LITERAL+ STARTTLS] Dovecot ready.\r\n"
POP3_BANNER = b"+OK Dovecot ready.\r\n"
SMTP_REFUSAL = b"554 5.7.1 no service for you\r\n"

# aiosmtpd logs every command, and a client's refused handshake as an error with its
# traceback: in these tests that is the probe doing its job.
logging.getLogger("mail.log").setLevel(logging.CRITICAL)


class AsyncioPeer:
    """A server on its own event loop in a thread; `protocol` makes each connection's."""

    def __init__(
        self, protocol: Callable[[], asyncio.BaseProtocol], context: ssl.SSLContext | None = None
    ) -> None:
        self.loop = asyncio.new_event_loop()
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind((HOST, 0))
        self.port: int = listener.getsockname()[1]
        self.transports: set[asyncio.BaseTransport] = set()

        def tracked() -> asyncio.BaseProtocol:
            instance = protocol()
            made = instance.connection_made

            def connection_made(transport: asyncio.BaseTransport) -> None:
                self.transports.add(transport)
                made(transport)

            instance.connection_made = connection_made  # type: ignore[method-assign]
            return instance

        self.server = self.loop.run_until_complete(
            self.loop.create_server(tracked, sock=listener, ssl=context)
        )
        self._thread = threading.Thread(
            target=self.loop.run_forever, name=f"{type(self).__name__}:{self.port}"
        )
        self._thread.start()

    @property
    def address(self) -> str:
        """`host:port`, as a custom endpoint's target."""
        return f"{HOST}:{self.port}"

    def url(self, scheme: str) -> str:
        return f"{scheme}://{HOST}:{self.port}"

    async def _close(self) -> None:
        self.server.close()
        for transport in list(self.transports):
            transport.abort()
        await self.server.wait_closed()
        pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._close(), self.loop).result(STOP_WAIT)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(STOP_WAIT)
        self.loop.close()


class _Banner(asyncio.Protocol):
    """Sends the greeting, answers the n-th line received with the n-th of `replies` (the
    last one again after that; none: silence); `close`: hangs up right after the greeting;
    `reset`: resets the connection at once."""

    def __init__(
        self, greeting: bytes, replies: tuple[bytes, ...], close: bool, reset: bool
    ) -> None:
        self.greeting, self.replies, self.close, self.reset = greeting, replies, close, reset
        self.buffer = b""
        self.answered = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if self.reset:
            # A zero linger makes the close a reset (RST), as a crashing service's would be.
            sock = transport.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            transport.abort()
            return
        if self.greeting:
            transport.write(self.greeting)
        if self.close:
            transport.close()

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while b"\n" in self.buffer:
            _, self.buffer = self.buffer.split(b"\n", 1)
            if self.replies:
                self.transport.write(self.replies[min(self.answered, len(self.replies) - 1)])
                self.answered += 1


class BannerPeer(AsyncioPeer):
    """Greets with `greeting` (nothing: a silent server), then answers each line with the
    next of `replies` (one `bytes`: every line with it); with `close`, hangs up after the
    greeting; with `reset`, resets every connection."""

    def __init__(
        self,
        greeting: bytes = b"",
        replies: bytes | tuple[bytes, ...] = (),
        close: bool = False,
        reset: bool = False,
    ) -> None:
        self.greeting = greeting  # read per connection: a test may change it
        script = (replies,) if isinstance(replies, bytes) else replies
        super().__init__(lambda: _Banner(self.greeting, script, close, reset))


class _Handler:
    """aiosmtpd's handler, with no hooks: its defaults accept everything (the probe never
    sends a message)."""


class SMTPPeer(AsyncioPeer):
    """A real SMTP server (aiosmtpd). `starttls`: a context it offers STARTTLS with;
    `implicit`: a context it speaks TLS with from the first byte (smtps)."""

    def __init__(
        self, starttls: ssl.SSLContext | None = None, implicit: ssl.SSLContext | None = None
    ) -> None:
        super().__init__(
            lambda: SMTP(_Handler(), hostname="mx.example.test", tls_context=starttls),
            context=implicit,
        )
