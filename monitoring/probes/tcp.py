"""TCP: connect; optionally send a text, and expect a text (a banner, or the answer).

What the server sends is read with two bounds: at most `MAX_BANNER_BYTES`, and once it has
started talking, at most `QUIET_SECONDS` of silence. A server that never sends anything runs
into the check's own timeout (a stalled service); one that sends something else and stops
is down at once, with what it sent (masked) as the detail.
"""

import asyncio
from urllib.parse import urlsplit

from monitoring.probes import phrases
from monitoring.probes.base import Outcome, ProbeContext, ProbeFailed, ProbeTask
from monitoring.probes.network import open_socket

MAX_BANNER_BYTES = 4096
QUIET_SECONDS = 1.0
# The expected text as the error names it: enough to recognise, never a page of it.
MAX_EXPECTED_IN_ERROR = 40


def host_port(target: str) -> tuple[str, int]:
    """The host and port of a `scheme://host:port` target (validated: both present)."""
    parts = urlsplit(target)
    return parts.hostname or "", parts.port or 0


def first_line(received: bytes) -> str:
    """The first line of what a server sent, as text, for a status detail."""
    return received.decode(errors="replace").strip().split("\n", 1)[0].strip()[:200]


async def read_until(reader: asyncio.StreamReader, expected: bytes) -> bytes:
    """What the server sends, until `expected` is in it, it hangs up, goes quiet or has
    sent `MAX_BANNER_BYTES`. The first byte is awaited for as long as the check may last."""
    received = await reader.read(MAX_BANNER_BYTES)
    while received and expected not in received and len(received) < MAX_BANNER_BYTES:
        try:
            async with asyncio.timeout(QUIET_SECONDS):
                more = await reader.read(MAX_BANNER_BYTES - len(received))
        except TimeoutError:
            break
        if not more:
            break
        received += more
    return received


def _expected_in_error(expected: str) -> str:
    shown = " ".join(expected.split())
    if len(shown) > MAX_EXPECTED_IN_ERROR:
        shown = shown[: MAX_EXPECTED_IN_ERROR - 1] + "…"
    return shown


async def probe(task: ProbeTask, context: ProbeContext) -> Outcome:
    """Connect; send `send`; read until `expect` appears (when one is set)."""
    host, port = host_port(task.target)
    sock = await open_socket(host, port)
    reader, writer = await asyncio.open_connection(sock=sock, limit=MAX_BANNER_BYTES)
    send, expect = task.config.get("send", ""), task.config.get("expect", "")
    try:
        if send:
            writer.write(send.encode())
            await writer.drain()
        if not expect:
            return Outcome("connected")
        received = await read_until(reader, expect.encode())
    finally:
        writer.close()
    if expect.encode() not in received:
        text = received.decode(errors="replace")
        detail = f"received: {text}" if text else "the server sent nothing and closed"
        error = phrases.EXPECTED_NOT_RECEIVED.format(expected=_expected_in_error(expect))
        raise ProbeFailed(error, first_line(received), detail=detail)
    return Outcome(first_line(received) or "expected text received")
