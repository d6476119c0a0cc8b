"""Redis: PING, expecting PONG (AUTH and database from the URL, TLS for rediss://)."""

import socket
from collections.abc import Mapping
from typing import Any

from redis import exceptions
from redis.asyncio.connection import Connection, parse_url

from monitoring.probes.base import (
    Outcome,
    ProbeContext,
    ProbeFailed,
    ProbeTask,
    describe_error,
    tls_context,
)
from monitoring.probes.network import open_socket


class PinnedConnection(Connection):
    """A redis-py connection over a socket opened through the network policy."""

    def __init__(self, *, tls: bool, verify_tls: bool, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._tls, self._verify_tls = tls, verify_tls
        self._sock: socket.socket | None = None

    async def _connect(self) -> None:
        self._sock = await open_socket(self.host, self.port)
        await super()._connect()

    def _connection_arguments(self) -> Mapping[str, Any]:
        if not self._tls:
            return {"sock": self._sock}
        return {
            "sock": self._sock,
            "ssl": tls_context(self._verify_tls),
            "server_hostname": self.host,
        }


def _connection(task: ProbeTask) -> PinnedConnection:
    options: dict[str, Any] = dict(parse_url(task.target))
    tls = task.target.startswith("rediss://")
    verify = task.config.get("verify_tls", True) and options.get("ssl_cert_reqs") != "none"
    for name in ("connection_class", "ssl_cert_reqs"):
        options.pop(name, None)
    # RESP2 unless the URL asks for 3: every server since Redis 1 speaks it, and a plain AUTH
    # is refused by a server with no password where HELLO's AUTH would pass unnoticed.
    options["protocol"] = int(options.get("protocol") or 2)
    return PinnedConnection(
        tls=tls,
        verify_tls=bool(verify),
        socket_timeout=task.timeout,
        socket_connect_timeout=task.timeout,
        driver_info=None,  # no CLIENT SETINFO: one PING is the whole exchange
        retry_on_error=[],
        **options,
    )


async def probe(task: ProbeTask, context: ProbeContext) -> Outcome:
    """Connect (AUTH, SELECT as the URL says) and PING."""
    connection = _connection(task)
    try:
        await connection.connect()
        await connection.send_command("PING")
        reply = await connection.read_response()
    except exceptions.AuthenticationError as exc:
        raise ProbeFailed("authentication failed") from exc
    except exceptions.ResponseError as exc:
        raise ProbeFailed(f"unexpected reply: {str(exc)[:200]}") from exc
    except exceptions.ConnectionError as exc:
        raise ProbeFailed(describe_error(exc)) from exc
    finally:
        await connection.disconnect()
    if reply not in (b"PONG", "PONG"):
        raise ProbeFailed("unexpected reply to PING", str(reply)[:50])
    return Outcome("PONG")
