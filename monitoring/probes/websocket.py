"""WebSocket: a protocol ping answered by a pong, or a text message and its reply."""

from urllib.parse import urlsplit

import websockets
from websockets.asyncio.client import connect

from monitoring.probes.base import (
    MAX_BODY_BYTES,
    Outcome,
    ProbeContext,
    ProbeFailed,
    ProbeTask,
    tls_context,
)
from monitoring.probes.network import open_socket


async def probe(task: ProbeTask, context: ProbeContext) -> Outcome:
    """Open the WebSocket, then ping (default) or send `send` and match `expect`."""
    parts = urlsplit(task.target)
    secure = parts.scheme == "wss"
    host, port = parts.hostname or "", parts.port or (443 if secure else 80)
    sock = await open_socket(host, port)
    tls = tls_context(task.config.get("verify_tls", True)) if secure else None
    try:
        async with connect(
            task.target,
            sock=sock,
            proxy=None,
            open_timeout=None,  # the probe's own timeout covers the whole exchange
            ping_interval=None,
            close_timeout=1,
            max_size=MAX_BODY_BYTES,
            additional_headers=task.config.get("headers") or {},
            ssl=tls,
        ) as websocket:
            return await _exchange(websocket, task.config.get("send", ""), task.config)
    except websockets.InvalidStatus as exc:
        status = exc.response.status_code
        raise ProbeFailed(f"handshake refused with HTTP {status}", f"HTTP {status}") from exc
    except websockets.InvalidHandshake as exc:
        raise ProbeFailed(f"handshake failed: {str(exc)[:200]}") from exc
    except websockets.ConnectionClosed as exc:
        raise ProbeFailed("the server closed the connection") from exc
    except ValueError as exc:
        if "redirect" not in str(exc):
            raise
        # websockets cannot follow a redirect over a socket it was given: say so, without
        # echoing the Location (a URL of the server's choosing).
        raise ProbeFailed("the server redirects; WebSocket redirects are not followed") from exc
    finally:
        sock.close()


async def _exchange(websocket: websockets.ClientConnection, send: str, config: dict) -> Outcome:
    if not send:
        await (await websocket.ping())
        return Outcome("pong")
    await websocket.send(send)
    reply = await websocket.recv()
    text = reply if isinstance(reply, str) else reply.decode(errors="replace")
    expected = config.get("expect", "")
    if expected and expected not in text:
        raise ProbeFailed("unexpected reply", text[:50])
    return Outcome("reply matched" if expected else "reply received")
