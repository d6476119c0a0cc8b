"""HTTP(S): a request to the health URL, judged by status, body text and speed."""

from typing import Any

import aiohttp

from monitoring.probes.base import MAX_BODY_BYTES, Outcome, ProbeContext, ProbeFailed, ProbeTask

MAX_REDIRECTS = 5


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


def request_options(task: ProbeTask) -> dict[str, Any]:
    """The aiohttp options every HTTP-based probe shares."""
    return {
        "headers": task.config.get("headers") or {},
        "ssl": bool(task.config.get("verify_tls", True)),
        "allow_redirects": task.config.get("follow_redirects", True),
        # aiohttp raises on reaching max_redirects: this allows exactly MAX_REDIRECTS hops.
        "max_redirects": MAX_REDIRECTS + 1,
    }


async def probe(task: ProbeTask, context: ProbeContext) -> Outcome:
    """Request the URL; up when the status is expected and the body holds the text."""
    config = task.config
    method = config.get("method", "GET")
    try:
        async with context.http.request(method, task.target, **request_options(task)) as response:
            detail = f"HTTP {response.status}"
            if response.status not in config.get("expected_status", [200]):
                raise ProbeFailed(f"unexpected status {response.status}", detail)
            expected = config.get("body_contains", "")
            if expected and method != "HEAD":
                body = await read_body(response)
                if expected.encode() not in body:
                    raise ProbeFailed("expected text not found in the body", detail)
            return Outcome(detail)
    except aiohttp.TooManyRedirects as exc:
        raise ProbeFailed(f"more than {MAX_REDIRECTS} redirects") from exc
