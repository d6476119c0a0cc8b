"""WebSocket: a protocol ping answered by a pong, or a text message and its reply."""

from dataclasses import replace
from urllib.parse import urlsplit

import websockets
from websockets.asyncio.client import connect

from monitoring.probes import phrases
from monitoring.probes.base import (
    MAX_BODY_BYTES,
    MAX_RAW_TEXT,
    Outcome,
    ProbeContext,
    ProbeFailed,
    ProbeTask,
    raw_text,
    request_headers,
    task_tls_context,
)
from monitoring.probes.certificates import peer_certificate
from monitoring.probes.network import open_socket


async def probe(task: ProbeTask, context: ProbeContext) -> Outcome:
    """Open the WebSocket, then ping (default) or send `send` and match `expect`."""
    parts = urlsplit(task.target)
    secure = parts.scheme == "wss"
    host, port = parts.hostname or "", parts.port or (443 if secure else 80)
    sock = await open_socket(host, port)
    tls = task_tls_context(task) if secure else None
    try:
        async with connect(
            task.target,
            sock=sock,
            proxy=None,
            open_timeout=None,  # the probe's own timeout covers the whole exchange
            ping_interval=None,
            close_timeout=1,
            max_size=MAX_BODY_BYTES,
            additional_headers=request_headers(task, task.config.get("headers")),
            ssl=tls,
        ) as websocket:
            certificate = peer_certificate(websocket.transport.get_extra_info("ssl_object"))
            outcome = await _exchange(websocket, task.config.get("send", ""), task.config)
            return replace(outcome, certificate=certificate)
    except websockets.InvalidStatus as exc:
        status = exc.response.status_code
        error, detail = phrases.HTTP_STATUS.format(status=status), "the handshake was refused"
        raise ProbeFailed(error, f"HTTP {status}", detail=detail) from exc
    except websockets.InvalidHandshake as exc:
        raise ProbeFailed(phrases.HANDSHAKE_FAILED, detail=raw_text(exc)) from exc
    except websockets.ConnectionClosed as exc:
        raise ProbeFailed(phrases.CLOSED, detail=raw_text(exc)) from exc
    except ValueError as exc:
        if "redirect" not in str(exc):
            raise
        # websockets cannot follow a redirect over a socket it was given: say so, without
        # echoing the Location (a URL of the server's choosing).
        detail = "the server redirects; WebSocket redirects are not followed"
        raise ProbeFailed(phrases.REDIRECT_NOT_FOLLOWED, detail=detail) from exc
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
        detail = f"reply: {text[:MAX_RAW_TEXT]}"
        raise ProbeFailed(phrases.UNEXPECTED_REPLY, text[:MAX_RAW_TEXT], detail=detail)
    return Outcome("reply matched" if expected else "reply received")
