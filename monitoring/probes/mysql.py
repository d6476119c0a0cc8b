"""MySQL and MariaDB: connect and run SELECT 1.

PyMySQL runs in a thread on a socket this module opened and checked against the network
policy: no async MySQL driver accepts a socket it did not open itself.
"""

import asyncio
import contextlib
import socket
import ssl
import time
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlsplit

import pymysql

from monitoring.probes import phrases
from monitoring.probes.base import (
    MAX_RAW_TEXT,
    Outcome,
    ProbeContext,
    ProbeFailed,
    ProbeTask,
    raw_text,
    task_tls_context,
)
from monitoring.probes.network import open_socket

_TLS_MODES = {"required", "verify_ca", "verify_identity", "true", "1"}


@dataclass(frozen=True)
class _Login:
    host: str
    port: int
    user: str
    password: str
    database: str | None
    tls: bool


def _login(target: str) -> _Login:
    parts = urlsplit(target)
    query = {k.lower(): v[-1] for k, v in parse_qs(parts.query).items()}
    tls_option = (query.get("ssl_mode") or query.get("ssl") or "").lower()
    password = query.get("password") or unquote(parts.password or "")
    return _Login(
        host=parts.hostname or "localhost",
        port=parts.port or 3306,
        user=unquote(parts.username or "root"),
        password=password,
        database=unquote(parts.path.lstrip("/")) or None,
        tls=tls_option in _TLS_MODES,
    )


def _select_one(sock: socket.socket, login: _Login, tls: ssl.SSLContext, deadline: float) -> None:
    sock.setblocking(True)
    sock.settimeout(max(0.1, deadline - time.monotonic()))
    connection = pymysql.Connection(
        host=login.host,
        port=login.port,
        user=login.user,
        password=login.password,
        database=login.database,
        ssl=tls if login.tls else None,
        defer_connect=True,
        connect_timeout=max(1, deadline - time.monotonic()),
    )
    try:
        connection.connect(sock=sock)
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            row = cursor.fetchone()
    finally:
        connection.close() if connection.open else sock.close()
    if row != (1,):
        raise ProbeFailed(phrases.WRONG_ANSWER, detail=f"the answer was {str(row)[:MAX_RAW_TEXT]}")


async def probe(task: ProbeTask, context: ProbeContext) -> Outcome:
    """Connect as the target's user and check that SELECT 1 answers 1."""
    login = _login(task.target)
    deadline = time.monotonic() + task.timeout
    sock = await open_socket(login.host, login.port)
    try:
        await context.in_thread(_select_one, sock, login, task_tls_context(task), deadline)
    except pymysql.err.MySQLError as exc:
        raise ProbeFailed(phrase(exc), detail=raw(exc)) from exc
    except asyncio.CancelledError:
        # The check timed out: wake the thread blocked on this socket, so that it ends now
        # instead of holding a thread per slow server for as long as the server likes.
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        raise
    return Outcome("SELECT 1")


# Server and client error codes (MySQL's `ER_*` and `CR_*`, the same in MariaDB).
_CODES = {
    1044: phrases.AUTH_FAILED,  # access denied to the database
    1045: phrases.AUTH_FAILED,  # access denied (password)
    1698: phrases.AUTH_FAILED,  # access denied (no password for a socket-auth account)
    1130: phrases.AUTH_FAILED,  # this host may not connect
    1049: phrases.NO_DATABASE,
    1040: phrases.TOO_MANY_CONNECTIONS,
    1203: phrases.TOO_MANY_CONNECTIONS,  # the account's max_user_connections
    1053: phrases.NOT_ACCEPTING,  # shutting down
    2013: phrases.CLOSED,  # lost connection
    2006: phrases.CLOSED,  # server has gone away
}
_CR_SSL_CONNECTION_ERROR = 2026


def phrase(exc: pymysql.err.MySQLError) -> str:
    """The phrase for a PyMySQL error: by its code, or a protocol error when it has none."""
    if not (len(exc.args) >= 2 and isinstance(exc.args[0], int)):
        return phrases.PROTOCOL_ERROR  # PyMySQL's own complaint about what it read
    code, message = exc.args[0], str(exc.args[1]).lower()
    if code == _CR_SSL_CONNECTION_ERROR:
        return phrases.TLS_NOT_SUPPORTED if "support" in message else phrases.TLS_FAILED
    if code in _CODES:
        return _CODES[code]
    return phrases.SERVER_ERROR if code < 2000 else phrases.CONNECTION_FAILED


def raw(exc: pymysql.err.MySQLError) -> str:
    """The error's code and message, as the mysql client shows them."""
    if len(exc.args) >= 2 and isinstance(exc.args[0], int):
        return f"ERROR {exc.args[0]}: {exc.args[1]}"
    return raw_text(exc)
