"""Elasticsearch: GET /_cluster/health; up when the status is at least the minimum."""

import json

from monitoring.probes.base import Outcome, ProbeContext, ProbeFailed, ProbeTask
from monitoring.probes.http import fetch, read_body

_RANK = {"red": 0, "yellow": 1, "green": 2}


def health_url(target: str) -> str:
    """The cluster health URL under the target's base path (proxies may add a prefix)."""
    base, _, query = target.partition("?")
    return f"{base.rstrip('/')}/_cluster/health" + (f"?{query}" if query else "")


async def probe(task: ProbeTask, context: ProbeContext) -> Outcome:
    """Read the cluster status and node count; compare with `min_status` (yellow)."""
    minimum = task.config.get("min_status", "yellow")
    async with fetch(context, task, "GET", health_url(task.target)) as response:
        if response.status != 200:
            raise ProbeFailed(f"unexpected status {response.status}", f"HTTP {response.status}")
        try:
            health = json.loads(await read_body(response))
            status, nodes = health["status"], int(health["number_of_nodes"])
        except (ValueError, KeyError, TypeError) as exc:
            raise ProbeFailed("the response is not cluster health JSON") from exc
    if status not in _RANK:
        raise ProbeFailed(f"unknown cluster status {str(status)[:20]!r}")
    detail = f"cluster {status}, {nodes} node{'s' if nodes != 1 else ''}"
    if _RANK[status] < _RANK[minimum]:
        raise ProbeFailed(f"cluster status {status} (minimum {minimum})", detail)
    return Outcome(detail)
