"""HTTP(S): a request to the health URL, judged by status, body text and speed."""

import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
from yarl import URL

from monitoring.probes import assertions, phrases
from monitoring.probes.base import (
    MAX_BODY_BYTES,
    Outcome,
    ProbeContext,
    ProbeFailed,
    ProbeTask,
    request_headers,
    task_tls_context,
)
from monitoring.targets import is_secret_name

MAX_REDIRECTS = 5
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


async def read_body(response: aiohttp.ClientResponse, limit: int = MAX_BODY_BYTES) -> bytes:
    """At most `limit` bytes of the body: the rest is never read."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(65_536):
        chunks.append(chunk)
        size += len(chunk)
        if size >= limit:
            break
    return b"".join(chunks)[:limit]


def unexpected_status(response: aiohttp.ClientResponse) -> ProbeFailed:
    """The failure for a status the check does not expect: `HTTP 503`."""
    status = f"HTTP {response.status}"
    return ProbeFailed(phrases.HTTP_STATUS.format(status=response.status), status)


def _next_hop(response: aiohttp.ClientResponse, method: str) -> tuple[URL, str]:
    try:
        url = response.url.join(URL(response.headers["Location"]))
    except ValueError as exc:
        # the Location is the server's text: not quoted, it may hold what it was sent
        detail = "the redirect's Location is not a valid URL"
        raise ProbeFailed(
            phrases.INVALID_RESPONSE, f"HTTP {response.status}", detail=detail
        ) from exc
    if url.scheme not in ("http", "https"):
        # the Location is the server's choice of text: the detail names its scheme only
        detail = f"Location scheme {url.scheme[:20]!r}"
        raise ProbeFailed(phrases.REDIRECT_NOT_HTTP, f"HTTP {response.status}", detail=detail)
    if response.status == 303 or (response.status in (301, 302) and method == "POST"):
        method = "GET"  # what browsers and every HTTP client do
    return url, method


@contextlib.asynccontextmanager
async def fetch(
    context: ProbeContext,
    task: ProbeTask,
    method: str,
    url: str,
    headers: dict[str, str] | None = None,
    **options: Any,
) -> AsyncIterator[aiohttp.ClientResponse]:
    """The response to a request, after at most MAX_REDIRECTS redirects (when followed).

    Redirects are followed here rather than by aiohttp, which keeps custom headers on a hop
    to another origin: secret ones (API keys, tokens) go only to the target's own origin.
    Each hop connects through the network policy like the first.
    """
    headers = request_headers(task, headers, task.config.get("headers"))
    follow = task.config.get("follow_redirects", True)
    ssl = task_tls_context(task)  # notes the handshakes: the runner reads the certificate
    origin, target = URL(url).origin(), URL(url)
    for _ in range(MAX_REDIRECTS + 1):
        response = await context.http.request(
            method, target, headers=headers, ssl=ssl, allow_redirects=False, **options
        )
        if not (follow and response.status in _REDIRECTS and "Location" in response.headers):
            try:
                yield response
            finally:
                response.release()
            return
        response.release()
        target, next_method = _next_hop(response, method)
        if next_method != method:
            method, options = next_method, {k: v for k, v in options.items() if k != "json"}
        if target.origin() != origin:
            headers = {k: v for k, v in headers.items() if not is_secret_name(k)}
    raise ProbeFailed(phrases.TOO_MANY_REDIRECTS, detail=f"more than {MAX_REDIRECTS} redirects")


async def probe(task: ProbeTask, context: ProbeContext) -> Outcome:
    """Request the URL; up when the status is expected, the body holds the text and every
    assertion holds."""
    started = time.perf_counter()
    config = task.config
    method = config.get("method", "GET")
    async with fetch(context, task, method, task.target) as response:
        detail = f"HTTP {response.status}"
        if response.status not in config.get("expected_status", [200]):
            raise unexpected_status(response)
        expected = config.get("body_contains", "")
        body = None
        if (expected or assertions.needs_body(config)) and method != "HEAD":
            body = await read_body(response)
        if expected and body is not None and expected.encode() not in body:
            raise ProbeFailed(
                phrases.UNEXPECTED_BODY, detail, detail="expected text not found in the body"
            )
        seen = assertions.response_of(response, body, started)
    await assertions.check(task, context, seen)
    return Outcome(detail)
