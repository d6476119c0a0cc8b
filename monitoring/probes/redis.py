"""Redis: AUTH and SELECT as the URL says, then PING, expecting PONG (`rediss://`: TLS).

The exchange is three RESP commands, spoken here on a socket opened through the network
policy, reading at most one short line per reply: a client library would read whatever
bulk length the server announces (a hostile target could send 300 MB for a PING).
"""

import asyncio
import ssl
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlsplit

from monitoring.probes import phrases
from monitoring.probes.base import (
    MAX_RAW_TEXT,
    Outcome,
    ProbeContext,
    ProbeFailed,
    ProbeTask,
    task_tls_context,
    tls_context,
)
from monitoring.probes.certificates import peer_certificate
from monitoring.probes.network import open_socket

MAX_REPLY_LINE = 4096


@dataclass(frozen=True)
class _Login:
    host: str
    port: int
    username: str
    password: str
    database: int
    tls: bool
    verify_tls: bool


def _login(task: ProbeTask) -> _Login:
    parts = urlsplit(task.target)
    query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    verify = bool(task.config.get("verify_tls", True)) and query.get("ssl_cert_reqs") != "none"
    return _Login(
        host=parts.hostname or "localhost",
        port=parts.port or 6379,
        username=unquote(parts.username or ""),
        password=query.get("password") or unquote(parts.password or ""),
        database=int(parts.path.strip("/") or 0),
        tls=parts.scheme == "rediss",
        verify_tls=verify,
    )


def _tls(task: ProbeTask, login: _Login) -> ssl.SSLContext | None:
    if not login.tls:
        return None
    if not login.verify_tls:
        return tls_context(verify=False)
    return task_tls_context(task)


def command(*words: str) -> bytes:
    """A RESP array of bulk strings."""
    encoded = [word.encode() for word in words]
    return b"*%d\r\n" % len(encoded) + b"".join(
        b"$%d\r\n%s\r\n" % (len(word), word) for word in encoded
    )


async def _reply(reader: asyncio.StreamReader) -> bytes:
    """One reply line, without its CRLF; a longer line is not a reply to these commands."""
    try:
        line = await reader.readuntil(b"\r\n")
    except asyncio.LimitOverrunError as exc:
        detail = f"a reply line longer than {MAX_REPLY_LINE} bytes"
        raise ProbeFailed(phrases.UNEXPECTED_REPLY, detail=detail) from exc
    except asyncio.IncompleteReadError as exc:
        raise ProbeFailed(phrases.CLOSED, detail="the server closed the connection") from exc
    return line[:-2]


def _error_phrase(reply: str, failure: str) -> str:
    """The phrase for an error reply (`-ERR ...`, `-NOAUTH ...`, `-WRONGPASS ...`)."""
    word = reply.split(" ", 1)[0].upper()
    if word == "NOAUTH":
        return phrases.AUTH_REQUIRED
    if word == "WRONGPASS" or failure == phrases.AUTH_FAILED:
        return phrases.AUTH_FAILED
    return failure or phrases.UNEXPECTED_REPLY


async def _expect(reader: asyncio.StreamReader, wanted: bytes, failure: str) -> None:
    reply = await _reply(reader)
    text = reply.decode(errors="replace")
    if reply.startswith(b"-"):
        raise ProbeFailed(_error_phrase(text[1:], failure), detail=text[1:])
    if reply != wanted:
        detail = f"expected {wanted.decode()}, got {text}"
        raise ProbeFailed(phrases.UNEXPECTED_REPLY, text[:MAX_RAW_TEXT], detail=detail)


async def probe(task: ProbeTask, context: ProbeContext) -> Outcome:
    """Connect, AUTH (when the URL has a password), SELECT (when not db 0), PING."""
    login = _login(task)
    sock = await open_socket(login.host, login.port)
    reader, writer = await asyncio.open_connection(
        sock=sock,
        ssl=_tls(task, login),
        server_hostname=login.host if login.tls else None,
        limit=MAX_REPLY_LINE,
    )
    certificate = peer_certificate(writer.get_extra_info("ssl_object"))
    try:
        steps: list[tuple[bytes, bytes, str]] = []
        if login.password:
            auth = [login.username, login.password] if login.username else [login.password]
            steps.append((command("AUTH", *auth), b"+OK", phrases.AUTH_FAILED))
        if login.database:
            steps.append((command("SELECT", str(login.database)), b"+OK", phrases.NO_DATABASE))
        steps.append((command("PING"), b"+PONG", ""))
        writer.write(b"".join(step for step, _, _ in steps))  # pipelined: one round trip
        await writer.drain()
        for _, wanted, failure in steps:
            await _expect(reader, wanted, failure)
    except ProbeFailed as exc:
        exc.certificate = certificate
        raise
    finally:
        writer.close()
    return Outcome("PONG", certificate=certificate)
