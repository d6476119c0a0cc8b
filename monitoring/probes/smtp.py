"""SMTP: the greeting, EHLO, STARTTLS when offered or required (then EHLO again), QUIT.

Spoken here over asyncio streams on a socket opened through the network policy, as the
Redis probe does, rather than with a client library: the exchange is four commands, and
each reply is read with bounds (line length, line count) a hostile server cannot stretch.
`smtps://` is TLS from the first byte (port 465); `smtp://` upgrades with STARTTLS.
"""

import asyncio
import contextlib
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

from monitoring.probes import phrases
from monitoring.probes.base import (
    MAX_RAW_TEXT,
    Outcome,
    ProbeContext,
    ProbeFailed,
    ProbeTask,
    task_tls_context,
)
from monitoring.probes.certificates import peer_certificate
from monitoring.probes.network import open_socket

MAX_LINE = 4096
MAX_LINES = 100  # an EHLO answer lists a dozen extensions; a hundred is a server babbling
QUIT_WAIT = 0.5  # the goodbye is a courtesy: its answer is not waited for long
_PORTS = {"smtp": 25, "smtps": 465}


@dataclass(frozen=True)
class Reply:
    """One SMTP reply: its code and its lines' texts."""

    code: int
    lines: tuple[str, ...]

    @property
    def text(self) -> str:
        return " ".join(self.lines)


def _parse_line(line: bytes) -> tuple[int, bool, str]:
    """A reply line's code, whether more lines follow (`250-`), and its text."""
    text = line.decode(errors="replace").rstrip("\r\n")
    if len(text) < 3 or not text[:3].isdigit() or text[3:4] not in ("", " ", "-"):
        raise ProbeFailed(phrases.PROTOCOL_ERROR, detail=f"not an SMTP reply: {text[:200]}")
    return int(text[:3]), text[3:4] == "-", text[4:]


async def read_reply(reader: asyncio.StreamReader) -> Reply:
    """One reply, all its lines."""
    lines: list[str] = []
    for _ in range(MAX_LINES):
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.LimitOverrunError as exc:
            detail = f"a reply line longer than {MAX_LINE} bytes"
            raise ProbeFailed(phrases.PROTOCOL_ERROR, detail=detail) from exc
        except asyncio.IncompleteReadError as exc:
            text = exc.partial.decode(errors="replace")[:MAX_RAW_TEXT]
            detail = f"the server closed the connection; received: {text}"
            raise ProbeFailed(phrases.CLOSED, detail=detail) from exc
        code, more, text = _parse_line(line)
        lines.append(text)
        if not more:
            return Reply(code, tuple(lines))
    raise ProbeFailed(phrases.PROTOCOL_ERROR, detail=f"a reply of more than {MAX_LINES} lines")


def _expect(reply: Reply, step: str, wanted: int) -> Reply:
    if reply.code != wanted and not (wanted == 250 and 200 <= reply.code < 300):
        detail = f"{step}: {reply.code} {reply.text}"[:MAX_RAW_TEXT]
        raise ProbeFailed(phrases.SMTP_REPLY.format(code=reply.code), detail=detail)
    return reply


class _Session:
    """The client side of one SMTP conversation."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    async def command(self, line: str, wanted: int) -> Reply:
        self.writer.write(f"{line}\r\n".encode())
        await self.writer.drain()
        return _expect(await read_reply(self.reader), line.split(" ", 1)[0], wanted)

    async def ehlo(self) -> set[str]:
        """EHLO with our address literal (RFC 5321 4.1.3); the extension keywords."""
        address = self.writer.get_extra_info("sockname")[0]
        literal = f"[IPv6:{address}]" if ":" in address else f"[{address}]"
        reply = await self.command(f"EHLO {literal}", 250)
        return {line.split(" ", 1)[0].upper() for line in reply.lines[1:]}

    async def quit(self) -> None:
        """Say goodbye, without waiting long for the answer (nothing depends on it)."""
        with contextlib.suppress(OSError, ProbeFailed, TimeoutError):
            async with asyncio.timeout(QUIT_WAIT):
                await self.command("QUIT", 221)


async def probe(task: ProbeTask, context: ProbeContext) -> Outcome:
    """Greeting (2xx), EHLO, STARTTLS when offered or required, EHLO again, QUIT."""
    parts = urlsplit(task.target)
    host, implicit_tls = parts.hostname or "", parts.scheme == "smtps"
    tls = task_tls_context(task)  # verify_tls, and ca_certificate trusted besides
    sock = await open_socket(host, parts.port or _PORTS[parts.scheme])
    reader, writer = await asyncio.open_connection(
        sock=sock,
        ssl=tls if implicit_tls else None,
        server_hostname=host if implicit_tls else None,
        limit=MAX_LINE,
    )
    session = _Session(reader, writer)
    try:
        greeting = await read_reply(reader)
        _expect(greeting, "greeting", 250)  # any 2xx; 554 is "no service here"
        extensions = await session.ehlo()
        if not implicit_tls:
            await _starttls(session, extensions, host, tls, bool(task.config.get("starttls")))
        ssl_object = writer.get_extra_info("ssl_object")
        await session.quit()
        await _hang_up(writer)
    except BaseException:
        writer.transport.abort()  # a failed or cancelled check owes the server no goodbye
        raise
    secured = "; TLS" if ssl_object is not None else ""
    return Outcome(
        f"{greeting.code} {greeting.lines[0]}"[:150] + secured,
        certificate=peer_certificate(ssl_object),
    )


async def _hang_up(writer: asyncio.StreamWriter) -> None:
    """Close, waiting briefly for the socket to be closed: over TLS, closing waits for the
    server's close_notify, which must not outlive the batch's event loop (a socket left
    open there is never closed)."""
    writer.close()
    try:
        async with asyncio.timeout(QUIT_WAIT):
            await writer.wait_closed()
    except (TimeoutError, OSError, ssl.SSLError):
        writer.transport.abort()


async def _starttls(
    session: _Session, extensions: set[str], host: str, tls: ssl.SSLContext, required: bool
) -> None:
    """Upgrade to TLS when the server offers it; refuse a server that does not when asked."""
    if "STARTTLS" not in extensions:
        if required:
            offered = ", ".join(sorted(extensions)) or "no extensions"
            raise ProbeFailed(phrases.STARTTLS_NOT_OFFERED, detail=f"EHLO offered: {offered}")
        return
    await session.command("STARTTLS", 220)
    await session.writer.start_tls(tls, server_hostname=host)
    await session.ehlo()
