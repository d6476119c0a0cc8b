"""Elasticsearch: GET /_cluster/health; up when the status is at least the minimum."""

import json
import time

from monitoring.probes import assertions, phrases
from monitoring.probes.base import MAX_RAW_TEXT, Outcome, ProbeContext, ProbeFailed, ProbeTask
from monitoring.probes.http import fetch, read_body, unexpected_status

_RANK = {"red": 0, "yellow": 1, "green": 2}


def health_url(target: str) -> str:
    """The cluster health URL under the target's base path (proxies may add a prefix)."""
    base, _, query = target.partition("?")
    return f"{base.rstrip('/')}/_cluster/health" + (f"?{query}" if query else "")


def _what_is_wrong(exc: Exception) -> str:
    """What is wrong with the body, in words of the probe's own: Python's messages would
    quote the body."""
    if isinstance(exc, json.JSONDecodeError):
        return "the body is not JSON"
    if isinstance(exc, KeyError):
        return f"no {exc.args[0]!r} in the body"  # one of the probe's own keys
    return "the body is not a cluster health object"


async def probe(task: ProbeTask, context: ProbeContext) -> Outcome:
    """Read the cluster status and node count; compare with `min_status` (yellow), then
    check the assertions."""
    started = time.perf_counter()
    minimum = task.config.get("min_status", "yellow")
    async with fetch(context, task, "GET", health_url(task.target)) as response:
        if response.status != 200:
            raise unexpected_status(response)
        body = await read_body(response)
        seen = assertions.response_of(response, body, started)
        try:
            health = json.loads(body)
            status, nodes = health["status"], int(health["number_of_nodes"])
        except (ValueError, KeyError, TypeError) as exc:
            raise ProbeFailed(phrases.NOT_CLUSTER_HEALTH, detail=_what_is_wrong(exc)) from exc
    if status not in _RANK:
        shown = f"status {str(status)[:MAX_RAW_TEXT]!r}"  # masked, then cut, by the runner
        raise ProbeFailed(phrases.UNKNOWN_CLUSTER_STATUS, detail=shown)
    detail = f"cluster {status}, {nodes} node{'s' if nodes != 1 else ''}"
    if _RANK[status] < _RANK[minimum]:
        error = phrases.CLUSTER_BELOW_MINIMUM.format(status=status, minimum=minimum)
        raise ProbeFailed(error, detail)
    await assertions.check(task, context, seen)
    return Outcome(detail)
